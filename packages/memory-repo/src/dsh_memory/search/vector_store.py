"""The vectors of hybrid ranking: one per valid record, in a file beside the search index.

``.sync/search-vectors.sqlite`` (0600, git-excluded) is a file of its own: the lexical path
never opens it (nor imports numpy), the search index keeps its size, and a store of 10,000
records (~20 MB: 2,048 bytes a vector) is measured apart from it. Vectors are derived data
like the index; deleting the file only costs the time to encode them again.

Tables:

- ``meta``: the schema version, the model id the vectors were made with and the search
  index generation they were last brought in step with (:mod:`dsh_memory.search.vector_sync`);
- ``vectors``: per record (keyed by its path) its slot, the search index's change signature
  of the file it was read from, the SHA-256 of the exact text encoded, the model id, the
  text's language (:func:`dsh_common.embedding.detect_language`) and its expiry day (for the
  scope filter of semantic-only hits);
- ``blocks``: the vectors themselves, up to :data:`BLOCK_ROWS` slots per row as
  little-endian float32 (a block grows by doubling), with the keys (paths), language and
  folder codes of its slots. A process loads the whole matrix and its keys with a handful of reads
  instead of one row per record (10,000 rows of 2 KB cost ~35 ms to fetch and stack; ten
  2 MB blocks in 64 KB pages a few), and a new vector is written in place into its block
  (SQLite's incremental blob I/O). Slots are
  dense: a removed record's slot takes the last slot's vector, so the matrix is the first
  ``count`` rows of the blocks in order.

Writers use one SQLite transaction each (rollback journal); readers get one consistent
state in a read transaction.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dsh_common.embedding import DIMENSION, SemanticIndex, vector_to_bytes
from dsh_common.embedding.language import LANGUAGES
from dsh_common.embedding.vectors import STORED_DTYPE, Matrix
from dsh_memory.search import index_store

VECTORS_NAME = "search-vectors.sqlite"
SCHEMA_VERSION = "1"
BLOCK_ROWS = 1024
VECTOR_BYTES = DIMENSION * 4
BLOCK_BYTES = BLOCK_ROWS * VECTOR_BYTES
GIT_EXCLUDE_ENTRIES = (".sync/search-vectors.sqlite", ".sync/search-vectors.sqlite-journal")

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE vectors (
    path TEXT PRIMARY KEY,
    slot INTEGER NOT NULL,
    signature INTEGER NOT NULL,
    text_sha256 BLOB NOT NULL,
    model_id TEXT NOT NULL,
    language TEXT NOT NULL,
    expires_on TEXT
) WITHOUT ROWID;
CREATE UNIQUE INDEX vectors_slot ON vectors(slot);
CREATE TABLE blocks (
    block INTEGER PRIMARY KEY,
    data BLOB NOT NULL,
    keys BLOB NOT NULL,
    languages BLOB NOT NULL,
    folders BLOB NOT NULL
);
"""
#: Large pages: a block of 1,024 vectors (2 MB) is a chain of 32 pages, not 512.
PAGE_SIZE = 65536
#: How much of the store a reader maps (SQLite's mmap_size) instead of copying it in.
MAP_BYTES = 1 << 30


class VectorStoreError(Exception):  # internal: the caller ranks lexically and says why
    """The vector store cannot be read or written."""


def vectors_path(root: Path) -> Path:
    return root / ".sync" / VECTORS_NAME


@dataclass(frozen=True)
class Stored:
    """One record's row, without its vector."""

    slot: int
    signature: int
    text_sha256: bytes
    model_id: str


@contextlib.contextmanager
def open_store(root: Path) -> Iterator[sqlite3.Connection]:
    """A read-write connection to the store, created (owner-only) when missing.

    Never through a link: the path must be a regular file (or absent) before and after
    SQLite opens it.
    """
    sync = index_store.sync_directory(root)
    path = sync / VECTORS_NAME
    index_store.ensure_git_exclude(root, GIT_EXCLUDE_ENTRIES)
    try:
        before = path.lstat()
    except FileNotFoundError:
        before = None
    if before is not None and not stat.S_ISREG(before.st_mode):
        path.unlink()  # a link or other file in its place is replaced, never followed
        before = None
    if before is None:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        os.close(descriptor)
    with index_store.connect(path, readonly=False) as connection:
        connection.execute("PRAGMA schema_version").fetchone()
        after = path.lstat()
        if before is not None and (after.st_ino, after.st_dev) != (before.st_ino, before.st_dev):
            raise VectorStoreError("the vector store was replaced while it was opened")
        connection.execute("PRAGMA synchronous = NORMAL")
        connection.execute("BEGIN IMMEDIATE")
        try:
            if connection.execute("SELECT count(*) FROM sqlite_schema").fetchone()[0] == 0:
                connection.execute("COMMIT")
                connection.execute(f"PRAGMA page_size = {PAGE_SIZE}")
                connection.execute("BEGIN IMMEDIATE")
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        connection.execute(statement)
                write_meta(connection, {"schema_version": SCHEMA_VERSION})
            elif read_meta(connection).get("schema_version") != SCHEMA_VERSION:
                raise VectorStoreError("the vector store has another schema")
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise
        yield connection


