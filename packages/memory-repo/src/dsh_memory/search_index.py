"""The search index: a derived SQLite FTS5 cache that narrows search candidates.

``.sync/search-index.sqlite`` (0600, git-excluded) holds, per record file, its path,
change signature, validity, id and expiry, its normalised fields and BM25 length
(:func:`dsh_memory.scoring.record_text`, the text ranking reads), and a contentless FTS5 table
(``detail=none``, ``ascii`` tokenizer) of its *index tokens*: a folder token, its distinct
words, Han characters and Han bigrams (:func:`dsh_memory.scoring.index_tokens`). A query term
matches a record exactly when FTS5 finds its token (a word term as a token prefix), so the
index gives the exact document frequencies of the query's terms in the scope (``count(*)``
of ``folder AND term``), the corpus size and average length (SQL aggregates), and the exact
candidate set; the ranking then runs the very same Python code as a scan, on the same
fields and statistics. The returned records are then read from their files with the
scan's loader. The index changes speed, never results.

Freshness (:mod:`dsh_memory.index_key`): the index stores the payload fingerprint
(``records.fingerprint``: every record path with its size, mtime, ctime and inode from
``lstat``) and, for payloads of 3,000 records or more, a cheaper key: the listing key (a
``find`` process lists the record folders' inodes and ctimes *while* the index is queried)
or else the stat key (``lstat`` of the indexed paths, no listing). Each search reads the
index meta, starts the check, runs its query on the same connection, and keeps the answer
only when the key still matches (:func:`query_fresh`). When it differs the index is brought
up to date - the old file is copied to
``.sync/.search-index.<pid>.<uuid>.tmp``, changed records are replaced, unchanged ones kept,
and the copy is renamed over the index (atomic: readers see the old or the new file, never
a half-written one) - and the query runs again. A missing index is built the same way.

Bounds (:mod:`dsh_memory.scoring`): at most 32 distinct query terms, 20,000 searchable
body characters per record, and candidates gathered from the rarest term on until 5,000.

Degradation: when the index cannot be read (corrupt file, wrong schema, a symlink in its
place), it is rebuilt; when it cannot be written (no ``.sync``, read-only disk) or SQLite
fails anywhere, search falls back to scanning the files - with the same results.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import sqlite3
import stat
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from dsh_common import jsonio
from dsh_memory import frontmatter, index_key, scoring
from dsh_memory.errors import MemoryRepoError
from dsh_memory.index_key import FAST_KEY_MIN_RECORDS, stat_groups, stat_key
from dsh_memory.records import (
    RECORD_FOLDERS,
    SCOPES,
    PayloadEntry,
    Record,
    fingerprint,
    load_record,
    walk_payload,
)
from dsh_memory.scoring import is_visible

__all__ = [
    "FAST_KEY_MIN_RECORDS",
    "complete_records",
    "context_candidates",
    "invalid_record_warnings",
    "query_fresh",
    "ranked_candidates",
    "refresh_index",
    "stat_groups",
    "stat_key",
    "update_index",
]

INDEX_NAME = "search-index.sqlite"
INDEX_SCHEMA_VERSION = "10"
TMP_PREFIX = ".search-index."
TMP_SUFFIX = ".tmp"
GIT_EXCLUDE_ENTRIES = (".sync/search-index.sqlite", ".sync/.search-index.*.tmp")
#: Abandoned temporaries older than this are removed by the next rebuild.
STALE_TMP_SECONDS = 600


def index_path(root: Path) -> Path:
    return root / ".sync" / INDEX_NAME


#: The FTS5 token naming a record's folder: ``§`` is never part of a record token (tokens
#: are letters and numbers), and the ``ascii`` tokenizer keeps non-ASCII characters in tokens.
FOLDER_MARK = "\u00a7"


def document_tokens(record: Record, text: scoring.RecordText) -> str:
    """The FTS5 text of a record: its folder token and its distinct index tokens.

    Order does not matter to FTS5 with ``detail=none`` (only which tokens a row has), which
    is also all a contentless ``delete`` needs to be given back.
    """
    tokens = sorted(scoring.index_tokens(text))
    return " ".join([FOLDER_MARK + record.folder, *tokens])


def _term_expression(term: scoring.Term) -> str:
    # Terms are letters and numbers only (no quote can occur): quoting keeps FTS5 syntax
    # words such as OR or NOT literal.
    return f'"{term.text}"*' if term.kind == "prefix" else f'"{term.text}"'


def _in_scope(expression: str, folders: tuple[str, ...]) -> str:
    """``expression`` restricted to rows of ``folders``, by the cheapest FTS5 form.

    Every indexed row has exactly one folder token, so a scope of every folder needs no
    restriction, and a scope of most folders is "NOT the others" (the shorter doclist).
    """
    others = [folder for folder in RECORD_FOLDERS if folder not in folders]
    if not others:
        return expression
    if len(others) < len(folders):
        excluded = " OR ".join(f'"{FOLDER_MARK}{folder}"' for folder in others)
        return f"({expression}) NOT ({excluded})"
    included = " OR ".join(f'"{FOLDER_MARK}{folder}"' for folder in folders)
    return f"({included}) AND ({expression})"


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
    length INTEGER NOT NULL,
    f_id TEXT NOT NULL,
    f_tags TEXT NOT NULL,
    f_type TEXT NOT NULL,
    f_other TEXT NOT NULL,
    f_body TEXT NOT NULL
);
CREATE INDEX records_folder ON records(folder);
CREATE INDEX records_order ON records(record_id, path);
-- The invalid-record warnings of every search: the few invalid rows, in path order, without
-- a scan of the whole table.
CREATE INDEX records_invalid ON records(path) WHERE valid = 0;
CREATE VIRTUAL TABLE terms USING fts5(t, content='', detail='none', tokenize='ascii');
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


def readonly_uri(path: Path) -> str:
    """A ``file:`` URI opening ``path`` read-only.

    The path is percent-encoded: in a URI ``#`` starts a fragment and ``?`` the query, so an
    unescaped root such as ``/srv/a#b`` would name ``/srv/a`` - SQLite would create an empty
    database there (read-write with ``?``, because ``mode=ro`` is then lost) and never use
    the real index.
    """
    return f"file:{urllib.parse.quote(path.as_posix())}?mode=ro"


@contextlib.contextmanager
def _connect(path: Path, *, readonly: bool) -> Iterator[sqlite3.Connection]:
    if readonly:
        connection = sqlite3.connect(readonly_uri(path), uri=True, isolation_level=None)
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
    """Whether the index still matches the payload (its fast key, else the full walk)."""
    return meta is not None and index_key.start_check(root, meta).fresh()


def _payload_snapshot(root: Path) -> tuple[list[PayloadEntry], dict[str, str]]:
    """Records to index and the freshness meta describing exactly that state.

    The fast key is computed *after* the walk and confirmed by a second walk, so a change
    racing the build can only make the stored key stale (a rebuild next time), never make
    a missed change look fresh.
    """
    entries = walk_payload(root, RECORD_FOLDERS)
    meta = {"fingerprint": fingerprint(entries), "record_count": str(len(entries))}
    if len(entries) < FAST_KEY_MIN_RECORDS:
        return entries, meta
    for _attempt in range(3):
        keys = index_key.snapshot_keys(root, entries)
        again = walk_payload(root, RECORD_FOLDERS)
        if fingerprint(again) == meta["fingerprint"]:
            meta.update(keys)
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


_EMPTY_TEXT = scoring.RecordText((" ", " ", " ", " ", " "), 0)


def _insert(connection: sqlite3.Connection, records: Iterable[Record]) -> None:
    for record in records:
        text = scoring.record_text(record) if record.valid else _EMPTY_TEXT
        cursor = connection.execute(
            "INSERT INTO records(path, folder, signature, valid, record_id, expires_at,"
            " expires_on, length, f_id, f_tags, f_type, f_other, f_body)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                record.path,
                record.folder,
                record.signature,
                int(record.valid),
                record.id,
                record.expires_at,
                frontmatter.expiry_date(record.expires_at),
                text.length,
                *text.fields,
            ),
        )
        if record.valid:
            connection.execute(
                "INSERT INTO terms(rowid, t) VALUES (?, ?)",
                (cursor.lastrowid, document_tokens(record, text)),
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
        row = connection.execute(
            "SELECT valid, length, f_id, f_tags, f_type, f_other, f_body FROM records"
            " WHERE rowid = ?",
            (rowid,),
        ).fetchone()
        # Contentless FTS5: a row is removed by replaying the tokens it was indexed with,
        # which the stored normalised fields reproduce exactly (invalid rows were never added).
        if row[0]:
            text = scoring.RecordText(tuple(row[2:]), row[1])
            record = Record(path=path, signature=signature, valid=True)
            connection.execute(
                "INSERT INTO terms(terms, rowid, t) VALUES ('delete', ?, ?)",
                (rowid, document_tokens(record, text)),
            )
        connection.execute("DELETE FROM records WHERE rowid = ?", (rowid,))
    loaded = (load_record(root, entry) for entry in wanted.values())
    _insert(connection, (record for record in loaded if record is not None))
    return len(wanted)


def _folder_stats(connection: sqlite3.Connection) -> str:
    """``{folder: [valid records, their total length]}``: a scope's corpus size and average
    length without a pass over the records table on every search."""
    rows = connection.execute(
        "SELECT folder, count(*), sum(length) FROM records WHERE valid = 1 GROUP BY folder"
    ).fetchall()
    return jsonio.dumps({folder: [count, total] for folder, count, total in rows})


def _scope_totals(meta: dict[str, str], folders: tuple[str, ...]) -> tuple[int, int]:
    table = jsonio.loads(meta.get("folder_stats", "null"), what="index folder statistics")
    if not isinstance(table, dict):
        raise ValueError("the index has no folder statistics")
    count = total = 0
    for folder in folders:
        pair = table.get(folder, [0, 0])
        if not (isinstance(pair, list) and len(pair) == 2 and all(type(n) is int for n in pair)):
            raise ValueError("damaged index folder statistics")
        count += pair[0]
        total += pair[1]
    return count, total


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
            meta["folder_stats"] = _folder_stats(connection)
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


_Answer = TypeVar("_Answer")
Query = Callable[[sqlite3.Connection, dict[str, str]], _Answer]


def query_fresh(root: Path, query: Query[_Answer]) -> tuple[_Answer, str]:
    """``query(connection, meta)`` answered from an index that matches the payload.

    Returns the answer and ``"fresh"`` or ``"rebuilt"``. The freshness check runs while the
    query does (:func:`dsh_memory.index_key.start_check`); a stale answer is thrown away,
    the index brought up to date and the query asked again. Meta and query share one
    connection, so they read one file even if a rebuild renames a new one into place.
    Raises :class:`IndexUnavailable` when the index cannot be written, and whatever the
    query raises.
    """
    path = index_path(root)
    answered = _query_if_fresh(root, path, query)
    if answered is not None:
        return answered[0], "fresh"
    update_index(root)
    with _connect(path, readonly=True) as connection:
        return query(connection, _read_meta(connection)), "rebuilt"


def _query_if_fresh(root: Path, path: Path, query: Query[_Answer]) -> tuple[_Answer] | None:
    """The query's answer (in a 1-tuple) when the index is usable and fresh, else None."""
    if not _existing_index(path):
        return None
    with _connect(path, readonly=True) as connection:
        try:
            meta = _read_meta(connection)
        except sqlite3.Error:
            return None  # not a database, or not ours: rebuilt
        if meta.get("schema_version") != INDEX_SCHEMA_VERSION:
            return None
        try:
            _scope_totals(meta, RECORD_FOLDERS)
            check = index_key.start_check(root, meta)
        except ValueError:
            return None  # a damaged meta row: rebuilt, as any unreadable index
        try:
            answer = query(connection, meta)
        except BaseException:
            check.cancel()
            raise
        return (answer,) if check.fresh() else None


