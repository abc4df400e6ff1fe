"""Source fingerprints: taken at capture, compared on every read.

Evidence status says only whether the recorded source bytes are still the same. It is not
correctness: a matching hash cannot show that a command ran or that a diagnosis is right.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dsh_common import errors as common_errors
from dsh_common import paths as common_paths
from dsh_common.digest import sha256_file
from dsh_compound.errors import (
    InvalidPathError,
    SourceNotFoundError,
    SourceNotRegularError,
    SourceTooLargeError,
    SymlinkRejectedError,
    translate_common_errors,
)
from dsh_compound.limits import CORPUS_DIRECTORY, LIMITS

UNCHANGED = "unchanged"
CHANGED = "changed"
MISSING = "missing"
UNKNOWN = "unknown"

#: Aggregate precedence, strongest first: one missing file outranks everything.
STATUS_PRECEDENCE = (MISSING, CHANGED, UNKNOWN, UNCHANGED)

#: Per-run memo of ``(path, expected sha256) -> file status``, so a shared file is hashed once.
FileStatusCache = dict[tuple[str, str], dict[str, Any]]


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


def _file_status(workspace: common_paths.Workspace, path: str, expected: str) -> dict[str, Any]:
    def unknown(reason: str) -> dict[str, Any]:
        return {"path": path, "status": UNKNOWN, "reason": reason}

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
        return {"path": path, "status": MISSING}
    location: Path = workspace.absolute(relative)
    try:
        actual = sha256_file(location, LIMITS.source_bytes)
    except FileNotFoundError:
        return {"path": path, "status": MISSING}
    except common_errors.FileTooLargeError:
        return unknown(f"larger than the {LIMITS.source_bytes}-byte source limit")
    except common_errors.SymlinkRejectedError:
        return unknown("the file became a symbolic link")
    except common_errors.NotRegularFileError:
        return unknown("not a regular file")
    except OSError as exc:
        return unknown(f"cannot be read safely: {exc.strerror}")
    return {"path": path, "status": UNCHANGED if actual == expected else CHANGED}


def aggregate_status(statuses: list[str]) -> str:
    """The record's status by precedence missing > changed > unknown > unchanged."""
    for status in STATUS_PRECEDENCE:
        if status in statuses:
            return status
    return UNKNOWN  # no files at all cannot be vouched for


def evidence_report(
    workspace: common_paths.Workspace,
    files: list[dict[str, Any]],
    cache: FileStatusCache | None = None,
) -> dict[str, Any]:
    """``{evidenceStatus, changedFiles, evidenceFiles}`` for a record's ``files`` entries.

    ``cache`` lets one scan hash a file shared by many records once.
    """
    results: list[dict[str, Any]] = []
    for entry in files:
        key = (str(entry["path"]), str(entry["sha256"]))
        found = cache.get(key) if cache is not None else None
        if found is None:
            found = _file_status(workspace, key[0], key[1])
            if cache is not None:
                cache[key] = found
        results.append(dict(found))
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
