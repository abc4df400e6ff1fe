"""Finding and reading records in the corpus, within the contract's bounds
(docs/compatibility/compound.md).

A scan lists the corpus directory's names, keeps the ``.md`` ones, sorts them, and reads
at most 500 of them and at most 4 MiB of accepted record data. Each record is read with
``O_NOFOLLOW`` and a 64 KiB bound; a note that is oversized, malformed, a link or not a
regular file is skipped with a warning, never fatal. A missing corpus is an empty corpus,
and reading never creates anything.
"""

from __future__ import annotations

import errno
import functools
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from dsh_common import errors as common_errors
from dsh_common import paths as common_paths
from dsh_common.cli import escape_undecodable, is_undecodable
from dsh_common.errors import shown
from dsh_common.io import read_bounded
from dsh_compound.draft import validate_id
from dsh_compound.errors import (
    CompoundError,
    InvalidCorpusError,
    MalformedRecordError,
    RecordNotFoundError,
    RecordTooLargeError,
    SymlinkRejectedError,
    translate_common_errors,
)
from dsh_compound.limits import CORPUS_DIRECTORY, LIMITS
from dsh_compound.record import ParsedRecord, parse_record, sha256

RECORD_SUFFIX = ".md"


class WarningList:
    """Warnings capped at the contract's 20; the last slot says how many were left out."""

    def __init__(self, cap: int = LIMITS.warnings) -> None:
        self._cap = cap
        self._items: list[str] = []
        self._total = 0

    def add(self, message: str) -> None:
        """Record one warning (kept if there is room, else only counted)."""
        self._total += 1
        if len(self._items) < self._cap:
            self._items.append(message)

    def as_list(self) -> list[str]:
        """At most ``cap`` warnings; when more were added the last says how many are missing."""
        if self._total <= self._cap:
            return list(self._items)
        kept = self._items[: self._cap - 1]
        return [*kept, f"{self._total - len(kept)} more warnings were omitted"]


@dataclass
class StoredRecord:
    """One accepted record: where it is, its bytes and its parsed content."""

    id: str
    path: Path
    data: bytes
    parsed: ParsedRecord

    @functools.cached_property
    def digest(self) -> str:
        """SHA-256 of the actual file bytes (BOM included); computed only when asked for.

        A scan reads up to 4 MiB but reports digests only for the few results it returns.
        """
        return sha256(self.data)


@dataclass
class ScanResult:
    """What a bounded scan found."""

    records: list[StoredRecord] = field(default_factory=list)
    warnings: WarningList = field(default_factory=WarningList)
    scanned: int = 0
    truncated: bool = False


def corpus_path(workspace: common_paths.Workspace) -> Path:
    """The corpus directory under the canonical workspace root."""
    return workspace.absolute(CORPUS_DIRECTORY)


def corpus_exists(workspace: common_paths.Workspace) -> bool:
    """Whether the corpus exists; raise if a component is a link or it is not a directory."""
    try:
        with translate_common_errors():
            exists = common_paths.check_no_symlinks(workspace, CORPUS_DIRECTORY)
    except CompoundError:
        raise
    except OSError as exc:  # e.g. an unreadable docs/ directory (EACCES)
        raise InvalidCorpusError(f"{CORPUS_DIRECTORY} cannot be read: {exc.strerror}") from exc
    if exists and not corpus_path(workspace).is_dir():
        raise InvalidCorpusError(f"{CORPUS_DIRECTORY} exists but is not a directory")
    return exists


def modified_warning(record_id: str) -> str:
    """The warning for a record whose body and metadata disagree."""
    return (
        f"record {record_id!r}: contentStatus modified - the Markdown body differs from its "
        "structured metadata; inspect it, then re-capture with --replace before relying on it"
    )


def unknown_keys_warning(record_id: str, keys: tuple[str, ...]) -> str:
    """The warning for a record whose metadata holds fields schema 1 does not define.

    Such a field is never written by a capture, so someone added it by hand; it may pose as
    an attestation (``verification.helperVerified``) and proves nothing.
    """
    listed = ", ".join(shown(key) for key in keys[:5])
    more = f" and {len(keys) - 5} more" if len(keys) > 5 else ""
    return (
        f"record {record_id!r}: metadata holds fields this helper never writes ({listed}{more}); "
        "they were added by hand, are not evidence and prove nothing - ignore them, or "
        "re-capture with --replace to drop them"
    )


def record_warnings(stored: StoredRecord) -> list[str]:
    """The warnings a single record carries on its own: modified content, unknown keys."""
    warnings: list[str] = []
    if stored.parsed.content_status != "consistent":
        warnings.append(modified_warning(stored.id))
    if stored.parsed.unknown_keys:
        warnings.append(unknown_keys_warning(stored.id, stored.parsed.unknown_keys))
    return warnings


