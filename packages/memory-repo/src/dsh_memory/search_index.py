"""The search index: a derived SQLite FTS5 cache that narrows search candidates.

``.sync/search-index.sqlite`` (0600, git-excluded) holds every record's parsed form (the
exact :class:`~dsh_memory.records.Record` a scan would build) plus an FTS5 table of its
*character grams*: every distinct letter/number unigram, bigram and trigram of the record's
lowercased searchable text, each encoded as an ASCII token (``u4e00``, ``b63x61``,
``t63x61x63``). A query term (letters and numbers only, see ``search.query_terms``) can only
be a substring of a record that contains all of the term's trigrams (bigram for two
characters, unigram for one), so ``OR`` over terms of ``AND`` over a term's grams returns a
superset of the records that score above zero - for Chinese bigrams as well as Latin words,
which a word tokenizer or FTS5's trigram tokenizer (no 1-2 character terms) could not
promise. The search then scores only those candidates with the same code a scan uses, so the
index changes speed, never results.

Freshness: the index stores the payload fingerprint (``records.fingerprint``: every record
path with its size, mtime, ctime and inode from ``lstat``; about 10 ms for 10,000 files,
no git process). When the fingerprint differs the index is brought up to date - the old file
is copied to ``.sync/.search-index.<pid>.<uuid>.tmp``, changed records are replaced,
unchanged ones kept, and the copy is renamed over the index (atomic: readers see the old or
the new file, never a half-written one). A missing index is built the same way.

Degradation: when the index cannot be read (corrupt file, wrong schema, a symlink in its
place), it is rebuilt; when it cannot be written (no ``.sync``, read-only disk) or SQLite
fails anywhere, search falls back to scanning the files - with the same results.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import stat
import time
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from dsh_common import jsonio
from dsh_memory.records import (
    RECORD_FOLDERS,
    SCOPES,
    PayloadEntry,
    Record,
    fingerprint,
    load_record,
    walk_payload,
)

INDEX_NAME = "search-index.sqlite"
INDEX_SCHEMA_VERSION = "1"
TMP_PREFIX = ".search-index."
TMP_SUFFIX = ".tmp"
GIT_EXCLUDE_ENTRIES = (".sync/search-index.sqlite", ".sync/.search-index.*.tmp")
#: A term longer than this is narrowed by its first trigrams only (still a superset).
MAX_GRAMS_PER_TERM = 12
#: Terms per FTS5 statement; more are run in batches and the row ids united.
TERMS_PER_STATEMENT = 32
#: Abandoned temporaries older than this are removed by the next rebuild.
STALE_TMP_SECONDS = 600

_RUN_SPLIT = re.compile(r"[\W_]+")


def index_path(root: Path) -> Path:
    return root / ".sync" / INDEX_NAME


_GRAM_TAGS = {1: "u", 2: "b", 3: "t"}


def _encode(gram: str) -> str:
    # ASCII letters and digits only, so the "ascii" tokenizer keeps each gram one token.
    return _GRAM_TAGS[len(gram)] + "x".join(f"{ord(char):x}" for char in gram)


def document_grams(searchable_lower: str) -> str:
    """The record's distinct 1-, 2- and 3-character grams of letters/numbers, encoded."""
    grams: set[str] = set()
    for run in _RUN_SPLIT.split(searchable_lower):
        length = len(run)
        for start in range(length):
            grams.add(run[start])
            if start + 1 < length:
                grams.add(run[start : start + 2])
            if start + 2 < length:
                grams.add(run[start : start + 3])
    return " ".join(sorted(_encode(gram) for gram in grams))


def term_grams(term: str) -> list[str]:
    """The grams every record containing ``term`` must have (capped, still a superset)."""
    if len(term) <= 2:
        return [_encode(term)]
    trigrams = dict.fromkeys(term[start : start + 3] for start in range(len(term) - 2))
    return [_encode(gram) for gram in list(trigrams)[:MAX_GRAMS_PER_TERM]]


def _match_expression(terms: Iterable[str]) -> str:
    clauses = []
    for term in dict.fromkeys(terms):
        grams = " AND ".join(f'"{gram}"' for gram in term_grams(term))
        clauses.append(f"({grams})")
    return " OR ".join(clauses)


