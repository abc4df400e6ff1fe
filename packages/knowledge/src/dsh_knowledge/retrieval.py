"""Deterministic ranked retrieval: the earlier tool's integer scoring, explained.

Two candidate paths produce identical output (property tests hold them to it):
``use_index=True`` asks the store's index for the items where some query token matches -
SQLite's FTS5 trigram index (:mod:`dsh_knowledge.search_index`,
:mod:`dsh_knowledge._indexed_search`) or PostgreSQL's pg_trgm index
(:mod:`dsh_knowledge._pg_search`, :mod:`dsh_knowledge._pg_ranked`); ``use_index=False`` is
the earlier tool's plain scan of every active item in scope, on either backend. All feed the
same matching and scoring code (:mod:`dsh_knowledge.scoring`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dsh_common.embedding.mode import resolve_ranking
from dsh_knowledge._indexed_search import IndexedSearch
from dsh_knowledge._storage_errors import translate_storage_errors
from dsh_knowledge.errors import ValidationError
from dsh_knowledge.models import KNOWLEDGE_TYPES, parse_timestamp_ms
from dsh_knowledge.repository import KnowledgeRepository
from dsh_knowledge.scoring import (
    ACTIVE_STATUSES,
    DEFAULT_RESULT_LIMIT,
    MAX_RETRIEVAL_RESULTS,
    RETRIEVAL_SCORING,
    Query,
    Row,
    are_conservative_duplicates,
    duplicate_tokens,
    match_text,
    prepare_query,
    score_row,
    time_key,
)
from dsh_knowledge.search_index import MAX_EXACT_SUBSTRING_TOKEN_LENGTH, token_stream
from dsh_knowledge.tokenize import content_tokens, normalize_text

if TYPE_CHECKING:
    from dsh_knowledge._store_base import KnowledgeStore

__all__ = [
    "DEFAULT_RESULT_LIMIT",
    "MAX_RETRIEVAL_RESULTS",
    "RETRIEVAL_SCORING",
    "are_conservative_duplicates",
    "retrieve_relevant_knowledge",
]


def _validate(
    *,
    workspace: object,
    project: object,
    type: object,
    status: object,
    preferred_types: object,
    limit: object,
) -> None:
    if not isinstance(workspace, str) or not workspace.strip():
        raise ValidationError("Retrieval options must include a non-empty workspace.")
    if project is not None and (not isinstance(project, str) or not project.strip()):
        raise ValidationError("Project scope must be a non-empty string when provided.")
    if type is not None and type not in KNOWLEDGE_TYPES:
        raise ValidationError(f"Invalid knowledge type: {type}")
    if status is not None and status not in ACTIVE_STATUSES:
        raise ValidationError(f"Invalid retrieval status: {status}")
    if preferred_types is not None and (
        isinstance(preferred_types, str)
        or not isinstance(preferred_types, Sequence)
        or any(t not in KNOWLEDGE_TYPES for t in preferred_types)
        or len(set(preferred_types)) != len(preferred_types)
        or len(preferred_types) > 3
    ):
        raise ValidationError("Preferred knowledge types must be unique valid types.")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValidationError("Retrieval limit must be a positive integer.")


def _eligible_where(
    workspace: str, project: str | None, type: str | None, status: str | None, alias: str
) -> tuple[str, list[Any]]:
    """Eligibility over ``alias`` (knowledge ``k`` or its index copy ``d``: same columns)."""
    statuses = [status] if status is not None else list(ACTIVE_STATUSES)
    a = alias
    clauses = [
        f"{a}.workspace = ?",
        f"{a}.status IN ({','.join('?' * len(statuses))})",
        # Automatic-origin candidates wait for an explicit verification before retrieval.
        f"NOT ({a}.status = 'candidate' AND {a}.creation_origin = 'automatic')",
    ]
    params: list[Any] = [workspace, *statuses]
    if project is None:
        clauses.append(f"{a}.project IS NULL")
    else:
        clauses.append(f"({a}.project IS NULL OR {a}.project = ?)")
        params.append(project)
    if type is not None:
        clauses.append(f"{a}.type = ?")
        params.append(type)
    return " AND ".join(clauses), params


_EVIDENCE_COUNT = (
    "(SELECT count(*) FROM (SELECT 1 FROM knowledge_evidence e "
    "WHERE e.knowledge_id = k.id LIMIT 3) AS first_three)"
)


def _scanned_rows(repository: KnowledgeRepository, where: str, params: list[Any]) -> list[Row]:
    sql = (
        "SELECT k.id, k.type, k.project, k.status, k.created_at, k.updated_at, "  # noqa: S608 - fixed clauses
        f"{_EVIDENCE_COUNT}, k.content FROM knowledge k WHERE {where}"
    )
    rows = []
    for (
        item_id,
        kind,
        project,
        status,
        created,
        updated,
        count,
        content,
    ) in repository.store.connection.execute(sql, params):
        tokens = content_tokens(content)
        stream, normalized = token_stream(tokens), normalize_text(content)
        rows.append(
            Row(item_id, kind, project, status, created, updated, count, tokens, stream, normalized)
        )
    return rows


def _path_of(repository: KnowledgeRepository, *_: object) -> str:
    return repository.store.path


@translate_storage_errors(_path_of)
def retrieve_relevant_knowledge(
    repository: KnowledgeRepository,
    query: str,
    *,
    workspace: str,
    project: str | None = None,
    limit: int | None = None,
    preferred_types: Sequence[str] | None = None,
    status: str | None = None,
    type: str | None = None,
    use_index: bool = True,
    counts: dict[str, int] | None = None,
    ranking: str | None = None,
    warnings: list[str] | None = None,
) -> list[dict[str, Any]]:
    """Ranked ``[{"knowledge", "score", "explanation"}]`` for ``query`` in one scope.

    Considers verified items and explicit-origin candidates of ``workspace`` that are
    workspace-wide or (when given) in ``project``; archived and superseded items never.
    ``use_index=False`` runs the plain full scan (same results, slower at scale).
    ``counts``, when given, receives ``"total"``: every eligible item the query matched,
    before ``limit`` and before near-duplicates are folded into a kept result.

    ``ranking``: ``"lexical"`` (this ranking, exactly) or ``"hybrid"`` (fused with the
    bundled sentence model, :mod:`dsh_knowledge.hybrid`: each result then also has a
    ``hybrid`` account and ``score`` is the fused score); None means ``$DSH_RANKING``, else
    lexical. ``warnings``, when given, receives what the caller should be told (hybrid
    without the ``[semantic]`` extra ranks lexically and says so there).
    """
    if counts is not None:
        counts["total"] = 0
    _validate(
        workspace=workspace,
        project=project,
        type=type,
        status=status,
        preferred_types=preferred_types,
        limit=limit,
    )
    if not isinstance(query, str):
        raise ValidationError("Retrieval query must be a string.")
    used, problem = effective_ranking(repository.store, ranking)
    if problem is not None and warnings is not None:
        warnings.append(problem)
    if used == "hybrid":
        from dsh_knowledge.hybrid import retrieve_hybrid  # noqa: PLC0415 - numpy, the model

        return retrieve_hybrid(
            repository,
            query,
            workspace=workspace,
            project=project,
            limit=limit,
            preferred_types=preferred_types,
            status=status,
            type=type,
            use_index=use_index,
            counts=counts,
            warnings=warnings,
        )
    prepared = prepare_query(query)
    if not prepared.tokens:
        return []
    preferred = list(preferred_types or [])
    result_limit = min(limit if limit is not None else DEFAULT_RESULT_LIMIT, MAX_RETRIEVAL_RESULTS)
    found = rank_lexically(
        repository,
        prepared,
        workspace=workspace,
        project=project,
        type=type,
        status=status,
        preferred=preferred,
        use_index=use_index,
        take=lambda rows: _fold(rows, result_limit),
        count=counts is not None,
    )
    if counts is not None:
        counts["total"] = found.total
    return [_result(row, found.items[row.item_id], len(prepared.tokens)) for row in found.rows]


def effective_ranking(store: KnowledgeStore, ranking: str | None) -> tuple[str, str | None]:
    """The ranking a retrieval on ``store`` uses for ``ranking`` (None: ``$DSH_RANKING``,
    else lexical), and the warning to give when hybrid was asked for but cannot run here
    (without the ``[semantic]`` extra, it ranks lexically). An unknown name raises
    ``invalid-ranking``."""
    wanted = resolve_ranking(ranking)
    if wanted == "lexical":
        return wanted, None
    from dsh_knowledge.vectors import hybrid_problem  # noqa: PLC0415

    problem = hybrid_problem(store)
    return ("lexical", problem) if problem is not None else ("hybrid", None)


@dataclass
class LexicalRanking:
    """What :func:`rank_lexically` read: the rows ``take`` kept, their items, the number of
    eligible matches (when counted), the newest match's time and (when asked) every
    eligible match's id."""

    rows: list[Row]
    items: dict[str, dict[str, Any]]
    total: int
    newest: int | None
    hit_ids: set[str] | None = None


