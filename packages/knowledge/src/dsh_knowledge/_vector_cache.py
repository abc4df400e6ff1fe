"""A workspace's stored vectors as one file a new process maps instead of reading them all.

The prompt hook is a new process per prompt. Reading 10,000 vectors (20 MB) out of the
database and stacking them costs it 40-100 ms, more than the rest of hybrid ranking; mapping
one file of the same numbers costs a few. So the first process that loads a workspace's
vectors from the store writes them to ``$DSH_HOME/cache/knowledge/<key>.vectors`` and later
processes map the file while the ``item_vectors`` signature it records (count, maximum and
sum of ``seq``, first and last item id: it moves with every write or delete, and two
databases never share it) is still the table's. The database stays the only truth: the file
is checked against it on every use, rebuilt when stale, and may be deleted at any time.

Layout: a magic line, an 8-byte little-endian header length, a JSON header (signature,
model, workspace, item ids, languages), zero padding to 64 bytes, then the float32 rows in
item id order. The folder is owner-only and must not be a link; the file must be a regular,
owner-only file with one link, or it is not used (and is replaced by the next write). It
is written atomically (temporary file, fsync, rename).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import mmap
import os
import stat
import struct
from pathlib import Path
from typing import Any, Final

import numpy as np

from dsh_common.embedding.fusion import SemanticIndex
from dsh_common.embedding.identity import DIMENSION

__all__ = ["cache_path", "read", "write"]

MAGIC: Final = b"DSH-KNOWLEDGE-VECTORS\n"
FORMAT: Final = 1
_LENGTH = struct.Struct("<Q")
_ALIGN = 64
MAX_HEADER_BYTES: Final = 64 << 20
_LANGUAGES = frozenset({"zh", "en", "other"})


def cache_path(kind: str, location: str, workspace: str) -> Path:
    """The file of ``workspace``'s vectors in the store at ``location`` (its printable name)."""
    home = os.environ.get("DSH_HOME", "").strip()
    base = Path(home).expanduser() if home else Path.home() / ".dsh"
    key = hashlib.sha256(f"{kind}\0{location}\0{workspace}".encode("utf-8", "surrogatepass"))
    return base / "cache" / "knowledge" / f"{key.hexdigest()[:32]}.vectors"


def _private(info: os.stat_result) -> bool:
    owned = not hasattr(os, "geteuid") or info.st_uid == os.geteuid()
    return owned and not info.st_mode & (stat.S_IRWXG | stat.S_IRWXO)


def read(
    path: Path, signature: tuple[Any, ...], model: str, workspace: str
) -> SemanticIndex | None:
    """The index the file holds, or None when it is missing, stale, unsafe or malformed."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1 or not _private(info):
            return None
        if info.st_size < len(MAGIC) + _LENGTH.size:
            return None
        mapped = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    try:
        return _parse(mapped, signature, model, workspace)
    except (ValueError, TypeError, KeyError, UnicodeDecodeError):
        return None


def _parse(
    mapped: mmap.mmap, signature: tuple[Any, ...], model: str, workspace: str
) -> SemanticIndex | None:
    if mapped[: len(MAGIC)] != MAGIC:
        return None
    start = len(MAGIC) + _LENGTH.size
    (length,) = _LENGTH.unpack(mapped[len(MAGIC) : start])
    if length > MAX_HEADER_BYTES or start + length > len(mapped):
        return None
    header = json.loads(mapped[start : start + length].decode("utf-8"))
    if (
        header.get("format") != FORMAT
        or header.get("signature") != list(signature)
        or header.get("model") != model
        or header.get("workspace") != workspace
        or header.get("dimension") != DIMENSION
    ):
        return None
    ids, languages = header["ids"], header["languages"]
    if not isinstance(ids, list) or not isinstance(languages, list) or len(ids) != len(languages):
        return None
    if not all(isinstance(i, str) for i in ids) or not set(languages) <= _LANGUAGES:
        return None
    offset = _aligned(start + length)
    if len(mapped) != offset + len(ids) * DIMENSION * 4:
        return None
    matrix = np.frombuffer(mapped, dtype="<f4", count=len(ids) * DIMENSION, offset=offset)
    return SemanticIndex.build(ids, matrix.reshape(len(ids), DIMENSION), languages)


def _aligned(offset: int) -> int:
    return -(-offset // _ALIGN) * _ALIGN


def write(
    path: Path, signature: tuple[Any, ...], model: str, workspace: str, index: SemanticIndex
) -> None:
    """Write ``index`` for later processes; a folder that cannot be used is left alone."""
    from dsh_common.io import atomic_write, ensure_private_directory  # noqa: PLC0415

    header = json.dumps(
        {
            "format": FORMAT,
            "signature": list(signature),
            "model": model,
            "workspace": workspace,
            "dimension": DIMENSION,
            "ids": list(index.keys),
            "languages": list(index.languages),
        },
        ensure_ascii=False,
    ).encode("utf-8", "surrogatepass")
    start = len(MAGIC) + _LENGTH.size
    padding = _aligned(start + len(header)) - start - len(header)
    rows = np.ascontiguousarray(index.matrix, dtype="<f4").tobytes()
    data = b"".join([MAGIC, _LENGTH.pack(len(header)), header, b"\0" * padding, rows])
    with contextlib.suppress(OSError, ValueError):
        for folder in (path.parent.parent, path.parent):  # a planted link is never followed
            with contextlib.suppress(FileNotFoundError):
                if stat.S_ISLNK(os.lstat(folder).st_mode):
                    return
        ensure_private_directory(path.parent)
        if not _private(os.lstat(path.parent)):
            return
        atomic_write(path, data, mode=0o600)
