"""What every agent hook shares: read the host's payload, print extra context, never block.

Claude Code and Codex run a hook command with a JSON payload on stdin (``session_id``,
``cwd``, ``hook_event_name``, plus ``prompt`` for a prompt-submit hook) and read
``{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}}`` from stdout.
A hook that prints nothing and exits 0 adds nothing. Our hooks must never get in an
agent's way: :func:`run_hook` turns every failure into silence and exit 0 (with the reason
on stderr only when ``DSH_DEBUG=1``).

Hooks run at every session start and every prompt, so this module imports only the
standard library's ``json`` (and ``re``, which ``json`` loads anyway) - no typer, no orjson,
nothing the hook does not need.

Stored text shown to a model is untrusted: :func:`escape_untrusted` (the one escape every
product uses) makes sure it cannot close (or open) the block it is fenced in, nor imitate
the label around it.

Every hook runs under a wall-clock budget (:func:`hook_deadline`, 5 s unless
``DSH_HOOK_BUDGET_SECONDS`` says otherwise): whatever a payload or a repository makes a
hook do, it gives up silently (exit 0, nothing printed) before the host would kill it.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence

# Not typing.TYPE_CHECKING: importing typing costs every agent hook ~2 ms of start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, BinaryIO, NoReturn, TextIO

#: A payload larger than this is not a hook payload we understand; the hook stays silent.
MAX_PAYLOAD_BYTES = 1024 * 1024

#: Wall-clock seconds a hook may take before it gives up silently (see :func:`hook_deadline`):
#: half the 10 s timeout ``setup`` registers with the hosts, so that even the C watchdog's
#: hard stop (2 s later) and the interpreter's start and exit fit before the host kills us.
DEFAULT_BUDGET_SECONDS = 5.0
BUDGET_ENVIRONMENT = "DSH_HOOK_BUDGET_SECONDS"
# After the budget, the timer fires again this often: code that swallowed the first
# HookBudgetExceeded (a broad ``except Exception``) gets it again, and the third time the
# process ends at once.
_REPEAT_SECONDS = 0.25
_FIRES_BEFORE_EXIT = 3
# A hard stop for work that never returns to the interpreter (a regular expression
# backtracking in C holds the GIL, so neither a signal handler nor a thread can run): the
# faulthandler watchdog is a C thread, and ends the process this long after the budget.
_HARD_STOP_GRACE_SECONDS = 2.0


class HookBudgetExceeded(Exception):
    """The hook ran past its wall-clock budget; :func:`run_hook` turns it into silence."""


#: Hook event names as the hosts spell them, by the names our commands use.
EVENT_NAMES = {
    "session-start": "SessionStart",
    "user-prompt-submit": "UserPromptSubmit",
    "stop": "Stop",
}

if TYPE_CHECKING:
    #: ``handler(payload, args)``: ``args`` are the words after the event name.
    HookHandler = Callable[[Mapping[str, Any], list[str]], str | None]
    #: ``render_error(code, message)``: the product's error document (dsh-memory has its own).
    ErrorRenderer = Callable[[str, str], Any]


def budget_seconds(environ: Mapping[str, str] | None = None) -> float:
    """The hook budget: ``DSH_HOOK_BUDGET_SECONDS`` when it is a positive number, else 10."""
    raw = (os.environ if environ is None else environ).get(BUDGET_ENVIRONMENT, "")
    try:
        value = float(raw)
    except ValueError:
        return DEFAULT_BUDGET_SECONDS
    return value if 0 < value < 86_400 else DEFAULT_BUDGET_SECONDS


class hook_deadline:
    """Within the block, the hook's budget runs: past it, :class:`HookBudgetExceeded` is
    raised wherever the hook is (again every 0.25 s if swallowed, then the process exits
    0), and a C watchdog ends the process 2 s later should the interpreter never get
    control back. Outside the main thread (a library caller) it does nothing."""

    def __init__(self, seconds: float | None = None) -> None:
        self.seconds = budget_seconds() if seconds is None else seconds
        self._armed = False
        self._fires = 0
        self._previous: Any = None
        self._signal: Any = None
        self._faulthandler: Any = None

    def _fire(self, signum: int, frame: Any) -> NoReturn:
        self._fires += 1
        if self._fires >= _FIRES_BEFORE_EXIT:
            os._exit(0)  # the hook would never finish: end it, silent, exit 0
        raise HookBudgetExceeded(f"the hook ran past its {self.seconds:g} s budget")

    def __enter__(self) -> hook_deadline:
        import faulthandler  # noqa: PLC0415 - only hooks need these
        import signal  # noqa: PLC0415

        if not hasattr(signal, "setitimer"):
            return self  # no interval timers (Windows): the host's own timeout applies
        try:
            self._previous = signal.signal(signal.SIGALRM, self._fire)
        except ValueError:  # not the main thread: leave the caller's signals alone
            return self
        signal.setitimer(signal.ITIMER_REAL, self.seconds, _REPEAT_SECONDS)
        self._signal, self._faulthandler, self._armed = signal, faulthandler, True
        self._devnull = open(os.devnull, "w")
        faulthandler.dump_traceback_later(
            self.seconds + _HARD_STOP_GRACE_SECONDS, exit=True, file=self._devnull
        )
        return self

    def __exit__(self, *exc_info: object) -> None:
        if not self._armed:
            return
        # Disarm first: nothing may fire once the block is left.
        self._signal.setitimer(self._signal.ITIMER_REAL, 0)
        self._faulthandler.cancel_dump_traceback_later()
        self._signal.signal(self._signal.SIGALRM, self._previous)
        self._devnull.close()
        self._armed = False


def _error_document(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


def _emit_error(code: str, message: str, render_error: ErrorRenderer) -> int:
    sys.stderr.write(json.dumps(render_error(code, message), ensure_ascii=False) + "\n")
    return 1


def read_payload(stream: BinaryIO | None = None) -> dict[str, Any]:
    """The JSON object on stdin, or ``{}`` when there is none (a hook run by hand)."""
    source = stream if stream is not None else sys.stdin.buffer
    if source.isatty():
        return {}
    data = source.read(MAX_PAYLOAD_BYTES + 1)
    if len(data) > MAX_PAYLOAD_BYTES:
        raise ValueError("hook payload is larger than 1 MiB")
    if not data.strip():
        return {}
    value = json.loads(data)
    if not isinstance(value, dict):
        raise ValueError("hook payload is not a JSON object")
    return value


def payload_cwd(payload: Mapping[str, Any]) -> str:
    """The session's working directory: the payload's ``cwd``, else the process's."""
    cwd = payload.get("cwd")
    return cwd if isinstance(cwd, str) and cwd else os.getcwd()


