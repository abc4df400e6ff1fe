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
path with its size, mtime, ctime and inode from ``lstat``) and, for payloads of 3,000
records or more in a git repository, the cheaper git-based key of ``payload_state`` (walking
10,000 files costs ~50 ms; two git processes ~20 ms). Each search recomputes the key and
compares. When it differs the index is brought up to date - the old file is copied to
``.sync/.search-index.<pid>.<uuid>.tmp``, changed records are replaced, unchanged ones kept,
and the copy is renamed over the index (atomic: readers see the old or the new file, never
a half-written one). A missing index is built the same way.

Scoring: for up to 64 terms SQLite also scores the candidates (the rules of
``dsh_memory.scoring`` written with ``instr`` over lowercased columns), so only the returned
records are decoded in Python; with more terms Python scores the candidates.

Degradation: when the index cannot be read (corrupt file, wrong schema, a symlink in its
place), it is rebuilt; when it cannot be written (no ``.sync``, read-only disk) or SQLite
fails anywhere, search falls back to scanning the files - with the same results.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
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
from dsh_memory import frontmatter, payload_state
from dsh_memory.errors import MemoryRepoError
from dsh_memory.records import (
    RECORD_FOLDERS,
    SCOPES,
    PayloadEntry,
    Record,
    fingerprint,
    load_record,
    walk_payload,
)
from dsh_memory.scoring import is_visible, ranked_matches

INDEX_NAME = "search-index.sqlite"
INDEX_SCHEMA_VERSION = "6"
TMP_PREFIX = ".search-index."
TMP_SUFFIX = ".tmp"
GIT_EXCLUDE_ENTRIES = (".sync/search-index.sqlite", ".sync/.search-index.*.tmp")
#: A term longer than this is narrowed by its first trigrams only (still a superset).
MAX_GRAMS_PER_TERM = 12
#: Terms per FTS5 statement; more are run in batches and the row ids united.
TERMS_PER_STATEMENT = 32
#: Below this many records walking the payload (~1.5 us per file) is cheaper than the two
#: git processes of the fast key (~15-20 ms), and it detects every change.
FAST_KEY_MIN_RECORDS = 3000
#: Abandoned temporaries older than this are removed by the next rebuild.
STALE_TMP_SECONDS = 600

_RUN_SPLIT = re.compile(r"[\W_]+")


def index_path(root: Path) -> Path:
    return root / ".sync" / INDEX_NAME


_ENCODED: dict[str, str] = {}
_GRAM_TAGS = ("", "u", "b", "t")


def _encode(gram: str) -> str:
    """``u``/``b``/``t`` + the hex code points joined by ``x``: ASCII letters and digits
    only, so the ``ascii`` tokenizer keeps each gram one token (and the mapping is 1:1)."""
    token = _ENCODED.get(gram)
    if token is None:
        token = _GRAM_TAGS[len(gram)] + "x".join(f"{ord(char):x}" for char in gram)
        if len(_ENCODED) < 200_000:  # bounded: a few MB of short strings at most
            _ENCODED[gram] = token
    return token


def document_grams(searchable_lower: str) -> str:
    """The record's distinct 1-, 2- and 3-character grams of letters/numbers, encoded.

    The order of the tokens does not matter to FTS5 with ``detail=none`` (only which tokens
    a row has), which is also all a contentless ``delete`` needs to be given back.
    """
    grams: set[str] = set()
    for run in set(_RUN_SPLIT.split(searchable_lower)):
        grams.update(run)
        grams.update([run[start : start + 2] for start in range(len(run) - 1)])
        grams.update([run[start : start + 3] for start in range(len(run) - 2)])
    return " ".join(map(_encode, grams))


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
    valid INTEGER NOT NULL,
    record_id TEXT,
    expires_at TEXT,
    expires_on TEXT,
    s_all TEXT NOT NULL,
    s_id TEXT NOT NULL,
    s_type TEXT NOT NULL,
    s_body TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX records_folder ON records(folder);
CREATE INDEX records_order ON records(record_id, path);
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


def _index_meta(path: Path) -> dict[str, str] | None:
    """The index's meta table, or None when there is no usable index of this schema."""
    if not _existing_index(path):
        return None
    try:
        with _connect(path, readonly=True) as connection:
            meta = _read_meta(connection)
    except sqlite3.Error:
        return None
    if meta.get("schema_version") != INDEX_SCHEMA_VERSION:
        return None
    return meta