def rank_lexically(
    repository: KnowledgeRepository,
    prepared: Query,
    *,
    workspace: str,
    project: str | None,
    type: str | None,
    status: str | None,
    preferred: list[str],
    use_index: bool,
    take: Callable[[Iterator[Row]], list[Row]],
    count: bool,
    hit_ids: bool = False,
    fetch_items: bool = True,
) -> LexicalRanking:
    """The lexical ranking of ``prepared`` in one scope, as scored rows in rank order.

    ``take`` reads as many rows as it needs from the ranked stream (near-duplicate folding
    and the limit for lexical retrieval; the first few hundred for hybrid retrieval), on
    whichever candidate path applies: PostgreSQL's or SQLite's index, or the full scan.
    ``fetch_items=False`` leaves ``items`` empty (hybrid retrieval reads only the items it
    shows).
    """

    def fetched(rows: list[Row]) -> dict[str, dict[str, Any]]:
        if not fetch_items:
            return {}
        return {i["id"]: i for i in repository.get_many([r.item_id for r in rows])}

    indexable = all(len(t) <= MAX_EXACT_SUBSTRING_TOKEN_LENGTH for t in prepared.tokens)
    store = repository.store
    total = 0
    ids: set[str] | None = None
    if use_index and store.index_ready and indexable and store.kind == "postgresql":
        from dsh_knowledge._pg_ranked import RankedSearch  # noqa: PLC0415 - PostgreSQL only

        store.sync_search_index()
        where, params = _eligible_where(workspace, project, type, status, "d")
        with store.read() as db:
            ranked = RankedSearch(db, prepared)
            newest, tiers, ordered = ranked.rows(where, params, project, preferred)
            selected = take(_in_rank_order(ordered, tiers, prepared, project, preferred, newest))
            if hit_ids:
                ids = ranked.hit_ids(where, params)
            ranked.close()
            items = fetched(selected)
        total = ranked.total
    elif use_index and store.index_ready and indexable:
        store.sync_search_index()
        where, params = _eligible_where(workspace, project, type, status, "d")
        with repository.store.read():
            search = IndexedSearch(repository, prepared)
            newest, tiers, ordered = search.rows(where, params, project, preferred)
            selected = take(_in_rank_order(ordered, tiers, prepared, project, preferred, newest))
            if count:
                total = search.eligible_hits(where, params)
            if hit_ids:
                ids = search.eligible_hit_ids(where, params)
            items = fetched(selected)
            search.remember()
    else:
        where, params = _eligible_where(workspace, project, type, status, "k")
        matches = []
        for row in _scanned_rows(repository, where, params):
            row.match = match_text(prepared, row)
            if row.match[1] or row.match[2]:
                matches.append(row)
        total = len(matches)
        if hit_ids:
            ids = {row.item_id for row in matches}
        parsed = [parse_timestamp_ms(row.updated_at) for row in matches]
        newest = max((value for value in parsed if value is not None), default=None)
        selected = take(
            _in_rank_order(False, iter([matches]), prepared, project, preferred, newest)
        )
        items = fetched(selected)
    return LexicalRanking(selected, items, total, newest, ids)


