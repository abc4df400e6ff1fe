"""End a finished command-line process without the interpreter's teardown.

A fast-path command (``dsh-memory status``, ``dsh-knowledge retrieve``, ...) has loaded some
two hundred modules; Python's shutdown then frees every one of them, object by object,
which costs ~8 ms on a small machine - more than a git process, for nothing the user sees.
Once the command has printed its answer and closed what it opened (the commands close
their SQLite stores and files themselves), :func:`exit_now` flushes stdout and stderr and
leaves with ``os._exit``.

The launchers also switch the cyclic garbage collector off for the fast path: importing
~130 modules triggers some twenty collections (~2 ms) that find nothing, and a read command
makes no cyclic garbage worth collecting (a run of ``status``, ``search`` or ``context``
leaves the same ~400 unreachable objects, all from module import). A command that falls
back to the parser switches it on again.

The ordinary ``sys.exit`` runs instead when flushing fails (a closed pipe: the process
reports it exactly as before) or when anything registered an ``atexit`` handler (coverage
measuring subprocesses, ``logging``): those handlers must run.
"""

from __future__ import annotations

import atexit
import os
import sys
from typing import NoReturn


def exit_now(code: int) -> NoReturn:
    """Flush the standard streams and end the process with ``code``, skipping teardown."""
    # ``_ncallbacks`` is CPython's; elsewhere nothing tells, so the ordinary exit runs.
    registered = getattr(atexit, "_ncallbacks", None)
    if registered is None or registered():
        sys.exit(code)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        sys.exit(code)  # the ordinary exit reports the broken stream as it always has
    os._exit(code)