_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE records (
    rowid INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    folder TEXT NOT NULL,
    signature TEXT NOT NULL,
    gram_text TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX records_folder ON records(folder);
CREATE VIRTUAL TABLE grams USING fts5(g, content='', detail='none', tokenize='ascii');
"""


class IndexUnavailable(Exception):  # an internal signal, never raised to callers
    """The index could not be read or written; the caller scans instead."""


def _sync_directory(root: Path) -> Path:
    sync = root / ".sync"
    try:
        info = sync.lstat()
    except OSError as exc:
        raise IndexUnavailable(".sync is missing") from exc
    if not stat.S_ISDIR(info.st_mode):
        raise IndexUnavailable(".sync is not a directory")
    return sync


@contextlib.contextmanager
def _connect(path: Path, *, readonly: bool) -> Iterator[sqlite3.Connection]:
    if readonly:
        uri = f"file:{path.as_posix()}?mode=ro"
        connection = sqlite3.connect(uri, uri=True, isolation_level=None)
    else:
        connection = sqlite3.connect(str(path), isolation_level=None)
    try:
        yield connection
    finally:
        connection.close()


def _read_meta(connection: sqlite3.Connection) -> dict[str, str]:
    return dict(connection.execute("SELECT key, value FROM meta").fetchall())


def _existing_index(path: Path) -> bool:
    """A regular file (not a link) is there; a link is treated as a missing index."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return False
    return stat.S_ISREG(info.st_mode)


def _fresh_fingerprint(path: Path) -> str | None:
    if not _existing_index(path):
        return None
    try:
        with _connect(path, readonly=True) as connection:
            meta = _read_meta(connection)
    except sqlite3.Error:
        return None
    if meta.get("schema_version") != INDEX_SCHEMA_VERSION:
        return None
    return meta.get("fingerprint")


def _remove_stale_temporaries(sync: Path) -> None:
    now = time.time()
    with contextlib.suppress(OSError), os.scandir(sync) as iterator:
        for child in iterator:
            if not (child.name.startswith(TMP_PREFIX) and child.name.endswith(TMP_SUFFIX)):
                continue
            with contextlib.suppress(OSError):
                if now - child.stat(follow_symlinks=False).st_mtime > STALE_TMP_SECONDS:
                    os.unlink(child.path)


def _new_temporary(sync: Path) -> Path:
    temporary = sync / f"{TMP_PREFIX}{os.getpid()}.{uuid.uuid4().hex}{TMP_SUFFIX}"
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    os.close(descriptor)
    return temporary


def _copy_into(source: Path, temporary: Path) -> None:
    flags = os.O_RDONLY | os.O_NOFOLLOW
    source_fd = os.open(source, flags)
    try:
        target_fd = os.open(temporary, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW)
        try:
            while chunk := os.read(source_fd, 1 << 20):
                os.write(target_fd, chunk)
        finally:
            os.close(target_fd)
    finally:
        os.close(source_fd)


def _insert(connection: sqlite3.Connection, records: Iterable[Record]) -> None:
    for record in records:
        grams = document_grams(record.searchable().lower()) if record.valid else ""
        cursor = connection.execute(
            "INSERT INTO records(path, folder, signature, gram_text, data) VALUES (?, ?, ?, ?, ?)",
            (record.path, record.folder, record.signature, grams, jsonio.dumps(record.to_row())),
        )
        if grams:
            connection.execute(
                "INSERT INTO grams(rowid, g) VALUES (?, ?)", (cursor.lastrowid, grams)
            )


def _apply_changes(connection: sqlite3.Connection, root: Path, entries: list[PayloadEntry]) -> int:
    """Bring the tables in line with ``entries``; returns how many records were (re)read."""
    wanted = {entry.path: entry for entry in entries}
    stale: list[tuple[int, str, str]] = []
    for rowid, path, signature, grams in connection.execute(
        "SELECT rowid, path, signature, gram_text FROM records"
    ):
        entry = wanted.get(path)
        if entry is not None and entry.signature == signature:
            del wanted[path]
        else:
            stale.append((rowid, path, grams))
    for rowid, _path, grams in stale:
        if grams:
            # Contentless FTS5: a row is removed by replaying the text it was indexed with.
            connection.execute(
                "INSERT INTO grams(grams, rowid, g) VALUES ('delete', ?, ?)", (rowid, grams)
            )
        connection.execute("DELETE FROM records WHERE rowid = ?", (rowid,))
    loaded = (load_record(root, entry) for entry in wanted.values())
    _insert(connection, (record for record in loaded if record is not None))
    return len(wanted)


def update_index(root: Path, entries: list[PayloadEntry] | None = None) -> str:
    """Make ``.sync/search-index.sqlite`` match the payload; returns the new fingerprint.

    Raises :class:`IndexUnavailable` when the index cannot be written.
    """
    sync = _sync_directory(root)
    if entries is None:
        entries = walk_payload(root)
    current = fingerprint(entries)
    path = index_path(root)
    _remove_stale_temporaries(sync)
    try:
        temporary = _new_temporary(sync)
    except OSError as exc:
        raise IndexUnavailable(f"cannot create an index temporary: {exc}") from exc
    try:
        reuse = _fresh_fingerprint(path) is not None
        if reuse:
            _copy_into(path, temporary)
        with _connect(temporary, readonly=False) as connection:
            # A private temporary renamed into place: no journal is needed for safety.
            connection.execute("PRAGMA journal_mode = OFF")
            connection.execute("PRAGMA synchronous = OFF")
            if not reuse:
                connection.executescript(_SCHEMA)
            connection.execute("BEGIN")
            _apply_changes(connection, root, entries)
            connection.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?),"
                " ('fingerprint', ?)",
                (INDEX_SCHEMA_VERSION, current),
            )
            connection.execute("COMMIT")
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    except (OSError, sqlite3.Error) as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise IndexUnavailable(f"cannot write the search index: {exc}") from exc
    _ensure_git_exclude(root)
    return current