def read_meta(connection: sqlite3.Connection) -> dict[str, str]:
    return dict(connection.execute("SELECT key, value FROM meta").fetchall())


def write_meta(connection: sqlite3.Connection, values: dict[str, str]) -> None:
    """Set ``values`` and a new generation (what a process's cached matrix is keyed by)."""
    values = {**values, "generation": os.urandom(8).hex()}
    connection.executemany(
        "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", sorted(values.items())
    )


def stored_rows(connection: sqlite3.Connection) -> dict[str, Stored]:
    return {
        path: Stored(slot, signature, digest, model)
        for path, slot, signature, digest, model in connection.execute(
            "SELECT path, slot, signature, text_sha256, model_id FROM vectors"
        )
    }


def _count(connection: sqlite3.Connection) -> int:
    (count,) = connection.execute("SELECT count(*) FROM vectors").fetchone()
    return int(count)


def _write_slot(connection: sqlite3.Connection, slot: int, data: bytes) -> None:
    block, row = divmod(slot, BLOCK_ROWS)
    end = (row + 1) * VECTOR_BYTES
    found = connection.execute("SELECT data FROM blocks WHERE block = ?", (block,)).fetchone()
    if found is None:
        connection.execute(
            "INSERT INTO blocks(block, data, keys, languages, folders)"
            " VALUES (?, zeroblob(?), x'', x'', x'')",
            (block, end),
        )
    elif len(found[0]) < end:
        # A block grows by doubling up to BLOCK_ROWS vectors: a memory of a few records
        # keeps a file of a few kilobytes, a growing one rewrites each block a few times.
        size = min(BLOCK_BYTES, max(end, 2 * len(found[0])))
        grown = bytes(found[0]) + bytes(size - len(found[0]))
        connection.execute("UPDATE blocks SET data = ? WHERE block = ?", (grown, block))
    with connection.blobopen("blocks", "data", block) as blob:
        blob.seek(row * VECTOR_BYTES)
        blob.write(data)


def _read_slot(connection: sqlite3.Connection, slot: int) -> bytes:
    block, row = divmod(slot, BLOCK_ROWS)
    with connection.blobopen("blocks", "data", block, readonly=True) as blob:
        blob.seek(row * VECTOR_BYTES)
        return blob.read(VECTOR_BYTES)