def _ensure_git_exclude(root: Path) -> None:
    from dsh_memory.usage import ensure_git_exclude  # noqa: PLC0415 - shared helper

    # Best effort: the index works without the entries (.sync/.gitignore also lists it).
    with contextlib.suppress(OSError, MemoryRepoError):
        ensure_git_exclude(root, GIT_EXCLUDE_ENTRIES)


def _scan(root: Path, folders: tuple[str, ...]) -> list[Record]:
    loaded = (load_record(root, entry) for entry in walk_payload(root, folders))
    return [record for record in loaded if record is not None]


_ROW_COLUMNS = (
    "path, signature, record_id, expires_at, length, f_id, f_tags, f_type, f_other, f_body"
)


def _rank_in_index(
    connection: sqlite3.Connection,
    meta: dict[str, str],
    plan: scoring.QueryPlan,
    scope: str,
    now: _dt.datetime,
) -> list[scoring.Match]:
    """The ranking computed from the index: the same statistics and fields a scan uses."""
    folders = SCOPES[scope]
    count, total = _scope_totals(meta, folders)
    df: dict[scoring.Term, int] = {}
    for term in plan.terms:
        (df[term],) = connection.execute(
            "SELECT count(*) FROM terms WHERE terms MATCH ?",
            (_in_scope(_term_expression(term), folders),),
        ).fetchone()
    stats = scoring.CorpusStats(count, total / count if count else 0.0, df)
    gathered = scoring.gathering_terms(plan, df)
    if not gathered:
        return []
    expression = " OR ".join(_term_expression(term) for term in gathered)
    rows = connection.execute(
        f"SELECT {_ROW_COLUMNS} FROM records WHERE rowid IN"  # noqa: S608
        " (SELECT rowid FROM terms WHERE terms MATCH ?)",
        (_in_scope(expression, folders),),
    ).fetchall()
    candidates = [
        (
            Record(path=p, signature=sig, valid=True, id=rid, expires_at=exp, partial=True),
            scoring.RecordText((f_id, f_tags, f_type, f_other, f_body), length),
        )
        for p, sig, rid, exp, length, f_id, f_tags, f_type, f_other, f_body in rows
    ]
    return scoring.rank(candidates, plan, stats, scope, now)