def _is_fresh(root: Path, meta: dict[str, str] | None) -> bool:
    """Whether the index still matches the payload (git fast key, else the full walk)."""
    if meta is None:
        return False
    stored_key = meta.get("fast_key")
    if stored_key and int(meta.get("record_count", "0")) >= FAST_KEY_MIN_RECORDS:
        directories = jsonio.loads(meta.get("directories", "[]"), what="index directories")
        untracked = jsonio.loads(meta.get("untracked", "[]"), what="index untracked")
        current_key = payload_state.fast_key(root, directories, untracked)
        if current_key is not None:
            return current_key == stored_key
    return meta.get("fingerprint") == fingerprint(walk_payload(root, RECORD_FOLDERS))


def _payload_snapshot(root: Path) -> tuple[list[PayloadEntry], dict[str, str]]:
    """Records to index and the freshness meta describing exactly that state.

    The git fast key is computed *after* the walk and confirmed by a second walk, so a
    change racing the build can only make the stored key stale (a rebuild next time), never
    make a missed change look fresh.
    """
    entries = walk_payload(root, RECORD_FOLDERS)
    meta = {"fingerprint": fingerprint(entries), "record_count": str(len(entries))}
    if len(entries) < FAST_KEY_MIN_RECORDS:
        return entries, meta
    for _attempt in range(3):
        tracked = payload_state.tracked_records(root)
        if tracked is None:
            return entries, meta
        directories = payload_state.payload_directories(root)
        untracked = [entry.path for entry in entries if entry.path not in tracked]
        key = payload_state.fast_key(root, directories, untracked)
        if key is None:
            return entries, meta
        again = walk_payload(root, RECORD_FOLDERS)
        if fingerprint(again) == meta["fingerprint"]:
            meta["fast_key"] = key
            meta["directories"] = jsonio.dumps(directories)
            meta["untracked"] = jsonio.dumps(untracked)
            return entries, meta
        entries = again
        meta = {"fingerprint": fingerprint(entries), "record_count": str(len(entries))}
    return entries, meta


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
            "INSERT INTO records(path, folder, signature, valid, record_id, expires_at,"
            " expires_on, s_all, s_id, s_type, s_body, data)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                record.path,
                record.folder,
                record.signature,
                int(record.valid),
                record.id,
                record.expires_at,
                frontmatter.expiry_date(record.expires_at),
                record.searchable().lower(),
                record.scoring_id().lower(),
                (record.type or "").lower(),
                record.body.lower(),
                jsonio.dumps(record.to_row()),
            ),
        )
        if grams:
            connection.execute(
                "INSERT INTO grams(rowid, g) VALUES (?, ?)", (cursor.lastrowid, grams)
            )


def _apply_changes(connection: sqlite3.Connection, root: Path, entries: list[PayloadEntry]) -> int:
    """Bring the tables in line with ``entries``; returns how many records were (re)read."""
    wanted = {entry.path: entry for entry in entries}
    stale: list[tuple[int, str, str]] = []
    for rowid, path, signature in connection.execute("SELECT rowid, path, signature FROM records"):
        entry = wanted.get(path)
        if entry is not None and entry.signature == signature:
            del wanted[path]
        else:
            stale.append((rowid, path, signature))
    for rowid, path, signature in stale:
        (data,) = connection.execute(
            "SELECT data FROM records WHERE rowid = ?", (rowid,)
        ).fetchone()
        record = Record.from_row(path, signature, jsonio.loads(data, what="search index row"))
        # Contentless FTS5: a row is removed by replaying the text it was indexed with, which
        # the stored record reproduces exactly (and a row indexed with nothing was never added).
        grams = document_grams(record.searchable().lower()) if record.valid else ""
        if grams:
            connection.execute(
                "INSERT INTO grams(grams, rowid, g) VALUES ('delete', ?, ?)", (rowid, grams)
            )
        connection.execute("DELETE FROM records WHERE rowid = ?", (rowid,))
    loaded = (load_record(root, entry) for entry in wanted.values())
    _insert(connection, (record for record in loaded if record is not None))
    return len(wanted)


def update_index(root: Path) -> str:
    """Make ``.sync/search-index.sqlite`` match the payload; returns the new fingerprint.

    Raises :class:`IndexUnavailable` when the index cannot be written.
    """
    sync = _sync_directory(root)
    entries, meta = _payload_snapshot(root)
    path = index_path(root)
    _remove_stale_temporaries(sync)
    try:
        temporary = _new_temporary(sync)
    except OSError as exc:
        raise IndexUnavailable(f"cannot create an index temporary: {exc}") from exc
    try:
        reuse = _index_meta(path) is not None
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
            connection.execute("DELETE FROM meta")
            connection.executemany(
                "INSERT INTO meta(key, value) VALUES (?, ?)",
                [("schema_version", INDEX_SCHEMA_VERSION), *meta.items()],
            )
            connection.execute("COMMIT")
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    except (OSError, sqlite3.Error) as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise IndexUnavailable(f"cannot write the search index: {exc}") from exc
    _ensure_git_exclude(root)
    return meta["fingerprint"]