class Writer:
    """The changes of one write transaction to the store. :meth:`finish` (before the commit)
    writes the keys and languages of every block whose slots changed."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self.connection = connection
        self.touched: set[int] = set()

    def put(
        self,
        path: str,
        vector: Any,
        *,
        signature: int,
        text_sha256: bytes,
        model_id: str,
        language: str,
        expires_on: str | None,
    ) -> None:
        """Store ``path``'s vector (a new slot, or its own when it has one)."""
        connection = self.connection
        row = connection.execute("SELECT slot FROM vectors WHERE path = ?", (path,)).fetchone()
        slot = _count(connection) if row is None else int(row[0])
        _write_slot(connection, slot, vector_to_bytes(vector))
        connection.execute(
            "INSERT OR REPLACE INTO vectors(path, slot, signature, text_sha256, model_id,"
            " language, expires_on) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (path, slot, signature, text_sha256, model_id, language, expires_on),
        )
        self.touched.add(slot // BLOCK_ROWS)

    def refresh(self, path: str, signature: int, expires_on: str | None) -> None:
        """The record's file changed but not the text encoded: its signature and expiry."""
        self.connection.execute(
            "UPDATE vectors SET signature = ?, expires_on = ? WHERE path = ?",
            (signature, expires_on, path),
        )

    def remove(self, paths: Sequence[str]) -> None:
        """Remove records; the last slot's vector moves into each freed slot (dense slots)."""
        connection = self.connection
        for path in paths:
            row = connection.execute("SELECT slot FROM vectors WHERE path = ?", (path,)).fetchone()
            if row is None:
                continue
            freed = int(row[0])
            connection.execute("DELETE FROM vectors WHERE path = ?", (path,))
            last = _count(connection)
            if freed != last:
                connection.execute("UPDATE vectors SET slot = ? WHERE slot = ?", (freed, last))
                _write_slot(connection, freed, _read_slot(connection, last))
            self.touched.update((freed // BLOCK_ROWS, last // BLOCK_ROWS))
        blocks_needed = -(-_count(connection) // BLOCK_ROWS)
        connection.execute("DELETE FROM blocks WHERE block >= ?", (blocks_needed,))

    def finish(self) -> None:
        connection = self.connection
        for block in sorted(self.touched):
            rows = connection.execute(
                "SELECT path, language FROM vectors WHERE slot BETWEEN ? AND ? ORDER BY slot",
                (block * BLOCK_ROWS, (block + 1) * BLOCK_ROWS - 1),
            ).fetchall()
            keys = "\0".join(path for path, _language in rows).encode("utf-8", "surrogatepass")
            codes = bytes(LANGUAGES.index(language) for _path, language in rows)
            folders = bytes(
                index_store.FOLDER_NUMBERS[path.split("/", 1)[0]] for path, _language in rows
            )
            connection.execute(
                "UPDATE blocks SET keys = ?, languages = ?, folders = ? WHERE block = ?",
                (keys, codes, folders, block),
            )
        self.touched.clear()


@dataclass(frozen=True)
class Loaded:
    """Every stored vector as a :class:`SemanticIndex`, with what the scope filter needs."""

    index: SemanticIndex
    folders: np.ndarray[Any, np.dtype[np.int8]]  # index_store.FOLDER_NUMBERS of each row
    expires: dict[int, str]  # row -> expiry day, for the few records that expire


def load(connection: sqlite3.Connection) -> Loaded:
    """The matrix and its keys, read in one transaction; raises :class:`VectorStoreError`
    for a store that is not what this module writes (the caller then rebuilds it)."""
    blocks = connection.execute(
        "SELECT block, data, keys, languages, folders FROM blocks ORDER BY block"
    ).fetchall()
    keys: list[str] = []
    codes: list[bytes] = []
    places: list[bytes] = []
    parts: list[bytes] = []
    for number, (block, data, names, languages, folders) in enumerate(blocks):
        block_keys = bytes(names).decode("utf-8", "surrogatepass").split("\0") if names else []
        rows = len(block_keys)
        last = number == len(blocks) - 1
        if (
            block != number
            or rows != len(languages)
            or rows != len(folders)
            or (not last and (rows != BLOCK_ROWS or len(data) != BLOCK_BYTES))
            or len(data) < rows * VECTOR_BYTES
        ):
            raise VectorStoreError("the vector blocks are not what this version writes")
        keys += block_keys
        codes.append(bytes(languages))
        places.append(bytes(folders))
        parts.append(data)
    language_codes = np.frombuffer(b"".join(codes), dtype=np.int8)
    folder_codes = np.frombuffer(b"".join(places), dtype=np.int8)
    positions = dict(zip(keys, range(len(keys)), strict=True))
    if (
        len(positions) != len(keys)
        or (language_codes >= len(LANGUAGES)).any()
        or (folder_codes >= len(index_store.FOLDERS_BY_NUMBER)).any()
    ):
        raise VectorStoreError("the vector keys are not what this version writes")
    # One copy, from the fetched blocks into the matrix (a join and a slice made two more).
    matrix: Matrix = np.empty((len(keys), DIMENSION), dtype=np.float32)
    for number, data in enumerate(parts):
        start = number * BLOCK_ROWS
        rows = min(BLOCK_ROWS, len(keys) - start)
        matrix[start : start + rows] = np.frombuffer(
            data, dtype=STORED_DTYPE, count=rows * DIMENSION
        ).reshape(rows, DIMENSION)
    if not np.isfinite(matrix).all():
        raise VectorStoreError("a stored vector has a component that is not finite")
    # SemanticIndex.build would check and recompute what the writer stored: made directly.
    index = SemanticIndex(
        tuple(keys),
        matrix,
        tuple(LANGUAGES[code] for code in language_codes.tolist()),
        positions,
        language_codes,
    )
    expiring = connection.execute(
        "SELECT slot, expires_on FROM vectors WHERE expires_on IS NOT NULL"
    ).fetchall()
    return Loaded(index, folder_codes, {int(slot): str(day) for slot, day in expiring})


def discard(root: Path) -> None:
    """Remove a store that cannot be used; the next sync encodes every record again."""
    for name in (VECTORS_NAME, VECTORS_NAME + "-journal"):
        with contextlib.suppress(FileNotFoundError):
            (root / ".sync" / name).unlink()
