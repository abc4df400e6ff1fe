"""The error root shared by every dsh package.

Every failure a user can foresee is a :class:`DshError` with a stable kebab-case ``code``.
CLIs print ``{"error": {"code", "message"}}`` for it; nothing else about the exception
(its class name, its traceback) is part of the contract. Leaves also inherit the builtin
that fits, so callers that only know Python's hierarchy can still catch them.
"""

from __future__ import annotations

# Not typing.TYPE_CHECKING: importing typing costs every agent hook ~2 ms of start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: The most characters of one value a message echoes: enough to recognise the value, never
#: the whole of a 4,301-digit number or a megabyte line someone put where a word belongs.
MAX_SHOWN_CHARS = 80


def truncate(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` code points, ending in an ellipsis when cut."""
    if len(text) <= limit:
        return text
    return text[: limit - 1].rstrip() + "…"


def shown(value: object, limit: int = MAX_SHOWN_CHARS) -> str:
    """``value`` as a message echoes it: its ``repr``, of at most ``limit`` characters of the
    value (a string is cut inside its quotes, so they still say where it ends)."""
    if isinstance(value, str):
        return repr(truncate(value, limit))
    try:
        text = repr(value)
    except ValueError:  # an int of more than 4,300 digits: Python refuses to spell it out
        return "<an integer of more than 4300 digits>"
    return truncate(text, limit)


class DshError(Exception):
    """Base of every foreseeable dsh failure; ``code`` is stable, ``message`` is for people."""

    code: str = "dsh-error"

    def __init__(
        self, message: str, *, code: str | None = None, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details: dict[str, Any] = dict(details or {})

    def to_json(self) -> dict[str, Any]:
        """The ``{"code", "message"}`` object printed under ``"error"`` by the CLIs."""
        # Exactly the two fields the contracts name (docs/compatibility/); ``details`` stays a
        # Python-side extra.
        return {"code": self.code, "message": self.message}


class InvalidPathError(DshError, ValueError):
    """A caller-supplied path is not an acceptable workspace-relative path."""

    code = "invalid-path"


class SymlinkRejectedError(DshError, ValueError):
    """A path component (or the workspace root) is a symbolic link."""

    code = "symlink-rejected"


class WorkspaceError(DshError, ValueError):
    """The workspace root is missing, not a directory, or is a symbolic link."""

    code = "invalid-workspace"


class FileTooLargeError(DshError, OSError):
    """A bounded read found more bytes than the caller's limit allows."""

    code = "file-too-large"


class NotRegularFileError(DshError, OSError):
    """A path that must be a regular file is a directory, device, FIFO, socket or link."""

    code = "not-regular-file"


class HardLinkedFileError(DshError, OSError):
    """A file that would be replaced or trusted has more than one hard link."""

    code = "hard-linked-file"


class AlreadyExistsError(DshError, FileExistsError):
    """Exclusive creation found the target already present."""

    code = "already-exists"


class LockHeldError(DshError, OSError):
    """Another writer holds the lock; ``details`` names it and says whether it is alive."""

    code = "lock-held"


class InvalidJsonError(DshError, ValueError):
    """Bytes that must be JSON are not."""

    code = "invalid-json"


class GitError(DshError, RuntimeError):
    """git exited non-zero, or could not be started. Keeps argv, exit code and stderr."""

    code = "git-failed"

    def __init__(
        self,
        message: str,
        *,
        argv: list[str] | None = None,
        exit_code: int | None = None,
        stderr: str = "",
        code: str | None = None,
    ) -> None:
        super().__init__(
            message,
            code=code,
            details={"argv": list(argv or []), "exitCode": exit_code, "stderr": stderr},
        )
        self.argv: list[str] = list(argv or [])
        self.exit_code = exit_code
        self.stderr = stderr


class GitUnavailableError(GitError):
    """The git executable could not be started (missing from PATH, not executable)."""

    code = "git-unavailable"


class GitTimeoutError(GitError, TimeoutError):
    """One git command outlived its own timeout, or the runner's total budget ran out.

    ``budget_exhausted`` tells the two apart: True when the shared budget, not the
    command's own timeout, was the limit that ended (or prevented) the command.
    """

    code = "git-timeout"
    budget_exhausted: bool = False


class GitOutputTooLargeError(GitError):
    """git printed more than the runner's output cap; the rest was not read."""

    code = "git-output-too-large"
