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
import os
import stat
from pathlib import Path

from dsh_common import errors as common_errors
from dsh_common import paths as common_paths
from dsh_common.io import read_bounded
from dsh_compound.draft import validate_id
from dsh_compound.errors import (
    CompoundError,
    MalformedRecordError,
    RecordNotFoundError,
    RecordTooLargeError,
    SymlinkRejectedError,
)
from dsh_compound.limits import LIMITS
from dsh_compound.record import parse_record
from dsh_compound.scanning import (
    RECORD_SUFFIX,
    SCAN_OPEN_FLAGS,
    FileKey,
    Outcome,
    ScanResult,
    StoredRecord,
    assemble,
    corpus_exists,
    corpus_path,
    file_key,
    list_names,
    open_corpus,
)


def read_record(workspace: common_paths.Workspace, record_id: str) -> StoredRecord:
    """Read and parse one record by ID (for inspect and replace), raising on any problem."""
    validate_id(record_id)
    if not corpus_exists(workspace):
        raise RecordNotFoundError(f"no record {record_id!r}: the corpus does not exist")
    location = corpus_path(workspace) / f"{record_id}{RECORD_SUFFIX}"
    data = read_record_bytes(location, record_id)
    return stored_record(location, record_id, data)


def stored_record(location: Path, record_id: str, data: bytes) -> StoredRecord:
    """Parse record bytes read from ``location`` (raises MalformedRecordError)."""
    parsed = parse_record(data, expected_id=record_id)
    return StoredRecord(
        record_id,
        location.parent,
        parsed.metadata,
        parsed.content_status,
        parsed.unknown_keys,
        data=data,
        body=parsed.body,
    )


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


def _read_entry(directory_fd: int, name: str, limit: int) -> tuple[bytes, FileKey | None]:
    """Read corpus entry ``name`` relative to an open directory, with read_bounded's rules.

    Opening relative to the directory descriptor pins the directory that was checked for
    links (a parent swapped for a symlink mid-scan cannot redirect us) and spares the
    kernel a full path walk per record - a scan opens up to 500 of them. Also returns the
    opened file's identity when it did not change while it was read (None otherwise): what
    the recall cache keys the bytes' meaning by.
    """
    try:
        fd = os.open(name, SCAN_OPEN_FLAGS, dir_fd=directory_fd)
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
        data = b"".join(chunks)
        before = file_key(info)
        after = file_key(os.fstat(fd))
        return data, (before if before == after and before[2] == len(data) else None)
    finally:
        os.close(fd)


def scan_corpus(workspace: common_paths.Workspace) -> ScanResult:
    """Read and parse every record within the scan's bounds; skipped notes become warnings.

    This is the cold scan: :func:`dsh_compound.corpus_index.read_corpus` gives the same
    result from the recall cache for files that did not change since they were read.
    """
    if not corpus_exists(workspace):
        return ScanResult()
    directory = corpus_path(workspace)
    with open_corpus(workspace) as directory_fd:
        names = list_names(directory_fd)
        return assemble(names, lambda name: read_outcome(directory, directory_fd, name)[0])


def read_outcome(directory: Path, directory_fd: int, name: str) -> tuple[Outcome, FileKey | None]:
    """Read and parse corpus entry ``name`` (a UTF-8 ``.md`` name) for the scan.

    Also returns the identity of the file that was read, when it held still (see
    :func:`_read_entry`); None when nothing was read or it changed meanwhile.
    """
    record_id = name[: -len(RECORD_SUFFIX)]
    try:
        validate_id(record_id)
        data, key = _read_entry(directory_fd, name, LIMITS.record_bytes)
    except CompoundError as exc:
        return Outcome(None, None, exc.message), None
    try:
        record = stored_record(directory / name, record_id, data)
    except CompoundError as exc:
        return Outcome(len(data), None, exc.message), key
    return Outcome(len(data), record), key
