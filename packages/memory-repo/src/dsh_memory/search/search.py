"""``memory.search``: bilingual full-text search over payload records.

Ranking: :mod:`dsh_memory.search.scoring` (exact phrase and id components, BM25F with corpus
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
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dsh_memory.errors import SearchInvalidRequestError
from dsh_memory.search import scoring
from dsh_memory.search.scoring import Match, QueryPlan, is_visible, plan_query
from dsh_memory.store.records import SCOPES, Record

if TYPE_CHECKING:
    from dsh_common.embedding import FusedHit

#: ``progress(done, total)`` while vectors are encoded.
Progress = Callable[[int, int], object]

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
    """The texts of the terms a query is ranked by (see :mod:`dsh_memory.search.scoring`)."""
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
    from dsh_memory.search import search_index  # noqa: PLC0415 - SQLite only when searching

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
    ranking: object = None,
    encode_budget: int | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """The contract's ``memory.search`` value: ``{query, count, results, retrieval}``.

    ``count`` is the number of matches before ``limit`` (as in the earlier tool);
    ``retrieval`` says whether the index served the query (``mode: "index"``) or a full
    scan did (``mode: "scan"``), and the index state. Raises ``SearchInvalidRequestError``
    for a missing, blank, oversized or token-less query, a limit outside 1-20, an unknown
    scope or ranking; nothing on disk changes then.

    ``ranking`` (else ``DSH_RANKING``) ``"hybrid"`` fuses the lexical matches with meaning
    (:mod:`dsh_memory.search.hybrid`): each result gains ``hybrid`` (why it ranks where it does),
    ``count`` counts every fused candidate, and ``retrieval.ranking`` says which ranking
    answered. Records without a vector are encoded first, at most ``encode_budget`` of them
    (None: all; ``progress(done, total)`` is told); past it the ranking stays lexical and
    ``warnings`` says so. ``lexical`` (the default) is exactly the earlier output.
    """
    checked_query = validate_query(query)
    checked_limit = validate_limit(limit, DEFAULT_LIMIT)
    checked_scope = validate_scope(scope)
    wanted = hybrid_ranking(ranking, SearchInvalidRequestError)
    plan = plan_query(checked_query)
    instant = now or _dt.datetime.now(_dt.UTC)
    # The returned records are read while the index's freshness check still runs.
    matches, retrieval = matching_records(
        root, plan, checked_scope, use_index=use_index, now=instant, complete=checked_limit
    )
    from dsh_memory.search import search_index  # noqa: PLC0415 - SQLite only when searching

    notes: list[dict[str, str]] = []
    fused = None
    if wanted:
        fused, notes = fused_ranking(
            root,
            checked_query,
            matches,
            retrieval,
            scope=checked_scope,
            now=instant,
            limit=checked_limit,
            budget=encode_budget,
            progress=progress,
        )
        retrieval = {**retrieval, "ranking": "hybrid" if fused is not None else "lexical"}
    terms = [term.text for term in plan.terms]
    top: list[Hit]
    if fused is None:
        top = [(match, None) for match in matches[:checked_limit]]
        count = len(matches)
    else:
        top, count = fused
    completed = search_index.complete_records(root, [match.record for match, _hit in top])
    full = {record.path: record for record in completed}
    results = []
    for match, hit in top:
        if match.record.path not in full:
            continue
        result = search_result(match, full[match.record.path], terms)
        if hit is not None:
            result["hybrid"] = hit.explain()
        results.append(result)
    return {
        "query": checked_query,
        "count": count,
        "results": results,
        "retrieval": retrieval,
        "warnings": search_index.invalid_record_warnings(
            root, checked_scope, use_index=use_index, index_fresh=retrieval["mode"] == "index"
        )
        + notes,
    }


def hybrid_ranking(ranking: object, error: type[Exception]) -> bool:
    """Whether ``ranking`` (else ``DSH_RANKING``) asks for hybrid; raises ``error`` for a
    name that is neither. The lexical path imports nothing of hybrid ranking."""
    if ranking is None and not os.environ.get("DSH_RANKING", "").strip():
        return False
    from dsh_memory.search import hybrid  # noqa: PLC0415

    return hybrid.resolve(ranking, error) == "hybrid"


#: A hit of the hybrid ranking: the lexical match (a zero-score one for a record found by
#: meaning alone) and the fused account of it.
Hit = tuple[Match, "FusedHit | None"]


def fused_ranking(
    root: Path,
    query: str,
    matches: list[Match],
    retrieval: dict[str, Any],
    *,
    scope: str,
    now: _dt.datetime,
    limit: int,
    budget: int | None,
    progress: Progress | None,
) -> tuple[tuple[list[Hit], int] | None, list[dict[str, str]]]:
    """The first ``limit`` hybrid hits and the number of fused candidates, or None and the
    warnings that say why the ranking stays lexical."""
    from dsh_memory.search import hybrid  # noqa: PLC0415

    if retrieval["mode"] != "index":
        return None, [hybrid.warning(hybrid.NO_INDEX, hybrid.NO_INDEX_MESSAGE)]
    fused, notes = hybrid.fuse_matches(
        root, query, matches, scope=scope, now=now, limit=limit, budget=budget, progress=progress
    )
    if fused is None:
        return None, notes
    by_path = {match.record.path: match for match in matches}
    hits: list[Hit] = []
    for hit in fused.hits:
        match = by_path.get(hit.key)
        if match is None:  # found by meaning alone: no lexical score or components
            record = Record(path=hit.key, signature="", valid=True, partial=True)
            match = Match(record, 0.0, (0.0, 0.0, 0.0, 0.0))
        hits.append((match, hit))
    return (hits, fused.count), notes