def _ensure_git_exclude(root: Path) -> None:
    from dsh_memory.usage import ensure_git_exclude  # noqa: PLC0415 - shared helper

    with contextlib.suppress(OSError):
        ensure_git_exclude(root, GIT_EXCLUDE_ENTRIES)


# Only "?" placeholders are appended to these statements: every value is a bound parameter.
_CANDIDATES_SQL = (
    "SELECT records.rowid, path, signature, data FROM grams"
    " JOIN records ON records.rowid = grams.rowid WHERE grams MATCH ? AND folder IN "
)


def _query_index(path: Path, terms: list[str], folders: tuple[str, ...]) -> list[Record]:
    unique_terms = list(dict.fromkeys(terms))
    rowids: set[int] = set()
    records: list[Record] = []
    placeholders = ", ".join("?" for _ in folders)
    with _connect(path, readonly=True) as connection:
        for start in range(0, len(unique_terms), TERMS_PER_STATEMENT):
            expression = _match_expression(unique_terms[start : start + TERMS_PER_STATEMENT])
            rows = connection.execute(_CANDIDATES_SQL + f"({placeholders})", (expression, *folders))
            for rowid, record_path, signature, data in rows:
                if rowid in rowids:
                    continue
                rowids.add(rowid)
                row: dict[str, Any] = jsonio.loads(data, what="search index row")
                records.append(Record.from_row(record_path, signature, row))
    return records


def _scan(root: Path, folders: tuple[str, ...]) -> list[Record]:
    loaded = (load_record(root, entry) for entry in walk_payload(root, folders))
    return [record for record in loaded if record is not None]


def candidate_records(
    root: Path, terms: list[str], scope: str, *, use_index: bool = True
) -> tuple[list[Record], dict[str, Any]]:
    """Records that may match ``terms`` in ``scope`` (a superset), and how they were found."""
    folders = SCOPES[scope]
    if not use_index:
        return _scan(root, folders), {"mode": "scan", "indexState": "disabled"}
    path = index_path(root)
    entries = walk_payload(root, RECORD_FOLDERS)
    state = "fresh"
    try:
        if _fresh_fingerprint(path) != fingerprint(entries):
            update_index(root, entries)
            state = "rebuilt"
        return _query_index(path, terms, folders), {"mode": "index", "indexState": state}
    except (IndexUnavailable, sqlite3.Error, OSError, ValueError):
        return _scan(root, folders), {"mode": "scan", "indexState": "unavailable"}


def _all_indexed(path: Path, folders: tuple[str, ...]) -> list[Record]:
    placeholders = ", ".join("?" for _ in folders)
    with _connect(path, readonly=True) as connection:
        # Only "?" placeholders are interpolated: the folders are bound parameters.
        sql = f"SELECT path, signature, data FROM records WHERE folder IN ({placeholders})"  # noqa: S608
        rows = connection.execute(sql, folders).fetchall()
    return [
        Record.from_row(record_path, signature, jsonio.loads(data, what="search index row"))
        for record_path, signature, data in rows
    ]


def scope_records(
    root: Path, scope: str, *, use_index: bool = True
) -> tuple[list[Record], dict[str, Any]]:
    """Every record in ``scope`` (valid or not), from the index when it is usable."""
    folders = SCOPES[scope]
    if not use_index:
        return _scan(root, folders), {"mode": "scan", "indexState": "disabled"}
    path = index_path(root)
    entries = walk_payload(root, RECORD_FOLDERS)
    state = "fresh"
    try:
        if _fresh_fingerprint(path) != fingerprint(entries):
            update_index(root, entries)
            state = "rebuilt"
        return _all_indexed(path, folders), {"mode": "index", "indexState": state}
    except (IndexUnavailable, sqlite3.Error, OSError, ValueError):
        return _scan(root, folders), {"mode": "scan", "indexState": "unavailable"}
