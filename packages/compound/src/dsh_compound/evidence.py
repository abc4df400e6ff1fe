"""Source fingerprints: taken at capture, compared on every read.

Evidence status says only whether the recorded source bytes are still the same. It is not
correctness: a matching hash cannot show that a command ran or that a diagnosis is right.

Comparing is bounded work, whatever the corpus says. One :class:`EvidenceRun` (a recall, a
check, a hook) looks at each recorded path once, however many records name it and under
however many different digests, and hashes each file version once per process: digests
are remembered by ``(path, dev, ino, size, mtime_ns, ctime_ns)`` of the opened file, so a
long-lived MCP server does not rehash what did not change. A run also has a byte budget
(:data:`RUN_HASH_BUDGET`, :data:`HOOK_HASH_BUDGET` for hooks): a file that would take it
past the budget is not hashed, and is reported ``unknown`` with a reason starting "not
verified", never as unchanged; the run lists such paths in :attr:`EvidenceRun.unverified`.
"""

from __future__ import annotations

import os
from pathlib import Path

from dsh_common import errors as common_errors
from dsh_common import paths as common_paths
from dsh_common.digest import sha256_descriptor, sha256_file
from dsh_common.io import open_regular_nofollow
from dsh_compound.errors import (
    InvalidPathError,
    SourceNotFoundError,
    SourceNotRegularError,
    SourceTooLargeError,
    SymlinkRejectedError,
    translate_common_errors,
)
from dsh_compound.limits import CORPUS_DIRECTORY, LIMITS

# Not typing.TYPE_CHECKING: importing typing costs every agent hook ~2 ms of start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

UNCHANGED = "unchanged"
CHANGED = "changed"
MISSING = "missing"
UNKNOWN = "unknown"

#: Aggregate precedence, strongest first: one missing file outranks everything.
STATUS_PRECEDENCE = (MISSING, CHANGED, UNKNOWN, UNCHANGED)

_MIB = 1024 * 1024
#: Bytes one run (a recall, inspect or check, from the CLI, the library or MCP) may hash:
#: 64 source files at the 8 MiB limit, one or two seconds of SHA-256 on a laptop core.
RUN_HASH_BUDGET = 512 * _MIB
#: Bytes one hook run may hash (4 files at the limit): hooks run at every session start and
#: every prompt, and must answer in a fraction of a second.
HOOK_HASH_BUDGET = 32 * _MIB
#: The reason an evidence file left unhashed by the budget carries (after "not verified").
NOT_VERIFIED = "not verified"

# Digests of file versions already hashed by this process, by the identity of the opened
# file. Bounded: past this many versions it starts again (a memo, never a source of truth).
_DIGESTS: dict[tuple[str, int, int, int, int, int], str] = {}
_DIGESTS_MAX = 4096


def _mib(size: int) -> str:
    return f"{size / _MIB:g} MiB"


