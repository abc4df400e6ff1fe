"""SHA-256 of bytes and of files, streamed and bounded."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from dsh_common.errors import FileTooLargeError
from dsh_common.io import open_regular_nofollow

_CHUNK = 1 << 16


def sha256_bytes(data: bytes) -> str:
    """Lowercase hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike[str], limit: int) -> str:
    """Lowercase hex SHA-256 of a regular file, read in chunks, never following a symlink.

    Raises :class:`FileTooLargeError` as soon as more than ``limit`` bytes have been seen,
    so a huge file costs at most ``limit`` bytes of reading, not its whole size.
    """
    return sha256_descriptor(open_regular_nofollow(Path(path)), limit, path)


def sha256_descriptor(fd: int, limit: int, name: str | os.PathLike[str] = "file") -> str:
    """:func:`sha256_file` of a descriptor already opened (and checked) by the caller.

    The descriptor is closed, whatever happens. ``name`` is only for the error message.
    """
    hasher = hashlib.sha256()
    seen = 0
    with os.fdopen(fd, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            seen += len(chunk)
            if seen > limit:
                raise FileTooLargeError(
                    f"{name} is larger than {limit} bytes", details={"limit": limit}
                )
            hasher.update(chunk)
    return hasher.hexdigest()