def ranked_candidates(
    root: Path,
    plan: scoring.QueryPlan,
    scope: str,
    now: _dt.datetime,
    *,
    use_index: bool = True,
    complete: int = 0,
) -> tuple[list[scoring.Match], dict[str, Any]]:
    """Every visible matching record, best first, and how they were found.

    With a usable index the statistics and candidates come from SQLite; otherwise (or with
    ``use_index=False``) every file in scope is read. Both give the same list. The first
    ``complete`` records from the index are read from their files while the freshness check
    still runs (:func:`complete_records` then has nothing left to do for them).
    """
    folders = SCOPES[scope]
    if not use_index:
        return scoring.ranked_matches(_scan(root, folders), plan, scope, now), {
            "mode": "scan",
            "indexState": "disabled",
        }
    try:
        ranked, state = query_fresh(
            root,
            lambda connection, meta: _completed_head(
                root, _rank_in_index(connection, meta, plan, scope, now), complete
            ),
        )
        return ranked, {"mode": "index", "indexState": state}
    except (IndexUnavailable, sqlite3.Error, OSError, ValueError):
        return scoring.ranked_matches(_scan(root, folders), plan, scope, now), {
            "mode": "scan",
            "indexState": "unavailable",
        }


def _visible_indexed(
    connection: sqlite3.Connection,
    folders: tuple[str, ...],
    today: str,
    used_paths: list[str],
    unused_limit: int,
) -> tuple[list[Record], int]:
    """Visible records that have usage, plus the first ``unused_limit`` by (id, path), and
    how many records are visible in all.

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
    used_sql = visible + " AND path IN (SELECT value FROM json_each(:used))"  # noqa: S608
    used = connection.execute(used_sql, parameters).fetchall()
    unused = connection.execute(
        visible + " ORDER BY record_id, path LIMIT :unused_limit", parameters
    ).fetchall()
    (total,) = connection.execute(
        visible.replace("path, signature, record_id", "count(*)", 1), parameters
    ).fetchone()
    rows = {row[0]: row for row in [*used, *unused]}
    return [
        Record(path=p, signature=sig, valid=True, id=rid, partial=True)
        for p, sig, rid in rows.values()
    ], int(total)


def _completed_head(root: Path, ranked: list[scoring.Match], count: int) -> list[scoring.Match]:
    """``ranked`` with its first ``count`` records complete; one that cannot be loaded stays
    partial, for :func:`complete_records` to drop as it always does."""
    head = ranked[:count]
    full = {record.path: record for record in complete_records(root, [m.record for m in head])}
    completed = [
        match._replace(record=full[match.record.path]) if match.record.path in full else match
        for match in head
    ]
    return completed + ranked[count:]


def complete_records(root: Path, records: list[Record]) -> list[Record]:
    """Full records (body, tags, provenance) for the partial records the index returned.

    They are read from their files with the loader a scan uses (the index keeps only what
    ranking needs, not a second copy of every body: that halves its size). A record that
    vanished or stopped being a valid record since the index was checked is dropped.
    """
    completed = []
    for record in records:
        if not record.partial:
            completed.append(record)
            continue
        loaded = load_record(root, PayloadEntry(record.path, record.signature))
        if loaded is not None and loaded.valid:
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
) -> tuple[list[Record], int, dict[str, Any]]:
    """The visible records a query-less context read must order (see ``_visible_indexed``),
    how many records are visible in all, and how they were found.

    From the index they are partial (no body); :func:`complete_records` fills in the few a
    caller keeps. The scan returns every visible record, complete.
    """
    folders = SCOPES[scope]
    if use_index:
        try:
            today = now.astimezone(_dt.UTC).date().isoformat()
            (records, total), state = query_fresh(
                root,
                lambda connection, _meta: _visible_indexed(
                    connection, folders, today, used_paths, limit
                ),
            )
            return records, total, {"mode": "index", "indexState": state}
        except (IndexUnavailable, sqlite3.Error, OSError, ValueError):
            retrieval = {"mode": "scan", "indexState": "unavailable"}
    else:
        retrieval = {"mode": "scan", "indexState": "disabled"}
    visible = [record for record in _scan(root, folders) if is_visible(record, scope, now)]
    return visible, len(visible), retrieval


#: At most this many left-out records are named in a search/context ``warnings`` list.
MAX_WARNINGS = 20


def invalid_record_warnings(
    root: Path, scope: str, *, use_index: bool = True, index_fresh: bool = False
) -> list[dict[str, str]]:
    """Records in ``scope`` left out because their front matter is invalid (bounded).

    Without this a record with, say, ``tags: [a, b]`` silently disappeared from search and
    context. The index already knows each record's validity; a scan answers without it.
    ``index_fresh`` says the caller's query has just brought the index up to date: the
    freshness check (a stat of every record) is not paid twice per search.
    """
    folders = SCOPES[scope]
    if use_index:
        placeholders = ", ".join("?" for _ in folders)
        sql = (
            f"SELECT path FROM records WHERE valid = 0 AND folder IN ({placeholders})"  # noqa: S608
            " ORDER BY path LIMIT ?"
        )
        try:
            if not index_fresh:
                refresh_index(root)
            with _connect(index_path(root), readonly=True) as connection:
                rows = connection.execute(sql, (*folders, MAX_WARNINGS)).fetchall()
            return [{"path": str(p), "code": "invalid-metadata"} for (p,) in rows]
        except (IndexUnavailable, sqlite3.Error, OSError, ValueError):
            pass
    invalid = sorted(r.path for r in _scan(root, folders) if not r.valid)
    return [{"path": p, "code": "invalid-metadata"} for p in invalid[:MAX_WARNINGS]]