class EvidenceRun:
    """The evidence comparisons of one run: each path looked at once, within a byte budget.

    ``outcomes`` maps a recorded path to what was found there - ``("digest", hex)``, or a
    finished per-file status for anything that could not be hashed - so the thousandth
    record naming a file costs a dictionary lookup. ``unverified`` lists, in order, the
    paths the budget left unhashed.
    """

    __slots__ = ("budget", "hashed", "outcomes", "unverified")

    def __init__(self, budget: int = RUN_HASH_BUDGET) -> None:
        self.budget = budget
        self.hashed = 0
        self.outcomes: dict[str, tuple[str, Any]] = {}
        self.unverified: list[str] = []

    def digest(self, location: Path) -> str | None:
        """SHA-256 of the regular file at ``location``, or None when over budget.

        Raises what :func:`~dsh_common.digest.sha256_file` raises (missing, symlink, not
        regular, too large, unreadable).
        """
        fd = open_regular_nofollow(location)
        try:
            info = os.fstat(fd)
        except BaseException:
            os.close(fd)
            raise
        key = (
            str(location),
            info.st_dev,
            info.st_ino,
            info.st_size,
            info.st_mtime_ns,
            info.st_ctime_ns,
        )
        known = _DIGESTS.get(key)
        if known is not None or info.st_size > LIMITS.source_bytes:
            os.close(fd)
            if known is not None:
                return known
            raise common_errors.FileTooLargeError(f"{location} is too large")
        if self.hashed + info.st_size > self.budget:
            os.close(fd)
            return None
        self.hashed += info.st_size
        try:
            actual = sha256_descriptor(os.dup(fd), LIMITS.source_bytes, location)
            now = os.fstat(fd)
        finally:
            os.close(fd)
        # Remembered only when the file did not change while it was read.
        if (now.st_size, now.st_mtime_ns, now.st_ctime_ns) == key[3:]:
            if len(_DIGESTS) >= _DIGESTS_MAX:
                _DIGESTS.clear()
            _DIGESTS[key] = actual
        return actual

    def warning(self) -> str | None:
        """One line naming what the budget left unverified, or None when nothing was."""
        if not self.unverified:
            return None
        shown = ", ".join(self.unverified[:5])
        more = len(self.unverified) - 5
        suffix = f" and {more} more" if more > 0 else ""
        return (
            f"evidence {NOT_VERIFIED} for {len(self.unverified)} source file(s) ({shown}"
            f"{suffix}): hashing them would pass this run's budget of "
            f"{_mib(self.budget)}; their status is unknown, not unchanged"
        )

    def summary(self) -> dict[str, Any] | None:
        """``{count, paths, budgetBytes}`` of the unverified files (at most 20 paths)."""
        if not self.unverified:
            return None
        return {
            "count": len(self.unverified),
            "paths": self.unverified[: LIMITS.warnings],
            "budgetBytes": self.budget,
        }


def fingerprint_sources(workspace: common_paths.Workspace, files: list[str]) -> list[str]:
    """SHA-256 of each validated source file, for capture; raise on anything unreadable.

    Each path's existing components are walked with ``lstat`` (no symlink anywhere), and the
    file is opened with ``O_NOFOLLOW`` and must be regular and at most 8 MiB.
    """
    digests: list[str] = []
    for relative in files:
        try:
            with translate_common_errors():
                exists = common_paths.check_no_symlinks(workspace, relative)
        except common_errors.DshError:
            raise
        except OSError as exc:
            # An unreadable directory (EACCES) or a component longer than the file system
            # allows (ENAMETOOLONG) on the way: foreseeable, and this path's fault alone.
            raise InvalidPathError(
                f"source file {relative!r} cannot be read: {exc.strerror}"
            ) from exc
        if not exists:
            raise SourceNotFoundError(f"source file {relative!r} does not exist")
        try:
            digests.append(sha256_file(workspace.absolute(relative), LIMITS.source_bytes))
        except common_errors.FileTooLargeError as exc:
            raise SourceTooLargeError(
                f"source file {relative!r} is larger than {LIMITS.source_bytes} bytes"
            ) from exc
        except common_errors.SymlinkRejectedError as exc:
            raise SymlinkRejectedError(f"source file {relative!r} is a symbolic link") from exc
        except common_errors.NotRegularFileError as exc:
            raise SourceNotRegularError(f"source file {relative!r} is not a regular file") from exc
        except FileNotFoundError as exc:
            raise SourceNotFoundError(f"source file {relative!r} does not exist") from exc
        except OSError as exc:
            raise InvalidPathError(
                f"source file {relative!r} cannot be read: {exc.strerror}"
            ) from exc
    return digests


