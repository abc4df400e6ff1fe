"""The local settings page (``dsh-memory ui``): a loopback-only page over the ``memory`` API.

``security`` holds the request rules (token, Host, Origin, headers) with no web framework
import; ``server`` builds the Starlette app and runs it under uvicorn (the ``[ui]`` extra);
``static/`` is the page itself (HTML, one script, one stylesheet; no build step).
"""

from __future__ import annotations
