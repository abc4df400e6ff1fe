"""Questions answered from the search index: ranked candidates, context rows, invalid records.

Ranking gets the very fields and statistics a scan of the files would compute, and runs the
scan's own code on them (:mod:`dsh_memory.search.scoring`), so the index changes speed, never
results. A query term matches a record exactly when FTS5 finds its token - a word term as a token
prefix, a Han bigram as a token, a single Han character as the prefix of the tokens it
starts - so FTS5 gives each term's document frequency in the scope (``count(*)`` of
``folder AND term``) and the exact candidate set; the corpus size and average length come
from the per-folder totals in the meta.
"""

from __future__ import annotations

import datetime as _dt
import sqlite3

from dsh_common import jsonio
from dsh_memory.search import scoring
from dsh_memory.search.index_store import (
    FOLDER_MARK,
    FOLDER_NUMBERS,
    full_path,
    record_text_of,
    split_path,
)
from dsh_memory.store.records import RECORD_FOLDERS, SCOPES, Record


def term_expression(term: scoring.Term) -> str:
    # Terms are letters and numbers only (no quote can occur): quoting keeps FTS5 syntax
    # words such as OR or NOT literal. A lone Han character is the prefix of the tokens it
    # is in: the bigram it starts, or itself at the end of a run.
    if term.kind == "prefix" or (term.kind == "han" and len(term.text) == 1):
        return f'"{term.text}"*'
    return f'"{term.text}"'


def in_scope(expression: str, folders: tuple[str, ...]) -> str:
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


def scope_totals(meta: dict[str, str], folders: tuple[str, ...]) -> tuple[int, int]:
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


def _folder_list(folders: tuple[str, ...]) -> str:
    # Folder numbers come from a fixed table, never from the caller: safe to inline.
    return ", ".join(str(FOLDER_NUMBERS[folder]) for folder in folders)


#: What ranking reads of a candidate. A record served by the index is partial: no body,
#: lists or signature (``complete_records`` reads the few returned ones from their files).
_CANDIDATE_COLUMNS = "folder, path, record_id, expires_at, length, head, body"


def _partial(folder: int, rest: str, record_id: str | None, expires_at: str | None) -> Record:
    return Record(
        path=full_path(folder, rest),
        signature="",
        valid=True,
        id=record_id,
        expires_at=expires_at,
        partial=True,
    )


def rank_in_index(
    connection: sqlite3.Connection,
    meta: dict[str, str],
    plan: scoring.QueryPlan,
    scope: str,
    now: _dt.datetime,
) -> list[scoring.Match]:
    """The ranking computed from the index: the same statistics and fields a scan uses."""
    folders = SCOPES[scope]
    count, total = scope_totals(meta, folders)
    df: dict[scoring.Term, int] = {}
    for term in plan.terms:
        (df[term],) = connection.execute(
            "SELECT count(*) FROM terms WHERE terms MATCH ?",
            (in_scope(term_expression(term), folders),),
        ).fetchone()
    stats = scoring.CorpusStats(count, total / count if count else 0.0, df)
    gathered = scoring.gathering_terms(plan, df)
    if not gathered:
        return []
    expression = " OR ".join(term_expression(term) for term in gathered)
    rows = connection.execute(
        f"SELECT {_CANDIDATE_COLUMNS} FROM records"  # noqa: S608
        " WHERE rowid IN (SELECT rowid FROM terms WHERE terms MATCH ?)",
        (in_scope(expression, folders),),
    ).fetchall()
    candidates = [
        (
            _partial(folder, rest, record_id, expires_at),
            record_text_of(record_id, length, head, body),
        )
        for folder, rest, record_id, expires_at, length, head, body in rows
    ]
    return scoring.rank(candidates, plan, stats, scope, now)


#: The stored full paths of a JSON list (row values: the folder number and the rest).
_PATHS_IN = (
    "(folder, path) IN (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]')"
    " FROM json_each(:paths))"
)


def visible_indexed(
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
    wanted = [list(split_path(path)) for path in used_paths if path.split("/", 1)[0] in folders]
    parameters: dict[str, object] = {
        "today": today,
        "paths": jsonio.dumps(wanted),
        "unused_limit": unused_limit,
    }
    columns = "folder, path, record_id"
    visible = (
        f"SELECT {columns} FROM records"  # noqa: S608
        f" WHERE folder IN ({_folder_list(folders)}) AND valid = 1"
        " AND (expires_on IS NULL OR expires_on > :today)"
    )
    used = connection.execute(f"{visible} AND {_PATHS_IN}", parameters).fetchall()
    # Folder numbers follow the folder names: (folder, path) is the order of full paths.
    unused = connection.execute(
        visible + " ORDER BY record_id, folder, path LIMIT :unused_limit", parameters
    ).fetchall()
    (total,) = connection.execute(visible.replace(columns, "count(*)", 1), parameters).fetchone()
    rows = {(folder, rest): record_id for folder, rest, record_id in [*used, *unused]}
    return [_partial(folder, rest, rid, None) for (folder, rest), rid in rows.items()], int(total)


def invalid_paths(
    connection: sqlite3.Connection, meta: dict[str, str], folders: tuple[str, ...], limit: int
) -> list[str]:
    """The first ``limit`` invalid records of ``folders``, in path order.

    Every search asks; nearly every memory has none, which the meta says without a read of
    the table (an index on the few invalid rows cost a page of every small index).
    """
    if meta.get("invalid_count") == "0":
        return []
    rows = connection.execute(
        "SELECT folder, path FROM records WHERE valid = 0"  # noqa: S608
        f" AND folder IN ({_folder_list(folders)}) ORDER BY folder, path LIMIT ?",
        (limit,),
    ).fetchall()
    return [full_path(folder, rest) for folder, rest in rows]


def valid_records(connection: sqlite3.Connection) -> list[tuple[str, int, str | None]]:
    """``(path, signature digest, expiry day)`` of every valid record, for the vectors."""
    return [
        (full_path(folder, rest), signature, expires_on)
        for folder, rest, signature, expires_on in connection.execute(
            "SELECT folder, path, signature, expires_on FROM records WHERE valid = 1"
        )
    ]