def _probe(workspace: common_paths.Workspace, path: str, run: EvidenceRun) -> tuple[str, Any]:
    """What is at the recorded ``path`` now: ``("digest", hex)`` or ``("status", entry)``."""

    def unknown(reason: str) -> tuple[str, Any]:
        return "status", {"path": path, "status": UNKNOWN, "reason": reason}

    missing = ("status", {"path": path, "status": MISSING})
    try:
        relative = common_paths.validate_relative_path(path, forbidden_prefixes=[CORPUS_DIRECTORY])
    except common_errors.DshError:
        return unknown("the recorded path is not a valid workspace path")
    try:
        exists = common_paths.check_no_symlinks(workspace, relative)
    except common_errors.SymlinkRejectedError:
        return unknown("a path component is a symbolic link")
    except common_errors.InvalidPathError:
        exists = False  # a parent became a file: the recorded file is gone
    except OSError as exc:
        # An unreadable directory on the way (EACCES), a component over the file system's
        # name limit (ENAMETOOLONG)...: this one file cannot be vouched for, nothing more.
        return unknown(f"cannot be read safely: {exc.strerror}")
    if not exists:
        return missing
    try:
        actual = run.digest(workspace.absolute(relative))
    except FileNotFoundError:
        return missing
    except common_errors.FileTooLargeError:
        return unknown(f"larger than the {LIMITS.source_bytes}-byte source limit")
    except common_errors.SymlinkRejectedError:
        return unknown("the file became a symbolic link")
    except common_errors.NotRegularFileError:
        return unknown("not a regular file")
    except OSError as exc:
        return unknown(f"cannot be read safely: {exc.strerror}")
    if actual is None:
        run.unverified.append(path)
        return unknown(
            f"{NOT_VERIFIED}: hashing it would pass this run's budget of {_mib(run.budget)}"
        )
    return "digest", actual


def _file_status(
    workspace: common_paths.Workspace, path: str, expected: str, run: EvidenceRun
) -> dict[str, Any]:
    outcome = run.outcomes.get(path)
    if outcome is None:
        outcome = run.outcomes[path] = _probe(workspace, path, run)
    kind, value = outcome
    if kind == "digest":
        return {"path": path, "status": UNCHANGED if value == expected else CHANGED}
    return dict(value)


def is_unverified(entry: dict[str, Any]) -> bool:
    """True for a per-file result the hashing budget left unverified."""
    return str(entry.get("reason", "")).startswith(NOT_VERIFIED)


def aggregate_status(statuses: list[str]) -> str:
    """The record's status by precedence missing > changed > unknown > unchanged."""
    for status in STATUS_PRECEDENCE:
        if status in statuses:
            return status
    return UNKNOWN  # no files at all cannot be vouched for


def evidence_report(
    workspace: common_paths.Workspace,
    files: list[dict[str, Any]],
    run: EvidenceRun | None = None,
) -> dict[str, Any]:
    """``{evidenceStatus, changedFiles, evidenceFiles}`` for a record's ``files`` entries.

    ``run`` is shared by every record of one recall, check or hook (each file looked at
    once, one byte budget); without it this report is a run of its own.
    """
    active = run if run is not None else EvidenceRun()
    results = [
        _file_status(workspace, str(entry["path"]), str(entry["sha256"]), active) for entry in files
    ]
    statuses = [item["status"] for item in results]
    return {
        "evidenceStatus": aggregate_status(statuses),
        "changedFiles": [item["path"] for item in results if item["status"] != UNCHANGED],
        "evidenceFiles": results,
    }


def evidence_warning(record_id: str, report: dict[str, Any]) -> str | None:
    """A warning line for a record whose sources moved, or None when all are unchanged."""
    status = report["evidenceStatus"]
    if status == UNCHANGED:
        return None
    shown = ", ".join(report["changedFiles"][:5])
    more = len(report["changedFiles"]) - 5
    suffix = f" and {more} more" if more > 0 else ""
    return (
        f"record {record_id!r}: evidence {status} ({shown}{suffix}); "
        "re-verify the lesson before relying on it"
    )