def refresh_index(root: Path) -> str:
    """Bring the index up to date if needed: ``"fresh"`` or ``"rebuilt"``."""
    if _is_fresh(root, _index_meta(index_path(root))):
        return "fresh"
    update_index(root)
    return "rebuilt"


def _ensure_git_exclude(root: Path) -> None:
    from dsh_memory.usage import ensure_git_exclude  # noqa: PLC0415 - shared helper

    # Best effort: the index works without the entries (.sync/.gitignore also lists it).
    with contextlib.suppress(OSError, MemoryRepoError):
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


#: More terms than this are scored in Python over the candidates (SQLite caps expression depth).
MAX_SQL_TERMS = 64


def _score_expression(count: int) -> str:
    # The scoring rules of dsh_memory.scoring, term by term, evaluated by SQLite: instr() on
    # the lowercased columns is the same substring test as Python's "in".
    parts = [
        f"(CASE WHEN instr(s_all, :t{i}) > 0 THEN 1 + 3 * (instr(s_id, :t{i}) > 0)"
        f" + 2 * (s_type = :t{i}) + (instr(s_body, :t{i}) > 0) ELSE 0 END)"
        for i in range(count)
    ]
    return " + ".join(parts)


def _rank_in_index(
    path: Path, terms: list[str], folders: tuple[str, ...], today: str
) -> list[tuple[Record, int]]:
    """Visible matches scored by SQLite, best first, as partial records."""
    parameters: dict[str, str] = {"today": today}
    matches = []
    for batch_start in range(0, len(terms), TERMS_PER_STATEMENT):
        key = f"m{batch_start}"
        parameters[key] = _match_expression(terms[batch_start : batch_start + TERMS_PER_STATEMENT])
        matches.append(f"SELECT rowid FROM grams WHERE grams MATCH :{key}")  # noqa: S608
    for index, term in enumerate(terms):
        parameters[f"t{index}"] = term
    folder_names = []
    for index, folder in enumerate(folders):
        parameters[f"f{index}"] = folder
        folder_names.append(f":f{index}")
    # Only named placeholders are interpolated below; every value is a bound parameter.
    sql = (
        f"SELECT path, signature, record_id, score FROM (SELECT path, signature, record_id,"  # noqa: S608
        f" {_score_expression(len(terms))} AS score FROM records"
        f" WHERE rowid IN ({' UNION '.join(matches)})"
        f" AND folder IN ({', '.join(folder_names)}) AND valid = 1"
        " AND (expires_on IS NULL OR expires_on > :today))"
        " WHERE score > 0 ORDER BY score DESC, path ASC"
    )
    with _connect(path, readonly=True) as connection:
        rows = connection.execute(sql, parameters).fetchall()
    return [
        (Record(path=p, signature=sig, valid=True, id=rid, partial=True), score)
        for p, sig, rid, score in rows
    ]


def ranked_candidates(
    root: Path, terms: list[str], scope: str, now: _dt.datetime, *, use_index: bool = True
) -> tuple[list[tuple[Record, int]], dict[str, Any]]:
    """Every visible record scoring above zero, best first, and how they were found.

    With a usable index, SQLite narrows by grams and scores; otherwise (or with
    ``use_index=False``) every file in scope is read and scored in Python. Both give the
    same list.
    """
    folders = SCOPES[scope]
    if not use_index:
        scanned = _scan(root, folders)
        return ranked_matches(scanned, terms, scope, now), {
            "mode": "scan",
            "indexState": "disabled",
        }
    path = index_path(root)
    unique_terms = list(dict.fromkeys(terms))
    try:
        state = refresh_index(root)
        if len(terms) <= MAX_SQL_TERMS:
            today = now.astimezone(_dt.UTC).date().isoformat()
            ranked = _rank_in_index(path, terms, folders, today)
        else:
            candidates = _query_index(path, unique_terms, folders)
            ranked = ranked_matches(candidates, terms, scope, now)
        return ranked, {"mode": "index", "indexState": state}
    except (IndexUnavailable, sqlite3.Error, OSError, ValueError):
        scanned = _scan(root, folders)
        return ranked_matches(scanned, terms, scope, now), {
            "mode": "scan",
            "indexState": "unavailable",
        }


