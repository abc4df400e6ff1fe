"""The errors of dsh-compound, one stable kebab-case ``code`` each.

Every foreseeable failure is a :class:`CompoundError`. Errors raised by dsh-common (path
validation, bounded reads, locks) are translated at the library boundary into the leaves
below, so a caller that catches ``CompoundError`` catches everything this package reports,
and the CLI prints the same codes whichever layer noticed the problem.

The codes are a contract (docs/compound/reference.md, "Error codes"); a test pins the table.
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from contextlib import contextmanager

from dsh_common import errors as common_errors
from dsh_common.errors import DshError


class CompoundError(DshError):
    """Root of every dsh-compound failure."""

    code = "compound-error"


class InvalidWorkspaceError(CompoundError, ValueError):
    """The workspace root is missing, not a directory, or unusable."""

    code = "invalid-workspace"


class InvalidPathError(CompoundError, ValueError):
    """A source, input or corpus path breaks the workspace path rules."""

    code = "invalid-path"


class SymlinkRejectedError(CompoundError, ValueError):
    """A path component, the workspace root or a record is a symbolic link."""

    code = "symlink-rejected"


class InputNotFoundError(CompoundError, FileNotFoundError):
    """The draft input file does not exist."""

    code = "input-not-found"


class DraftTooLargeError(CompoundError, ValueError):
    """The draft input file is larger than 32 KiB."""

    code = "draft-too-large"


class InvalidDraftError(CompoundError, ValueError):
    """The draft is not valid JSON, not an object, or breaks a field rule."""

    code = "invalid-draft"


class InvalidIdError(CompoundError, ValueError):
    """An ID is not a lowercase kebab-case slug of at most 100 characters, or a device name."""

    code = "invalid-id"


class SourceNotFoundError(CompoundError, FileNotFoundError):
    """A draft source file does not exist."""

    code = "source-not-found"


class SourceNotRegularError(CompoundError, OSError):
    """A draft source file is a directory, FIFO, device or other non-regular file."""

    code = "source-not-regular"


class SourceTooLargeError(CompoundError, OSError):
    """A draft source file is larger than 8 MiB."""

    code = "source-too-large"


class RecordExistsError(CompoundError, FileExistsError):
    """Capture without ``--replace`` found a record with that ID."""

    code = "record-exists"


class RecordNotFoundError(CompoundError, FileNotFoundError):
    """Inspect or ``--replace`` names a record that does not exist."""

    code = "record-not-found"


class InvalidDigestError(CompoundError, ValueError):
    """A ``--replace`` digest is not 64 lowercase hexadecimal characters."""

    code = "invalid-digest"


class DigestMismatchError(CompoundError, ValueError):
    """The record's current digest differs from the ``--replace`` digest (lost CAS)."""

    code = "digest-mismatch"


class HardLinkedRecordError(CompoundError, OSError):
    """The record to replace has more than one hard link."""

    code = "hard-linked-record"


class RecordTooLargeError(CompoundError, OSError):
    """A record is larger than 64 KiB, or a capture would render one (nothing is written)."""

    code = "record-too-large"


class MalformedRecordError(CompoundError, ValueError):
    """A record cannot be read as a regular file, or its front matter breaks schema 1."""

    code = "malformed-record"


class InvalidCorpusError(CompoundError, OSError):
    """The corpus path exists but is not a directory."""

    code = "invalid-corpus"


class LockHeldError(CompoundError, OSError):
    """Another capture holds ``<id>.lock`` (or a crashed one left it; never auto-removed)."""

    code = "lock-held"


class CorpusReadOnlyError(CompoundError, OSError):
    """Capture cannot write to the corpus: a read-only file system or no write permission."""

    code = "read-only"


class DiskFullError(CompoundError, OSError):
    """Capture ran out of space: disk full, quota exceeded or file size limit reached."""

    code = "disk-full"


class InvalidQueryError(CompoundError, ValueError):
    """A recall query is empty, not text, or longer than 500 characters."""

    code = "invalid-query"


