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

Freshness: the index stores the payload fingerprint (``records.fingerprint``: every record
path with its size, mtime, ctime and inode from ``lstat``) and, for payloads of 3,000
records or more, the cheaper *stat key* (:func:`stat_key`: ``lstat`` of the paths and
directories it indexed, kept in the index, no directory listing and no git process; at
10,000 records on a loaded machine walking costs ~50 ms, the earlier git-based key ~35 ms,
the stat key ~20 ms).
Each search recomputes the key and compares. When it differs the index is brought up to
date - the old file is copied to
``.sync/.search-index.<pid>.<uuid>.tmp``, changed records are replaced, unchanged ones kept,
and the copy is renamed over the index (atomic: readers see the old or the new file, never
a half-written one). A missing index is built the same way.

Bounds (:mod:`dsh_memory.scoring`): at most 32 distinct query terms, 20,000 searchable
body characters per record, and candidates gathered from the rarest term on until 5,000.

Degradation: when the index cannot be read (corrupt file, wrong schema, a symlink in its
place), it is rebuilt; when it cannot be written (no ``.sync``, read-only disk) or SQLite
fails anywhere, search falls back to scanning the files - with the same results.
"""

from __future__ import annotations

import array
import contextlib
import datetime as _dt
import hashlib
import os
import sqlite3
import stat
import time
import urllib.parse
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from dsh_common import jsonio
from dsh_memory import frontmatter, payload_state, scoring
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
from dsh_memory.scoring import is_visible

INDEX_NAME = "search-index.sqlite"
INDEX_SCHEMA_VERSION = "9"
TMP_PREFIX = ".search-index."
TMP_SUFFIX = ".tmp"
GIT_EXCLUDE_ENTRIES = (".sync/search-index.sqlite", ".sync/.search-index.*.tmp")
#: Below this many records the payload is walked on every search (a few ms, and exact); from
#: it on the stat key of the indexed paths is compared instead (no listing, no git).
FAST_KEY_MIN_RECORDS = 3000
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
    """Whether the index still matches the payload (the stat key, else the full walk)."""
    if meta is None:
        return False
    stored_key = meta.get("stat_key")
    if stored_key and int(meta.get("record_count", "0")) >= FAST_KEY_MIN_RECORDS:
        groups = jsonio.loads(meta.get("stat_groups", "[]"), what="index stat groups")
        try:
            return stat_key(root, groups) == stored_key
        except (TypeError, ValueError):
            return False  # a damaged meta row: rebuild, as for any unreadable index
    return meta.get("fingerprint") == fingerprint(walk_payload(root, RECORD_FOLDERS))


def stat_groups(directories: Iterable[str], paths: Iterable[str]) -> list[list[Any]]:
    """``[[folder, [names...]], ...]``: the payload directories (under ``""``, relative to the
    root), then each indexed record grouped by its folder - what :func:`stat_key` stats."""
    groups: dict[str, list[str]] = {"": list(directories)}
    for relative in paths:
        directory, _slash, name = relative.rpartition("/")
        groups.setdefault(directory, []).append(name)
    return [[directory, names] for directory, names in groups.items()]


def stat_key(root: Path, groups: list[list[Any]]) -> str:
    """A digest of ``lstat`` of every payload directory and every indexed record file.

    No git process and no file read, so no filter ever runs. A record edited in place
    changes its file's ctime; a record added, removed, renamed or replaced by a link changes
    its directory's; a new sub-directory changes its parent's. Like git's own racy-entry
    rule, a change within the same timestamp tick as the snapshot is the one case this
    cannot see; the build confirms its snapshot with a second walk. The paths
    themselves come from the stored meta, so only their stat values are digested: the
    inode and the ctime, which the kernel sets on every write, truncation, chmod, link or
    rename of the file (user space cannot set it back, as it can the mtime).
    """
    values = array.array("q")
    stat_at = os.stat
    # Each file is stat'ed relative to its open directory (one path component to resolve,
    # not the whole root path), with the groups stored ready-made in the index meta: this
    # loop runs over every record on every search.
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for directory, names in groups:
            try:
                fd = (
                    os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=root_fd)
                    if directory
                    else os.dup(root_fd)
                )
            except OSError:
                values.extend([-1] * len(names))
                continue
            try:
                for name in names:
                    try:
                        info = stat_at(name, dir_fd=fd, follow_symlinks=False)
                    except OSError:
                        values.append(-1)
                        continue
                    values.extend((info.st_ctime_ns, info.st_ino))
            finally:
                os.close(fd)
    finally:
        os.close(root_fd)
    return hashlib.sha256(values.tobytes()).hexdigest()


def _payload_snapshot(root: Path) -> tuple[list[PayloadEntry], dict[str, str]]:
    """Records to index and the freshness meta describing exactly that state.

    The stat key is computed *after* the walk and confirmed by a second walk, so a change
    racing the build can only make the stored key stale (a rebuild next time), never make
    a missed change look fresh.
    """
    entries = walk_payload(root, RECORD_FOLDERS)
    meta = {"fingerprint": fingerprint(entries), "record_count": str(len(entries))}
    if len(entries) < FAST_KEY_MIN_RECORDS:
        return entries, meta
    for _attempt in range(3):
        groups = stat_groups(
            payload_state.payload_directories(root), [entry.path for entry in entries]
        )
        key = stat_key(root, groups)
        again = walk_payload(root, RECORD_FOLDERS)
        if fingerprint(again) == meta["fingerprint"]:
            meta["stat_key"] = key
            meta["stat_groups"] = jsonio.dumps(groups)
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


def _scan(root: Path, folders: tuple[str, ...]) -> list[Record]:
    loaded = (load_record(root, entry) for entry in walk_payload(root, folders))
    return [record for record in loaded if record is not None]


_ROW_COLUMNS = (
    "path, signature, record_id, expires_at, length, f_id, f_tags, f_type, f_other, f_body"
)


def _rank_in_index(
    path: Path, plan: scoring.QueryPlan, scope: str, now: _dt.datetime
) -> list[scoring.Match]:
    """The ranking computed from the index: the same statistics and fields a scan uses."""
    folders = SCOPES[scope]
    marks = ", ".join("?" for _ in folders)
    with _connect(path, readonly=True) as connection:
        count, total = connection.execute(
            f"SELECT count(*), total(length) FROM records WHERE valid = 1 AND folder IN ({marks})",  # noqa: S608
            folders,
        ).fetchone()
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
    root: Path, plan: scoring.QueryPlan, scope: str, now: _dt.datetime, *, use_index: bool = True
) -> tuple[list[scoring.Match], dict[str, Any]]:
    """Every visible matching record, best first, and how they were found.

    With a usable index the statistics and candidates come from SQLite; otherwise (or with
    ``use_index=False``) every file in scope is read. Both give the same list.
    """
    folders = SCOPES[scope]
    if not use_index:
        return scoring.ranked_matches(_scan(root, folders), plan, scope, now), {
            "mode": "scan",
            "indexState": "disabled",
        }
    try:
        state = refresh_index(root)
        ranked = _rank_in_index(index_path(root), plan, scope, now)
        return ranked, {"mode": "index", "indexState": state}
    except (IndexUnavailable, sqlite3.Error, OSError, ValueError):
        return scoring.ranked_matches(_scan(root, folders), plan, scope, now), {
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
