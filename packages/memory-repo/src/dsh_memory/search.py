"""``memory.search``: bilingual full-text search over payload records.

Ranking: :mod:`dsh_memory.scoring` (exact phrase and id components, BM25F with corpus
idf, coverage of the query's words; ties by path). Each result carries its
``score_components``, which sum to its ``score``. Expired records, records with invalid
metadata and ``summary.md`` are never results.

The snippet is the body from 40 characters before the first hit of the first query term
(stem or Han bigram) that occurs in the body, to 120 characters after it, whitespace
collapsed; the first 160 characters when no term occurs in the body. The citation is
``[source: <path> · id: <id>]``.

Legacy records (no front matter) are searched too, shown with their deterministic
``legacy-<hash>`` id; that synthetic id is not matched against the query.
"""

from __future__ import annotations

import datetime as _dt
import re
from pathlib import Path
from typing import Any

from dsh_memory import scoring
from dsh_memory.errors import SearchInvalidRequestError
from dsh_memory.records import SCOPES, Record
from dsh_memory.scoring import Match, QueryPlan, is_visible, plan_query

__all__ = [
    "citation",
    "is_visible",
    "matching_records",
    "plan_query",
    "query_terms",
    "search",
    "snippet",
]

DEFAULT_LIMIT = 20
MAX_LIMIT = 20
#: Queries longer than this are refused: a query is a few words, not a document.
MAX_QUERY_CHARS = 1000
SNIPPET_BEFORE = 40
SNIPPET_AFTER = 120
SNIPPET_FALLBACK = 160

_WHITESPACE = re.compile(r"\s+")


def query_terms(query: str) -> list[str]:
    """The texts of the terms a query is ranked by (see :mod:`dsh_memory.scoring`)."""
    return [term.text for term in plan_query(query).terms]


def snippet(body: str, terms: list[str]) -> str:
    lowered = body.lower()
    for term in terms:
        first = lowered.find(term)
        if first != -1:
            window = body[max(0, first - SNIPPET_BEFORE) : first + SNIPPET_AFTER]
            return _WHITESPACE.sub(" ", window).strip()
    return _WHITESPACE.sub(" ", body[:SNIPPET_FALLBACK]).strip()


def citation(path: str, record_id: str | None) -> str:
    return f"[source: {path}]" if record_id is None else f"[source: {path} · id: {record_id}]"


def validate_query(query: object, error: type[Exception] = SearchInvalidRequestError) -> str:
    if not isinstance(query, str) or not query.strip():
        raise error("query must be a non-blank string")
    if len(query) > MAX_QUERY_CHARS:
        raise error(f"query is longer than {MAX_QUERY_CHARS} characters")
    if not scoring.normalize(query).strip():
        raise error("query has no letters or numbers to search for")
    return query


def validate_limit(
    limit: object, default: int, error: type[Exception] = SearchInvalidRequestError
) -> int:
    """An integer 1-20; the CLI passes the raw option string, so decimal strings count."""
    if limit is None:
        return default
    if isinstance(limit, str):
        stripped = limit.strip()
        # Past 16 digits no limit fits (and int() refuses more than 4,300 digits).
        if not stripped.isascii() or not stripped.isdigit() or len(stripped) > 16:
            raise error(f"limit must be an integer from 1 to {MAX_LIMIT}")
        limit = int(stripped)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise error(f"limit must be an integer from 1 to {MAX_LIMIT}")
    return limit


def validate_scope(scope: object, error: type[Exception] = SearchInvalidRequestError) -> str:
    if scope is None:
        return "active"
    if not isinstance(scope, str) or scope not in SCOPES:
        raise error("scope must be one of active, archive, all")
    return scope


def search_result(match: Match, record: Record, terms: list[str]) -> dict[str, Any]:
    return {
        "path": record.path,
        "score": match.score,
        "score_components": dict(match.components),
        "id": record.id,
        "type": record.type,
        "updated_at": record.updated_at,
        "content_hash": record.content_hash,
        "generation": 1,
        "source_rollouts": list(record.source_rollouts),
        "snippet": snippet(record.body, terms),
        "citation": citation(record.path, record.id),
    }


def matching_records(
    root: Path,
    plan: QueryPlan,
    scope: str,
    *,
    use_index: bool = True,
    now: _dt.datetime | None = None,
    complete: int = 0,
) -> tuple[list[Match], dict[str, Any]]:
    """All matches in rank order and how they were found (``retrieval``).

    Records served by the index are *partial* (path and id only), except the first
    ``complete``; ``search_index.complete_records`` fills in the ones a caller returns.
    """
    from dsh_memory import search_index  # noqa: PLC0415 - SQLite only when searching

    instant = now or _dt.datetime.now(_dt.UTC)
    return search_index.ranked_candidates(
        root, plan, scope, instant, use_index=use_index, complete=complete
    )


def search(
    root: Path,
    query: object,
    limit: object = DEFAULT_LIMIT,
    scope: object = "active",
    *,
    use_index: bool = True,
    now: _dt.datetime | None = None,
) -> dict[str, Any]:
    """The spec's ``memory.search`` value: ``{query, count, results, retrieval}``.

    ``count`` is the number of matches before ``limit`` (as in the earlier tool);
    ``retrieval`` says whether the index served the query (``mode: "index"``) or a full
    scan did (``mode: "scan"``), and the index state. Raises ``SearchInvalidRequestError``
    for a missing, blank, oversized or token-less query, a limit outside 1-20 or an unknown
    scope; nothing on disk changes then.
    """
    checked_query = validate_query(query)
    checked_limit = validate_limit(limit, DEFAULT_LIMIT)
    checked_scope = validate_scope(scope)
    plan = plan_query(checked_query)
    # The returned records are read while the index's freshness check still runs.
    matches, retrieval = matching_records(
        root, plan, checked_scope, use_index=use_index, now=now, complete=checked_limit
    )
    from dsh_memory import search_index  # noqa: PLC0415 - SQLite only when searching

    top = matches[:checked_limit]
    completed = search_index.complete_records(root, [match.record for match in top])
    full = {record.path: record for record in completed}
    terms = [term.text for term in plan.terms]
    results = [
        search_result(match, full[match.record.path], terms)
        for match in top
        if match.record.path in full
    ]
    return {
        "query": checked_query,
        "count": len(matches),
        "results": results,
        "retrieval": retrieval,
        "warnings": search_index.invalid_record_warnings(
            root, checked_scope, use_index=use_index, index_fresh=retrieval["mode"] == "index"
        ),
    }
