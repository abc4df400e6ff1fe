"""The recall cache file: where it lives, how it is read safely and written atomically.

Recall, check and both hooks read the whole corpus (up to 500 records, 4 MiB) on every
call, and most records never change between two calls. The cache keeps, per workspace,
what reading each record gave - its parsed metadata, content status, unknown keys, digest
and normalised scored text - keyed by the record file's identity (device, inode, size,
modification and change time in nanoseconds), plus an inverted index of that text
(:mod:`dsh_compound.gram_index`). :mod:`dsh_compound.corpus_index` decides what to trust;
this module only stores and loads.

``$DSH_HOME/cache/compound/<hash of the canonical workspace path>.index`` (``~/.dsh``
without DSH_HOME): outside the workspace, so git never sees it. The folder is created
owner-only (0700) and the file is written owner-only (0600), atomically (a temporary file
renamed over it). A cache is used only when the folder is not a link, both belong to this
user and nobody else can write them, and the file passes structural checks; anything else
- missing, unreadable, damaged, another format, written by another version of the code -
means "no cache": the records are read from the corpus as if it never existed. At most
:data:`MAX_FILES` index files are kept (the least recently written go first), each at most
:data:`MAX_BYTES`.

Layout: 8 magic bytes, a 4-byte little-endian header length, a JSON header (entries,
section offsets, the CRC-32 of everything after the header), zero padding to a multiple of
8, then the sections: the index's sorted gram keys (u64), posting starts (u32), postings
(u16), field offsets (u32) - native byte order, part of the compatibility key - and one
blob of UTF-8 text and metadata JSON. The checksum (under a millisecond for the largest
file) makes a damaged file one that is not used, rather than one that ranks wrongly.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import stat
import sys
import unicodedata
import zlib
from array import array
from pathlib import Path

# Not typing.TYPE_CHECKING: importing typing costs every agent hook ~2 ms of start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAGIC = b"DSHCRC\x00\x01"
#: Bump when what an entry or a section means changes.
FORMAT = 1
SUFFIX = ".index"
MAX_BYTES = 64 * 1024 * 1024
MAX_FILES = 64
_HEADER_LENGTH_BYTES = 4
_MAX_HEADER_BYTES = 8 * 1024 * 1024
#: The modules whose code decides what a record file means (parse, validation, scan rules,
#: normalised text, grams): their size and modification time are part of the cache's key,
#: so an upgrade - or a developer's edit - never meets entries written by other code.
_SEMANTIC_MODULES = (
    "corpus.py",
    "draft.py",
    "gram_index.py",
    "limits.py",
    "record.py",
    "recall_cache.py",
    "scanning.py",
    "scoring.py",
)
#: Sections in file order, with the array type code of their items.
_SECTIONS = {"keys": "Q", "starts": "I", "postings": "H", "fields": "I", "blob": "B"}
_WIDTHS = {name: array(code).itemsize for name, code in _SECTIONS.items()}


def cache_directory() -> Path:
    """``$DSH_HOME/cache/compound`` (``~/.dsh/cache/compound`` when DSH_HOME is unset)."""
    home = os.environ.get("DSH_HOME", "").strip()
    base = Path(home).expanduser() if home else Path.home() / ".dsh"
    return base / "cache" / "compound"


def workspace_key(canonical: str | os.PathLike[str]) -> str:
    """The file-name stem of a workspace's cache files: a hash of its canonical path."""
    return hashlib.sha256(os.fsencode(canonical)).hexdigest()[:32]


def cache_path(canonical: str | os.PathLike[str]) -> Path:
    """Where the recall cache of the workspace at ``canonical`` lives."""
    return cache_directory() / f"{workspace_key(canonical)}{SUFFIX}"


def compatibility_key() -> str:
    """What the code and platform that wrote a cache must share with the reader."""
    here = os.path.dirname(os.path.abspath(__file__))
    stamps = []
    for name in _SEMANTIC_MODULES:
        try:
            info = os.stat(os.path.join(here, name))
        except OSError:
            return ""  # an unusual install: never trust a cache
        stamps.append(f"{info.st_size}.{info.st_mtime_ns}")
    return "|".join(
        [str(FORMAT), sys.byteorder, sys.implementation.name, unicodedata.unidata_version, *stamps]
    )


def is_mine(info: os.stat_result) -> bool:
    """Whether a file or folder belongs to this process's user (where owners exist)."""
    return not hasattr(os, "geteuid") or info.st_uid == os.geteuid()


def directory_is_private(directory: Path) -> bool:
    """The cache folder exists, is not a link, is ours and nobody else may write it; nor is
    its parent (``cache``) a link."""
    try:
        info = os.lstat(directory)
        parent = os.lstat(directory.parent)
    except OSError:
        return False
    return (
        stat.S_ISDIR(info.st_mode)
        and not stat.S_ISLNK(parent.st_mode)
        and is_mine(info)
        and info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) == 0
    )


