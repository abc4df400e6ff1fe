"""Search and context through the search index, or a scan of the files - same results.

The index (:mod:`dsh_memory.search.index_store`: what it holds;
:mod:`dsh_memory.search.index_query`: how it answers) finds candidates and statistics; the
ranking then runs the scan's own code on the same normalised fields, and the returned
records are read from their files with the scan's loader. The index changes speed, never
results.

Freshness (:mod:`dsh_memory.search.index_key`): the index stores the payload fingerprint (small
payloads) or a cheaper key: the listing key (a ``find`` process lists the record folders'
inodes and ctimes *while* the index is queried) or else the stat key. Each search reads the
index meta, starts the check, runs its query in the same read transaction, and keeps the
answer only when the key still matches (:func:`query_fresh`). When it differs, the index is
brought up to date for what changed (:mod:`dsh_memory.search.index_update`, from what the check
saw) and the query runs again. A missing index is built the same way.

Bounds (:mod:`dsh_memory.search.scoring`): at most 32 distinct query terms, 20,000 searchable
body characters per record, and candidates gathered from the rarest term on until 5,000.

Degradation: when the index cannot be read (corrupt file, wrong schema, a symlink in its
place), it is rebuilt; when it cannot be written (no ``.sync``, read-only disk) or SQLite
fails anywhere, search falls back to scanning the files - with the same results.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from dsh_memory.search import index_key, scoring
from dsh_memory.search.index_key import FAST_KEY_MIN_RECORDS, Observed, stat_groups, stat_key
from dsh_memory.search.index_query import (
    invalid_paths,
    rank_in_index,
    scope_totals,
    visible_indexed,
)
from dsh_memory.search.index_store import (
    FOLDER_MARK,
    INDEX_SCHEMA_VERSION,
    IndexUnavailable,
    connect,
    document_tokens,
    existing_index,
    index_meta,
    index_path,
    read_meta,
    read_transaction,
)
from dsh_memory.search.index_update import refresh_index, update_index
from dsh_memory.search.scoring import is_visible
from dsh_memory.store.records import (
    RECORD_FOLDERS,
    SCOPES,
    PayloadEntry,
    Record,
    load_record,
    walk_payload,
)

__all__ = [
    "FAST_KEY_MIN_RECORDS",
    "FOLDER_MARK",
    "complete_records",
    "context_candidates",
    "document_tokens",
    "index_path",
    "invalid_record_warnings",
    "query_fresh",
    "ranked_candidates",
    "refresh_index",
    "stat_groups",
    "stat_key",
    "update_index",
]

#: The meta of an index, or None (kept under its old name for the tests and benchmarks).
_index_meta = index_meta

_Answer = TypeVar("_Answer")
Query = Callable[[sqlite3.Connection, dict[str, str]], _Answer]


def query_fresh(root: Path, query: Query[_Answer]) -> tuple[_Answer, str]:
    """``query(connection, meta)`` answered from an index that matches the payload.

    Returns the answer and ``"fresh"`` or ``"rebuilt"``. The freshness check runs while the
    query does (:func:`dsh_memory.search.index_key.start_check`); a stale answer is thrown away,
    the index brought up to date from what the check saw and the query asked again. Meta
    and query share one read transaction, so they see one state of a file that is updated
    in place. Raises :class:`IndexUnavailable` when the index cannot be written, and
    whatever the query raises.
    """
    path = index_path(root)
    answered, observed = _query_if_fresh(root, path, query)
    if answered is not None:
        return answered[0], "fresh"
    update_index(root, observed)
    with connect(path, readonly=True) as connection, read_transaction(connection):
        return query(connection, read_meta(connection)), "rebuilt"


def _query_if_fresh(
    root: Path, path: Path, query: Query[_Answer]
) -> tuple[tuple[_Answer] | None, Observed | None]:
    """The query's answer (in a 1-tuple) when the index is usable and fresh, else None and
    what the freshness check saw of the payload (for the update)."""
    if not existing_index(path):
        return None, None
    with connect(path, readonly=True) as connection:
        try:
            connection.execute("BEGIN")
            meta = read_meta(connection)
        except sqlite3.Error:
            return None, None  # not a database, or not ours, or a crashed write: updated
        try:
            if meta.get("schema_version") != INDEX_SCHEMA_VERSION:
                return None, None
            try:
                scope_totals(meta, RECORD_FOLDERS)
                check = index_key.start_check(root, meta)
            except ValueError:
                return None, None  # a damaged meta row: rebuilt, as any unreadable index
            try:
                answer = query(connection, meta)
            except BaseException:
                check.cancel()
                raise
        finally:
            # The answer is read: a writer need not wait for the check to finish.
            with contextlib.suppress(sqlite3.Error):
                connection.execute("ROLLBACK")
    if check.fresh():
        return (answer,), None
    return None, check.observed


def _scan(root: Path, folders: tuple[str, ...]) -> list[Record]:
    loaded = (load_record(root, entry) for entry in walk_payload(root, folders))
    return [record for record in loaded if record is not None]


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
                root, rank_in_index(connection, meta, plan, scope, now), complete
            ),
        )
        return ranked, {"mode": "index", "indexState": state}
    except (IndexUnavailable, sqlite3.Error, OSError, ValueError):
        return scoring.ranked_matches(_scan(root, folders), plan, scope, now), {
            "mode": "scan",
            "indexState": "unavailable",
        }


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
                lambda connection, _meta: visible_indexed(
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
        try:
            if not index_fresh:
                refresh_index(root)
            with (
                connect(index_path(root), readonly=True) as connection,
                read_transaction(connection),
            ):
                meta = read_meta(connection)
                paths = invalid_paths(connection, meta, folders, MAX_WARNINGS)
            return [{"path": path, "code": "invalid-metadata"} for path in paths]
        except (IndexUnavailable, sqlite3.Error, OSError, ValueError):
            pass
    invalid = sorted(r.path for r in _scan(root, folders) if not r.valid)
    return [{"path": p, "code": "invalid-metadata"} for p in invalid[:MAX_WARNINGS]]