class InvalidLimitError(CompoundError, ValueError):
    """A recall limit is not an integer from 1 to 10."""

    code = "invalid-limit"


class InvalidRankingError(CompoundError, ValueError):
    """A ranking (``--ranking``, ``ranking=``, ``DSH_RANKING``) is neither lexical nor hybrid."""

    code = "invalid-ranking"


class InvalidRevisionError(CompoundError, ValueError):
    """``check --changed-since`` names no commit (or starts with ``-``)."""

    code = "invalid-revision"


class GitRepositoryError(CompoundError, OSError):
    """``check --staged``, ``--changed-since`` or ``--pre-commit`` outside a git work tree."""

    code = "not-a-git-repository"


class GitFailedError(CompoundError, OSError):
    """A git command the check needed could not be started or exited non-zero."""

    code = "git-failed"


class GitTimeoutError(CompoundError, TimeoutError):
    """A git command the check needed did not finish within its time limit."""

    code = "git-timeout"


class GitOutputTooLargeError(CompoundError, OSError):
    """git named more changed paths than its output cap allows (16 MiB); nothing was checked."""

    code = "git-output-too-large"


class UnsafeIndexFileError(CompoundError, ValueError):
    """``GIT_INDEX_FILE`` names no regular file inside the repository's git directory."""

    code = "unsafe-index-file"


#: The dsh-common leaves we translate, and what they become here.
_TRANSLATION: dict[type[DshError], type[CompoundError]] = {
    common_errors.WorkspaceError: InvalidWorkspaceError,
    common_errors.InvalidPathError: InvalidPathError,
    common_errors.SymlinkRejectedError: SymlinkRejectedError,
    common_errors.LockHeldError: LockHeldError,
    common_errors.HardLinkedFileError: HardLinkedRecordError,
}


@contextmanager
def translate_common_errors() -> Iterator[None]:
    """Re-raise dsh-common's path/lock errors as this package's leaves (same message)."""
    try:
        yield
    except CompoundError:
        raise
    except DshError as exc:
        target = _TRANSLATION.get(type(exc))
        if target is None:
            raise
        raise target(exc.message, details=exc.details) from exc


#: ``errno`` values of a write that tell the corpus cannot be written at all...
_READ_ONLY_ERRNOS = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})
#: ...and those that tell there is no room (EFBIG: RLIMIT_FSIZE or the file system's limit).
_DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def storage_error(exc: OSError, action: str) -> CompoundError | None:
    """The error a failed write of ``action`` is to the user, or None if it is unforeseen.

    A full disk and a read-only corpus are foreseeable: they get their own codes and say
    what to do, instead of surfacing as ``internal-error``.
    """
    if exc.errno in _READ_ONLY_ERRNOS:
        return CorpusReadOnlyError(
            f"cannot {action}: {exc.strerror} - the corpus folder is read-only or not "
            "writable by this user; no record was written"
        )
    if exc.errno in _DISK_FULL_ERRNOS:
        return DiskFullError(
            f"disk full: cannot {action} ({exc.strerror}); no record was written - free "
            "some space and capture again"
        )
    return None


@contextmanager
def storage_errors(action: str) -> Iterator[None]:
    """Translate a failed write's OSError by :func:`storage_error`; pass everything else."""
    try:
        yield
    except DshError:
        raise  # our own leaves (some derive from OSError) already say what happened
    except OSError as exc:
        translated = storage_error(exc, action)
        if translated is None:
            raise
        raise translated from exc


#: Codes the CLI itself can print besides the ones above (from ``dsh_common.cli.run_app``).
CLI_ONLY_CODES = ("invalid-arguments", "internal-error", "interrupted")


def all_error_classes() -> list[type[CompoundError]]:
    """Every leaf class, in definition order (for the reference page's table and its test)."""
    return [
        cls
        for cls in globals().values()
        if isinstance(cls, type) and issubclass(cls, CompoundError) and cls is not CompoundError
    ]