def read_record(workspace: common_paths.Workspace, record_id: str) -> StoredRecord:
    """Read and parse one record by ID (for inspect and replace), raising on any problem."""
    validate_id(record_id)
    if not corpus_exists(workspace):
        raise RecordNotFoundError(f"no record {record_id!r}: the corpus does not exist")
    location = corpus_path(workspace) / f"{record_id}{RECORD_SUFFIX}"
    data = read_record_bytes(location, record_id)
    parsed = parse_record(data, expected_id=record_id)
    return StoredRecord(record_id, location, data, parsed)


def read_record_bytes(location: Path, record_id: str) -> bytes:
    """The bytes of a record file, bounded to 64 KiB, never through a link."""
    try:
        return read_bounded(location, LIMITS.record_bytes)
    except FileNotFoundError as exc:
        raise RecordNotFoundError(f"no record {record_id!r}") from exc
    except common_errors.FileTooLargeError as exc:
        raise RecordTooLargeError(
            f"record {record_id!r} is larger than {LIMITS.record_bytes} bytes"
        ) from exc
    except common_errors.SymlinkRejectedError as exc:
        raise SymlinkRejectedError(f"record {record_id!r} is a symbolic link") from exc
    except common_errors.NotRegularFileError as exc:
        raise MalformedRecordError(f"record {record_id!r} is not a regular file") from exc
    except OSError as exc:
        raise MalformedRecordError(f"record {record_id!r} cannot be read: {exc.strerror}") from exc


_SCAN_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NONBLOCK", 0)
)


def _read_entry(directory_fd: int, name: str, limit: int) -> bytes:
    """Read corpus entry ``name`` relative to an open directory, with read_bounded's rules.

    Opening relative to the directory descriptor pins the directory that was checked for
    links (a parent swapped for a symlink mid-scan cannot redirect us) and spares the
    kernel a full path walk per record - a scan opens up to 500 of them.
    """
    try:
        fd = os.open(name, _SCAN_OPEN_FLAGS, dir_fd=directory_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise SymlinkRejectedError(f"{name} is a symbolic link") from exc
        if exc.errno in (errno.ENXIO, errno.EISDIR):
            raise MalformedRecordError(f"{name} is not a regular file") from exc
        if isinstance(exc, FileNotFoundError):
            raise RecordNotFoundError(f"{name} vanished during the scan") from exc
        raise MalformedRecordError(f"{name} cannot be read: {exc.strerror}") from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise MalformedRecordError(f"{name} is not a regular file")
        if info.st_size > limit:
            raise RecordTooLargeError(f"{name} is larger than {limit} bytes")
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, limit + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise RecordTooLargeError(f"{name} is larger than {limit} bytes")
        return b"".join(chunks)
    finally:
        os.close(fd)


def scan_corpus(workspace: common_paths.Workspace) -> ScanResult:
    """Read the corpus within its bounds; skipped notes become warnings."""
    result = ScanResult()
    if not corpus_exists(workspace):
        return result
    directory = corpus_path(workspace)
    try:
        directory_fd = os.open(
            directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _SCAN_OPEN_FLAGS
        )
    except OSError as exc:
        raise InvalidCorpusError(f"{CORPUS_DIRECTORY} cannot be opened: {exc.strerror}") from exc
    try:
        _scan_directory(directory, directory_fd, result)
    finally:
        os.close(directory_fd)
    return result


def _scan_directory(directory: Path, directory_fd: int, result: ScanResult) -> None:
    try:
        # Enumeration still examines every name; only the reading is bounded.
        names = sorted(name for name in os.listdir(directory_fd) if name.endswith(RECORD_SUFFIX))
    except OSError as exc:
        raise InvalidCorpusError(f"{CORPUS_DIRECTORY} cannot be listed: {exc.strerror}") from exc
    if len(names) > LIMITS.scan_names:
        result.truncated = True
        result.warnings.add(
            f"the corpus holds {len(names)} Markdown names; only the first "
            f"{LIMITS.scan_names} in sorted order were scanned"
        )
        names = names[: LIMITS.scan_names]
    accepted_bytes = 0
    for name in names:
        if is_undecodable(name):
            # No record ID can come from it, and the name itself cannot go into JSON as is.
            result.scanned += 1
            result.warnings.add(f"skipped {escape_undecodable(name)}: the name is not UTF-8")
            continue
        record_id = name[: -len(RECORD_SUFFIX)]
        try:
            validate_id(record_id)
            data = _read_entry(directory_fd, name, LIMITS.record_bytes)
        except CompoundError as exc:
            result.scanned += 1
            result.warnings.add(f"skipped {name}: {exc.message}")
            continue
        if accepted_bytes + len(data) > LIMITS.scan_bytes:
            result.truncated = True
            result.warnings.add(
                f"stopped before {name}: the scan reached its {LIMITS.scan_bytes}-byte bound"
            )
            break
        result.scanned += 1
        try:
            parsed = parse_record(data, expected_id=record_id)
        except CompoundError as exc:
            result.warnings.add(f"skipped {name}: {exc.message}")
            continue
        accepted_bytes += len(data)
        stored = StoredRecord(record_id, directory / name, data, parsed)
        result.records.append(stored)
        for warning in record_warnings(stored):
            result.warnings.add(warning)