def context_document(event: str, text: str) -> dict[str, Any]:
    """The ``hookSpecificOutput`` document that adds ``text`` to the model's context."""
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}


def escape_untrusted(text: str, *, markers: Sequence[str] = ()) -> str:
    """``text`` as it may appear inside one of our fenced blocks: it cannot close the fence
    nor imitate the product's label.

    ``&``, ``<`` and ``>`` become HTML entities (no tag of any name can be written, and the
    escape stays reversible). ``markers`` are the bracketed labels a product prints around
    stored text, e.g. dsh-memory's ``("DPSK MEMORY",)`` for ``[DPSK MEMORY: UNTRUSTED
    CONTEXT]``: a ``[`` opening one of them (any case, any spacing between its words)
    becomes ``&#91;``. Without markers only the three characters change.
    """
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    for marker in markers:
        escaped = _marker_imitation(marker).sub(r"&#91;\1", escaped)
    return escaped


@functools.lru_cache(maxsize=8)
def _marker_imitation(marker: str) -> re.Pattern[str]:
    words = r"\s+".join(re.escape(word) for word in marker.split())
    return re.compile(rf"\[(\s*{words})", re.IGNORECASE)


def one_line(text: str, limit: int) -> str:
    """Whitespace collapsed, escaped, cut to ``limit`` characters with an ellipsis."""
    flat = escape_untrusted(" ".join(text.split()))
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def run_hook(
    event: str,
    handlers: Mapping[str, HookHandler],
    args: list[str] | None = None,
    *,
    stdin: BinaryIO | None = None,
    stdout: TextIO | None = None,
    render_error: ErrorRenderer = _error_document,
) -> int:
    """Run the handler for ``event`` (``session-start``...); return the exit code.

    The handler gets the payload and the extra arguments and returns the context text,
    or None for nothing to say. An unknown event is a configuration mistake: a JSON error
    on stderr, exit 1 (both hosts treat that as a non-blocking hook error). Everything
    else exits 0.
    """
    handler = handlers.get(event)
    if handler is None or event not in EVENT_NAMES:
        known = ", ".join(sorted(handlers))
        message = f"unknown hook event {event!r}; expected one of: {known}"
        return _emit_error("unknown-hook", message, render_error)
    try:
        with hook_deadline():
            text = handler(read_payload(stdin), list(args or []))
    except Exception as exc:  # a hook must never block or break the agent's turn
        if os.environ.get("DSH_DEBUG") == "1":
            sys.stderr.write(f"dsh hook {event} failed: {type(exc).__name__}: {exc}\n")
        return 0
    if text:
        out = stdout if stdout is not None else sys.stdout
        try:
            out.write(json.dumps(context_document(EVENT_NAMES[event], text), ensure_ascii=False))
            out.write("\n")
            out.flush()
        except BrokenPipeError:  # the host stopped reading (a timeout): nothing to do
            pass
    return 0


def hook_main(
    argv: list[str],
    handlers: Mapping[str, HookHandler],
    *,
    render_error: ErrorRenderer = _error_document,
    program: str = "dsh-…",
) -> int:
    """``<command> hook <event>``: ``argv`` is what follows ``hook``; ``program`` is the
    command's name, for the example ``--help`` shows."""
    names = ", ".join(sorted(handlers))
    if not argv:
        return _emit_error(
            "invalid-arguments", f"hook needs an event name: one of {names}", render_error
        )
    if argv[0] in ("-h", "--help"):
        sys.stdout.write(
            f"usage: hook <event>   (events: {names})\n"
            "Reads the agent host's hook payload (JSON) on stdin and prints "
            "hookSpecificOutput.additionalContext, or nothing. Never fails the agent's turn.\n"
            f'\nExample:\n  echo \'{{"cwd": "."}}\' | {program} hook {sorted(handlers)[0]}\n'
        )
        return 0
    return run_hook(argv[0], handlers, argv[1:], render_error=render_error)