class LoadedCache:
    """A mapped cache file: its header and typed views of its sections."""

    __slots__ = ("entries", "header", "mapping", "sections", "slots")

    def __init__(self, mapping: mmap.mmap, header: dict[str, Any]) -> None:
        self.mapping = mapping
        self.header = header
        self.slots = int(header["slots"])
        self.entries: list[list[Any]] = header["entries"]
        view = memoryview(mapping)
        self.sections: dict[str, memoryview] = {}
        for name, code in _SECTIONS.items():
            offset, count = header["sections"][name]
            width = _WIDTHS[name]
            if not (isinstance(offset, int) and isinstance(count, int)):
                raise ValueError("bad section")
            if offset % 8 or offset < 0 or count < 0 or offset + count * width > len(mapping):
                raise ValueError(f"section {name} lies outside the file")
            part = view[offset : offset + count * width]
            self.sections[name] = _typed(part, code)
        keys, starts = self.sections["keys"], self.sections["starts"]
        if len(starts) != len(keys) + 1 or (
            len(keys) and starts[-1] != len(self.sections["postings"])
        ):
            raise ValueError("postings do not match their keys")
        if len(self.sections["fields"]) != self.slots * 8:
            raise ValueError("field offsets do not match the slots")

    @property
    def blob_offset(self) -> int:
        """Where the blob starts in the mapping (for ``mmap.find`` over field texts)."""
        return int(self.header["sections"]["blob"][0])

    def metadata(self, where: tuple[int, int]) -> dict[str, Any]:
        """The metadata object stored at ``where`` (offset, length) in the blob."""
        value = json.loads(self.blob(*where))
        if not isinstance(value, dict):
            raise ValueError("cached metadata is not an object")
        return value

    def blob(self, offset: int, length: int) -> bytes:
        """``length`` bytes of the blob from ``offset`` (bounds checked)."""
        part = self.sections["blob"]
        if offset < 0 or length < 0 or offset + length > len(part):
            raise ValueError("blob reference out of range")
        return bytes(part[offset : offset + length])


def _typed(view: memoryview, code: str) -> memoryview:
    """``view`` as items of array type ``code``."""
    if code == "Q":
        return view.cast("Q")
    if code == "I":
        return view.cast("I")
    if code == "H":
        return view.cast("H")
    return view


def load(path: Path, workspace: str, compat: str) -> LoadedCache | None:
    """The cache at ``path`` for ``workspace`` written by compatible code, or None."""
    if not compat or not directory_is_private(path.parent):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if (
            not stat.S_ISREG(info.st_mode)
            or not is_mine(info)
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
        if mapping[:8] != MAGIC:
            raise ValueError("not a recall cache")
        length = int.from_bytes(mapping[8:12], "little")
        if not 2 <= length <= min(_MAX_HEADER_BYTES, len(mapping) - 12):
            raise ValueError("bad header length")
        header = json.loads(mapping[12 : 12 + length])
        if (
            not isinstance(header, dict)
            or header.get("format") != FORMAT
            or header.get("compat") != compat
            or header.get("workspace") != workspace
            or not isinstance(header.get("entries"), list)
            or not isinstance(header.get("sections"), dict)
        ):
            raise ValueError("another cache")
        body = memoryview(mapping)[12 + length :]
        try:
            if zlib.crc32(body) != header.get("crc32"):
                raise ValueError("the sections are damaged")
        finally:
            body.release()
        return LoadedCache(mapping, header)
    except (ValueError, TypeError, KeyError, IndexError, UnicodeDecodeError):
        try:
            mapping.close()
        except BufferError:  # views made before the check failed: garbage collection closes it
            pass
        return None


def render(header: dict[str, Any], sections: dict[str, bytes]) -> bytes:
    """The file bytes for ``header`` (without its ``sections`` offsets) and the sections."""
    # Offsets depend on the header's length, which depends on the offsets' digits: lay the
    # sections out after a header rendered with placeholders as wide as any real offset.
    names = list(_SECTIONS)
    widths = {name: len(sections[name]) // _WIDTHS[name] for name in names}
    placeholder = 10**15
    header = {
        **header,
        "crc32": 2**32,
        "sections": {name: [placeholder, widths[name]] for name in names},
    }
    size = len(json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    start = _align(12 + size)
    offsets = {}
    position = start
    for name in names:
        offsets[name] = position
        position = _align(position + len(sections[name]))
    header["sections"] = {name: [offsets[name], widths[name]] for name in names}
    # Everything after the header: its padding, then each section at its offset.
    body = bytearray(start - 12 - size)
    for name in names:
        body += bytes(offsets[name] - 12 - size - len(body))
        body += sections[name]
    header["crc32"] = zlib.crc32(body)
    encoded = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if len(encoded) > size:
        raise ValueError("the header outgrew its room")
    encoded += b" " * (size - len(encoded))  # the real offsets are never wider
    return MAGIC + len(encoded).to_bytes(_HEADER_LENGTH_BYTES, "little") + encoded + body


def _align(value: int) -> int:
    return (value + 7) // 8 * 8


def save(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` atomically, owner-only; False when it cannot be kept.

    Also used for the vectors file beside it (:mod:`dsh_compound.vector_store`): each kind
    of file is pruned to :data:`MAX_FILES` on its own.
    """
    if len(data) > MAX_BYTES:
        return False
    from dsh_common.io import atomic_write  # noqa: PLC0415 - only when something changed

    directory = path.parent
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not directory_is_private(directory):
            return False
        atomic_write(path, data, mode=0o600, durable=False)
    except (OSError, ValueError):
        return False
    _prune(directory, keep=path)
    return True


def _prune(directory: Path, *, keep: Path) -> None:
    """Remove the least recently written files of ``keep``'s kind beyond :data:`MAX_FILES`."""
    try:
        found = []
        with os.scandir(directory) as listing:
            for entry in listing:
                if entry.name.endswith(keep.suffix) and entry.is_file(follow_symlinks=False):
                    found.append((entry.stat(follow_symlinks=False).st_mtime_ns, entry.path))
    except OSError:
        return
    if len(found) <= MAX_FILES:
        return
    found.sort()
    for _, stale in found[: len(found) - MAX_FILES]:
        if stale != str(keep):
            try:
                os.unlink(stale)
            except OSError:
                pass