def _in_rank_order(  # noqa: PLR0917 - one call site per path
    ordered: bool,
    tiers: Any,
    query: Query,
    project: str | None,
    preferred: list[str],
    newest: int | None,
) -> Iterator[Row]:
    """Every ranked row, scored, best first.

    ``tiers`` yields groups of rows in descending text order (the full scan passes one
    group with every match); each group is ordered by the complete key before it is read,
    unless ``ordered`` says the backend already delivered the rows in final rank order
    (then only the rows actually read are scored).
    """
    for tier in tiers:
        if not ordered:
            for row in tier:
                score_row(query, row, project, preferred, newest)
            # Stable multi-key sort: id ascending first, then the descending keys on top.
            tier.sort(key=lambda row: row.item_id)
            tier.sort(
                key=lambda row: (row.score, time_key(row.updated_at), time_key(row.created_at)),
                reverse=True,
            )
        for row in tier:
            if ordered:  # rows arrive in rank order; score only the ones we look at
                score_row(query, row, project, preferred, newest)
            yield row


def _fold(rows: Iterator[Row], limit: int) -> list[Row]:
    """Walk the ranked rows with near-duplicate suppression, keeping at most ``limit``.

    A duplicate of a kept row is recorded in its ``suppressed`` list; the walk stops at the
    first non-duplicate once ``limit`` rows are kept.
    """
    selected: list[Row] = []
    for row in rows:
        # Same type and exact scope are part of the predicate (workspace is fixed here).
        original = next(
            (
                kept
                for kept in selected
                if kept.type == row.type
                and kept.project == row.project
                and duplicate_tokens(kept.tokens, row.tokens)
            ),
            None,
        )
        if original is not None:
            original.suppressed.append(row.item_id)
            continue
        if len(selected) == limit:
            return selected
        selected.append(row)
    return selected


def explanation(row: Row, token_count: int) -> dict[str, Any]:
    """The ``explanation`` object of a scored row."""
    phrase, exact, partial = row.match
    coverage = math.floor((len(exact) + len(partial)) / token_count * 1000 + 0.5)
    if phrase:
        match_type = "exact_phrase"
    elif exact and partial:
        match_type = "mixed_tokens"
    elif exact:
        match_type = "exact_tokens"
    elif partial:
        match_type = "partial_tokens"
    else:  # hybrid ranking only: the item came through the semantic channel alone
        match_type = "none"
    return {
        "matchType": match_type,
        "matchedTokens": [*exact, *partial],
        # JSON.stringify writes 1, not 1.0: keep whole numbers integral.
        "tokenCoverage": coverage // 1000 if coverage % 1000 == 0 else coverage / 1000,
        "contributions": row.contributions,
        "suppressedSimilarIds": row.suppressed,
    }


def _result(row: Row, item: dict[str, Any], token_count: int) -> dict[str, Any]:
    return {"knowledge": item, "score": row.score, "explanation": explanation(row, token_count)}
