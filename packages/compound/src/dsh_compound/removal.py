"""Remove: retire a lesson by compare-and-swap on its digest, like ``capture --replace``.

A record is removed only when its current digest is the one the caller inspected, so a
lesson another agent just rewrote is never lost by accident. The same ``<id>.lock`` as
capture serialises cooperating writers; a symlinked or hard-linked record is refused; the
digest is checked when the lock is taken and again immediately before the unlink.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from dsh_common.locks import acquire_lock
from dsh_compound.draft import validate_id
from dsh_compound.errors import (
    DigestMismatchError,
    InvalidDigestError,
    RecordNotFoundError,
    storage_errors,
    translate_common_errors,
)
from dsh_compound.limits import CORPUS_DIRECTORY
from dsh_compound.record import is_sha256
from dsh_compound.scanning import RECORD_SUFFIX, corpus_exists, corpus_path
from dsh_compound.workspace import select_workspace
from dsh_compound.writing import LOCK_SUFFIX, _check_replaceable, _current_digest_must_be


def remove(workspace: str | os.PathLike[str], record_id: str, digest: str) -> dict[str, Any]:
    """Delete ``<id>.md`` if its digest is still ``digest``; ``{id, path, removed, digest}``."""
    selected = select_workspace(workspace)
    record_id = validate_id(record_id)
    if not is_sha256(digest):
        raise InvalidDigestError("--digest needs the record's 64-character lowercase hex digest")
    if not corpus_exists(selected):
        raise RecordNotFoundError(f"no record {record_id!r} to remove")
    directory = corpus_path(selected)
    location = directory / f"{record_id}{RECORD_SUFFIX}"
    with translate_common_errors(), storage_errors(f"remove from {CORPUS_DIRECTORY}"):
        lock = acquire_lock(directory / f"{record_id}{LOCK_SUFFIX}")
        try:
            _still_the_inspected_record(location, record_id, digest)
            # Last check right before the unlink: the lock binds cooperating writers only.
            _still_the_inspected_record(location, record_id, digest)
            os.unlink(location)
        finally:
            lock.release()
    return {"id": record_id, "path": str(location), "removed": True, "digest": digest}


def _still_the_inspected_record(location: Path, record_id: str, digest: str) -> None:
    try:
        _check_replaceable(location, record_id)
        _current_digest_must_be(location, record_id, digest)
    except RecordNotFoundError as exc:
        raise RecordNotFoundError(f"no record {record_id!r} to remove") from exc
    except DigestMismatchError as exc:
        raise DigestMismatchError(
            f"record {record_id!r} changed since you inspected it ({exc.message.split(';')[0]});"
            " inspect it again and remove it with its current digest if it should still go"
        ) from exc
