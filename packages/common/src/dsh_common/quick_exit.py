"""End a finished command-line process without the interpreter's teardown.

A fast-path command (``dsh-memory status``, ``dsh-knowledge retrieve``, ...) has loaded some
two hundred modules; Python's shutdown then frees every one of them, object by object,
which costs ~8 ms on a small machine - more than a git process, for nothing the user sees.
Once the command has printed its answer and closed what it opened (the commands close
their SQLite stores and files themselves), :func:`exit_now` flushes stdout and stderr and
leaves with ``os._exit``.

:func:`answer_or_continue` also switches the cyclic garbage collector off for a launcher's
fast path: importing ~130 modules triggers some twenty collections (~2 ms) that find
nothing, and a read command makes no cyclic garbage worth collecting (a run of ``status``,
``search`` or ``context`` leaves the same ~400 unreachable objects, all from module
import). A command that falls back to the parser gets it back.

The ordinary ``sys.exit`` runs instead when flushing fails (a closed pipe: the process
reports it exactly as before) or when anything registered an ``atexit`` handler (coverage
measuring subprocesses, ``logging``): those handlers must run.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
from collections.abc import Callable
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


def answer_or_continue(answer: Callable[[], int | None]) -> None:
    """Run a launcher's fast path, ``answer``, with the collector off.

    An answer (an exit code) ends the process with :func:`exit_now`; ``None`` (the command
    needs the parser) switches the collector back on - the parser's commands may run long
    (sync, clear, bulk add) - and returns.
    """
    gc.disable()
    code = answer()
    if code is not None:
        exit_now(code)
    gc.enable()
