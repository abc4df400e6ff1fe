"""How ``dsh-memory`` prints an envelope, shared by the Typer command line and the fast path.

Kept free of typer so :mod:`dsh_memory.launcher` can run ``status``, ``search`` and
``context`` without importing it, and print the very same bytes.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import Any

from dsh_common.cli import emit_json
from dsh_memory.errors import failed_envelope, render_error

# The memory API's field names, as a user of this command line spells them.
_CLI_SPELLING = {"dryRun": "--dry-run", "runId": "--run-id", "previewId": "--preview-id"}
_API_FIELD = re.compile(r"\b(" + "|".join(_CLI_SPELLING) + r")\b")
# Messages that open with a method argument's bare name: the option that carries it.
_OPENINGS = (
    ("limit must", "--limit must"),
    ("ranking must", "--ranking must"),
    ("query must", "the query (QUERY or --query) must"),
    ("enabled must be a boolean", "--enabled must be true or false"),
    ("a preview id is", "--preview-id must be"),
)
_CONFIRMATION = re.compile(r"needs the exact confirmation ([A-Z_]+)")
# A root that is missing or not yet a repository: say how to create it.
_INIT_HINT = " - run dsh-memory init (with the same --root) to create it"
#: At most 16 digits: a longer run is no limit any method takes (and Python's int() refuses
#: more than 4,300 digits); it is handed over as text, so the method's own code answers.
_INTEGER = re.compile(r"^-?[0-9]{1,16}$")


def cli_message(code: object, message: str) -> str:
    """An API message as the command line says it: option names, and how to create a root."""
    message = _API_FIELD.sub(lambda m: _CLI_SPELLING[m.group(1)], message)
    for api, cli in _OPENINGS:
        if message.startswith(api):
            message = cli + message[len(api) :]
            break
    message = _CONFIRMATION.sub(r"needs --confirmation \1", message)
    if code == "repo-unavailable" and message.endswith(
        ("does not exist", "is not a Git work tree")
    ):
        message += _INIT_HINT
    return message


def emit_envelope(service: Any, envelope: dict[str, Any]) -> int:
    """Print a success to stdout (0) or a failure to stderr (1); return the exit code."""
    if envelope.get("ok"):
        emit_json(envelope)
        return 0
    error = failed_envelope(envelope, service.last_error_message)["error"]
    emit_json(
        render_error(error["code"], cli_message(error["code"], error["message"])), stream=sys.stderr
    )
    return 1


def integer_or_raw(value: str | None) -> object:
    """``"21"`` becomes 21; anything else is handed to the method as given (it validates)."""
    if value is None:
        return None
    return int(value) if _INTEGER.fullmatch(value.strip()) else value


#: From this many vectors to encode, the command line shows a progress bar on stderr.
VECTOR_PROGRESS_FROM = 64


def vector_progress(threshold: int = VECTOR_PROGRESS_FROM) -> Callable[[int, int], None]:
    """A progress bar on stderr for a build of at least ``threshold`` vectors (smaller ones,
    the few an edit changed, are encoded without a word)."""

    def report(done: int, total: int) -> None:
        if total < threshold:
            return
        width = 30
        filled = width * done // total
        bar = "#" * filled + "-" * (width - filled)
        end = "\n" if done >= total else ""
        sys.stderr.write(f"\rdsh-memory: encoding vectors [{bar}] {done}/{total}{end}")
        sys.stderr.flush()

    return report
