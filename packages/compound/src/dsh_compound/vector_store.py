"""The vectors of a workspace's lessons, kept beside the recall cache, outside the corpus.

Records live in the workspace and are committed; their vectors must not be. So the
vectors of hybrid ranking are a cache file, ``$DSH_HOME/cache/compound/<workspace
hash>.vectors`` (beside the recall cache, same folder rules: owner-only, written
atomically, ignored when unsafe, damaged or foreign): for each record id, the SHA-256 of
the exact text that was encoded, its document language, the digest of the record file it
came from (a quick check that needs no text) and its vector, under the model id that
produced them. A vector whose text digest or model id differs from the current one is
stale and encoded again; records that left the corpus are dropped at the next write.

Layout: 8 magic bytes, a 4-byte little-endian header length, a JSON header (model id,
dimension, entries ``[id, text sha256, language, record digest]`` in row order, CRC-32 of
the rows), zero padding to a multiple of 8, then one little-endian float32 row per entry.
500 records (the corpus bound) make 1 MiB of rows.
"""

from __future__ import annotations

import json
import mmap
import os
import stat
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dsh_compound import recall_cache

if TYPE_CHECKING:
    import numpy as np

MAGIC = b"DSHCVEC\x01"
FORMAT = 1
SUFFIX = ".vectors"
MAX_BYTES = 16 * 1024 * 1024
_HEADER_LENGTH_BYTES = 4
_MAX_HEADER_BYTES = 4 * 1024 * 1024


def vectors_path(canonical: str | os.PathLike[str]) -> Path:
    """Where the vectors of the workspace at ``canonical`` live."""
    return recall_cache.cache_directory() / f"{recall_cache.workspace_key(canonical)}{SUFFIX}"


class StoredVectors:
    """Vectors read from the file: by id, ``(text digest, language, row of matrix, record
    digest)``."""

    __slots__ = ("dimension", "matrix", "model", "rows")

    def __init__(
        self,
        model: str,
        dimension: int,
        rows: dict[str, tuple[str, str, int, str]],
        matrix: np.ndarray[Any, np.dtype[np.float32]],
    ) -> None:
        self.model = model
        self.dimension = dimension
        self.rows = rows
        self.matrix = matrix


def load(path: Path, workspace: str, model: str, dimension: int) -> StoredVectors | None:
    """The vectors at ``path`` for ``workspace`` made by ``model``, or None."""
    if not recall_cache.directory_is_private(path.parent):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if (
            not stat.S_ISREG(info.st_mode)
            or not recall_cache.is_mine(info)
            or info.st_mode & 0o077
            or info.st_nlink != 1
            or not 16 <= info.st_size <= MAX_BYTES
        ):
            return None
        mapping = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    try:
        return _parse(mapping, workspace, model, dimension)
    except (ValueError, TypeError, KeyError, IndexError, UnicodeDecodeError):
        return None


def _parse(mapping: mmap.mmap, workspace: str, model: str, dimension: int) -> StoredVectors | None:
    from dsh_common.embedding import matrix_from_bytes  # noqa: PLC0415 - numpy

    if mapping[:8] != MAGIC:
        raise ValueError("not a vectors file")
    length = int.from_bytes(mapping[8:12], "little")
    if not 2 <= length <= min(_MAX_HEADER_BYTES, len(mapping) - 12):
        raise ValueError("bad header length")
    header = json.loads(mapping[12 : 12 + length])
    if (
        not isinstance(header, dict)
        or header.get("format") != FORMAT
        or header.get("workspace") != workspace
        or header.get("model") != model
        or header.get("dimension") != dimension
        or not isinstance(header.get("entries"), list)
    ):
        return None
    entries = header["entries"]
    start = _align(12 + length)
    size = len(entries) * dimension * 4
    if start + size != len(mapping):
        raise ValueError("the rows do not match the entries")
    rows_view = memoryview(mapping)[start : start + size]
    if zlib.crc32(rows_view) != header.get("crc32"):
        raise ValueError("the rows are damaged")
    rows: dict[str, tuple[str, str, int, str]] = {}
    for row, entry in enumerate(entries):
        record_id, digest, language, source = entry
        rows[str(record_id)] = (str(digest), str(language), row, str(source))
    matrix = matrix_from_bytes(rows_view, dimension)
    return StoredVectors(model, dimension, rows, matrix)


def render(
    workspace: str,
    model: str,
    entries: list[tuple[str, str, str, str]],
    matrix: np.ndarray[Any, np.dtype[np.float32]],
) -> bytes:
    """The file bytes for ``entries`` (id, text digest, language, record digest) and rows."""
    from dsh_common.embedding import matrix_to_bytes  # noqa: PLC0415 - numpy

    rows = matrix_to_bytes(matrix) if len(entries) else b""
    header = {
        "format": FORMAT,
        "workspace": workspace,
        "model": model,
        "dimension": int(matrix.shape[1]),
        "crc32": zlib.crc32(rows),
        "entries": [list(entry) for entry in entries],
    }
    encoded = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    head = MAGIC + len(encoded).to_bytes(_HEADER_LENGTH_BYTES, "little") + encoded
    return head + bytes(_align(len(head)) - len(head)) + rows


def _align(value: int) -> int:
    return (value + 7) // 8 * 8


def save(path: Path, data: bytes) -> bool:
    """Write the vectors file atomically, owner-only; False when it cannot be kept."""
    if len(data) > MAX_BYTES:
        return False
    return recall_cache.save(path, data)