def _visible_indexed(
    path: Path, folders: tuple[str, ...], today: str, used_paths: list[str], unused_limit: int
) -> list[Record]:
    """Visible records that have usage, plus the first ``unused_limit`` by (id, path).

    Records without usage all tie on the usage keys and are ordered by logical id then path,
    so no record past the first ``unused_limit`` of them can reach a top-``unused_limit``
    list: the context never needs the other thousands decoded.
    """
    parameters: dict[str, object] = {
        "today": today,
        "used": jsonio.dumps(used_paths),
        "unused_limit": unused_limit,
    }
    names = []
    for index, folder in enumerate(folders):
        parameters[f"f{index}"] = folder
        names.append(f":f{index}")
    # Only named placeholders are interpolated; every value is a bound parameter.
    visible = (
        "SELECT path, signature, record_id FROM records"  # noqa: S608
        f" WHERE folder IN ({', '.join(names)}) AND valid = 1"
        " AND (expires_on IS NULL OR expires_on > :today)"
    )
    with _connect(path, readonly=True) as connection:
        used_sql = visible + " AND path IN (SELECT value FROM json_each(:used))"  # noqa: S608
        used = connection.execute(used_sql, parameters).fetchall()
        unused = connection.execute(
            visible + " ORDER BY record_id, path LIMIT :unused_limit", parameters
        ).fetchall()
    rows = {row[0]: row for row in [*used, *unused]}
    return [
        Record(path=p, signature=sig, valid=True, id=rid, partial=True)
        for p, sig, rid in rows.values()
    ]


def complete_records(root: Path, records: list[Record]) -> list[Record]:
    """Full records (body, tags, provenance) for the partial records the index returned."""
    partial = [record.path for record in records if record.partial]
    if not partial:
        return records
    full: dict[str, Record] = {}
    try:
        with _connect(index_path(root), readonly=True) as connection:
            for record_path in partial:
                row = connection.execute(
                    "SELECT signature, data FROM records WHERE path = ?", (record_path,)
                ).fetchone()
                if row is not None:
                    data = jsonio.loads(row[1], what="search index row")
                    full[record_path] = Record.from_row(record_path, row[0], data)
    except (sqlite3.Error, ValueError):
        full = {}
    completed = []
    for record in records:
        if not record.partial:
            completed.append(record)
        elif record.path in full:
            completed.append(full[record.path])
        else:
            # The index changed underneath us: read the file itself.
            loaded = load_record(root, PayloadEntry(record.path, record.signature))
            if loaded is not None:
                completed.append(loaded)
    return completed


def context_candidates(
    root: Path,
    scope: str,
    now: _dt.datetime,
    used_paths: list[str],
    limit: int,
    *,
    use_index: bool = True,
) -> tuple[list[Record], dict[str, Any]]:
    """The visible records a query-less context read must order (see ``_visible_indexed``).

    From the index they are partial (no body); :func:`complete_records` fills in the few a
    caller keeps. The scan returns every visible record, complete.
    """
    folders = SCOPES[scope]
    if use_index:
        try:
            state = refresh_index(root)
            today = now.astimezone(_dt.UTC).date().isoformat()
            records = _visible_indexed(index_path(root), folders, today, used_paths, limit)
            return records, {"mode": "index", "indexState": state}
        except (IndexUnavailable, sqlite3.Error, OSError, ValueError):
            retrieval = {"mode": "scan", "indexState": "unavailable"}
    else:
        retrieval = {"mode": "scan", "indexState": "disabled"}
    visible = [record for record in _scan(root, folders) if is_visible(record, scope, now)]
    return visible, retrieval


#: At most this many left-out records are named in a search/context ``warnings`` list.
MAX_WARNINGS = 20


def invalid_record_warnings(
    root: Path, scope: str, *, use_index: bool = True
) -> list[dict[str, str]]:
    """Records in ``scope`` left out because their front matter is invalid (bounded).

    Without this a record with, say, ``tags: [a, b]`` silently disappeared from search and
    context. The index already knows each record's validity; a scan answers without it.
    """
    folders = SCOPES[scope]
    if use_index:
        placeholders = ", ".join("?" for _ in folders)
        sql = (
            f"SELECT path FROM records WHERE valid = 0 AND folder IN ({placeholders})"  # noqa: S608
            " ORDER BY path LIMIT ?"
        )
        try:
            refresh_index(root)
            with _connect(index_path(root), readonly=True) as connection:
                rows = connection.execute(sql, (*folders, MAX_WARNINGS)).fetchall()
            return [{"path": str(p), "code": "invalid-metadata"} for (p,) in rows]
        except (IndexUnavailable, sqlite3.Error, OSError, ValueError):
            pass
    invalid = sorted(r.path for r in _scan(root, folders) if not r.valid)
    return [{"path": p, "code": "invalid-metadata"} for p in invalid[:MAX_WARNINGS]]
