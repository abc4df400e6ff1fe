"""Capture: write a record exclusively, or replace one by compare-and-swap.

The order of a capture is chosen so that bad input changes nothing on disk: the draft,
the replace digest and every source file are validated and fingerprinted before the corpus
directory is created or any lock is taken.

Cooperating writers serialise on ``<id>.lock`` (exclusive create; JSON with pid and
process start time; removed in ``finally``). A lock that is already there - held by a live
capture or left by a crashed one - makes capture fail with an error naming the lock, its
pid, its start time and whether that pid still runs. It is never removed automatically.

A new record is created with ``O_EXCL``. A replacement is compare-and-swap on the digest
of the whole existing file: the digest is checked when the lock is taken and again
immediately before the rename, after the new bytes are durable in a temporary file in the
same directory. A hard-linked or symlinked record is refused, since replacing it would
silently split the link or write elsewhere.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from dsh_common import errors as common_errors
from dsh_common import paths as common_paths
from dsh_common.io import atomic_write, create_exclusive
from dsh_common.locks import acquire_lock, utc_now_iso
from dsh_compound.corpus import read_record_bytes
from dsh_compound.draft import validate_draft
from dsh_compound.errors import (
    DigestMismatchError,
    HardLinkedRecordError,
    InvalidCorpusError,
    InvalidDigestError,
    RecordExistsError,
    RecordNotFoundError,
    RecordTooLargeError,
    SymlinkRejectedError,
    storage_error,
    storage_errors,
    translate_common_errors,
)
from dsh_compound.evidence import UNKNOWN, fingerprint_sources
from dsh_compound.limits import CORPUS_DIRECTORY, LIMITS
from dsh_compound.record import build_metadata, is_sha256, parse_record, render_record, sha256
from dsh_compound.scanning import RECORD_SUFFIX, corpus_exists, corpus_path
from dsh_compound.workspace import select_workspace

LOCK_SUFFIX = ".lock"


def _ensure_corpus(workspace: common_paths.Workspace) -> Path:
    """Create the corpus directory if needed, refusing links before and after."""
    if not corpus_exists(workspace):
        directory = corpus_path(workspace)
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            storage = storage_error(exc, f"create {CORPUS_DIRECTORY}")
            if storage is not None:
                raise storage from exc
            raise InvalidCorpusError(f"cannot create {CORPUS_DIRECTORY}: {exc.strerror}") from exc
        # A concurrent writer could have put a link in place between the check and mkdir.
        corpus_exists(workspace)
    return corpus_path(workspace)


def _check_replaceable(location: Path, record_id: str) -> int:
    """Refuse a link or a hard-linked file at ``location``; return its permission bits."""
    try:
        info = os.lstat(location)
    except FileNotFoundError as exc:
        raise RecordNotFoundError(f"no record {record_id!r} to replace") from exc
    if stat.S_ISLNK(info.st_mode):
        raise SymlinkRejectedError(f"record {record_id!r} is a symbolic link")
    if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
        raise HardLinkedRecordError(
            f"record {record_id!r} has {info.st_nlink} hard links; replacing it would split "
            "them - remove the other links first"
        )
    return stat.S_IMODE(info.st_mode)


def _must_fit(data: bytes, record_id: str) -> bytes:
    """Refuse a rendering over the 64 KiB record limit: every reader would refuse it.

    The draft limit (32 KiB) does not imply the record limit: the record holds each text
    twice (JSON and Markdown) plus 32 file digests, so a valid draft can render to ~70 KiB.
    """
    if len(data) > LIMITS.record_bytes:
        raise RecordTooLargeError(
            f"record {record_id!r} would be {len(data)} bytes, over the "
            f"{LIMITS.record_bytes}-byte record limit (each text is stored twice, as JSON and "
            "as Markdown); shorten the draft's texts or list fewer files"
        )
    return data


def _current_digest_must_be(location: Path, record_id: str, expected: str) -> bytes:
    data = read_record_bytes(location, record_id)
    actual = sha256(data)
    if actual != expected:
        raise DigestMismatchError(
            f"record {record_id!r} has digest {actual}, not {expected}; it changed since you "
            "inspected it - inspect it again and prepare the replacement from that"
        )
    return data


def _replace(
    directory: Path, record_id: str, clean: dict[str, Any], digests: list[str], expected: str
) -> tuple[dict[str, Any], bytes]:
    location = directory / f"{record_id}{RECORD_SUFFIX}"
    mode = _check_replaceable(location, record_id)
    existing = parse_record(_current_digest_must_be(location, record_id, expected))
    metadata = build_metadata(
        clean, digests, created_at=existing.metadata["createdAt"], updated_at=utc_now_iso()
    )
    data = _must_fit(render_record(metadata), record_id)

    def still_the_inspected_record() -> None:
        # Re-check at the last moment, with the new bytes already durable: the lock only
        # binds cooperating captures.
        _check_replaceable(location, record_id)
        _current_digest_must_be(location, record_id, expected)

    with translate_common_errors():
        atomic_write(location, data, mode=mode, precondition=still_the_inspected_record)
    return metadata, data


def _create(
    directory: Path, record_id: str, clean: dict[str, Any], digests: list[str]
) -> tuple[dict[str, Any], bytes]:
    now = utc_now_iso()
    metadata = build_metadata(clean, digests, created_at=now, updated_at=now)
    data = _must_fit(render_record(metadata), record_id)
    try:
        create_exclusive(directory / f"{record_id}{RECORD_SUFFIX}", data)
    except common_errors.AlreadyExistsError as exc:
        raise RecordExistsError(
            f"record {record_id!r} already exists; to update it, inspect it and capture "
            "again with --replace <its digest>"
        ) from exc
    return metadata, data


def capture(
    workspace: str | os.PathLike[str], draft: object, replace: str | None = None
) -> dict[str, Any]:
    """Save ``draft`` as ``docs/solutions/dsh-compound/<id>.md`` in ``workspace``.

    Without ``replace`` an existing record is never touched; with it, the record is
    replaced only if its current digest equals ``replace`` (``createdAt`` is kept).
    Returns ``{id, path, digest, metadata, contentStatus, evidenceStatus}``.
    """
    selected = select_workspace(workspace)
    clean = validate_draft(draft, workspace=selected)
    if replace is not None and not is_sha256(replace):
        raise InvalidDigestError("--replace needs the record's 64-character lowercase hex digest")
    digests = fingerprint_sources(selected, clean["files"])
    record_id = clean["id"]
    # Measure before anything exists on disk; _create and _replace measure the final bytes
    # again (a replacement keeps the old createdAt, whose length may differ).
    now = utc_now_iso()
    _must_fit(
        render_record(build_metadata(clean, digests, created_at=now, updated_at=now)), record_id
    )
    if replace is not None and not corpus_exists(selected):
        raise RecordNotFoundError(f"no record {record_id!r} to replace")
    directory = _ensure_corpus(selected)
    with translate_common_errors(), storage_errors(f"write to {CORPUS_DIRECTORY}"):
        lock = acquire_lock(directory / f"{record_id}{LOCK_SUFFIX}")
        try:
            if replace is None:
                metadata, data = _create(directory, record_id, clean, digests)
            else:
                metadata, data = _replace(directory, record_id, clean, digests, replace)
        finally:
            lock.release()
    return {
        "id": record_id,
        "path": str(directory / f"{record_id}{RECORD_SUFFIX}"),
        "digest": sha256(data),
        "metadata": metadata,
        "contentStatus": "consistent",
        # Fingerprints were just taken, but the sources may change at any moment after.
        "evidenceStatus": UNKNOWN,
    }
