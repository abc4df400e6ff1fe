"""Who may talk to the settings page: the rules, without any web framework.

The page controls a person's memory (it can delete it), and any web page that person visits
can make their browser send requests to ``127.0.0.1``. So, as Jupyter does, every launch
makes a random token and every API call must present it; on top of that:

- **Host** must name this server (``127.0.0.1:<port>`` or ``localhost:<port>``). A DNS
  rebinding attack points an attacker's host name at 127.0.0.1: the browser then calls us
  "same-origin" but still sends the attacker's name as Host, which we refuse.
- **Origin**, when a browser sends one (it always does on a POST), must be this server's
  own origin; ``Sec-Fetch-Site: cross-site`` is refused too. Clients without a browser
  (curl, tests) send neither and are judged by the token alone.
- The token travels in the ``X-DSH-Token`` header, never in a cookie: a cookie would be
  attached to a forged cross-site request automatically, a custom header cannot be (it
  needs a CORS preflight we never grant). The printed URL carries it in the fragment
  (``#token=``), which browsers never send to a server, so it reaches no log or Referer;
  the page keeps it in ``sessionStorage`` for reloads of the same tab.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Mapping

TOKEN_HEADER = "x-dsh-token"  # noqa: S105 - a header name, not a secret

#: Sent with every response, page and API alike.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS: tuple[tuple[str, str], ...] = (
    ("cache-control", "no-store"),
    ("content-security-policy", CONTENT_SECURITY_POLICY),
    ("x-frame-options", "DENY"),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    ("cross-origin-opener-policy", "same-origin"),
    ("cross-origin-resource-policy", "same-origin"),
)


def new_token() -> str:
    """A fresh per-launch secret (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


class RequestGuard:
    """The checks for one running server (its port and token are fixed at start)."""

    def __init__(self, port: int, token: str) -> None:
        self.port = port
        self.token = token
        self.allowed_hosts = frozenset({f"127.0.0.1:{port}", f"localhost:{port}"})
        self.allowed_origins = frozenset(f"http://{host}" for host in self.allowed_hosts)

    def host_allowed(self, headers: Mapping[str, str]) -> bool:
        """The Host header names this server (DNS rebinding defence); checked for every request."""
        return headers.get("host", "").lower() in self.allowed_hosts

    def origin_allowed(self, headers: Mapping[str, str]) -> bool:
        """A browser's Origin / Sec-Fetch-Site say the request comes from our own page."""
        origin = headers.get("origin")
        if origin is not None and origin.lower() not in self.allowed_origins:
            return False  # includes the opaque "null" origin of sandboxed frames and files
        return headers.get("sec-fetch-site", "same-origin") in {"same-origin", "none"}

    def token_valid(self, headers: Mapping[str, str]) -> bool:
        given = headers.get(TOKEN_HEADER, "")
        # Constant-time: the comparison must not tell how much of a guess was right.
        return hmac.compare_digest(given.encode("utf-8"), self.token.encode("utf-8"))

    def page_url(self, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}/#token={self.token}"
