"""Hybrid ranking: knowledge's own ranking fused with the bundled multilingual sentence model.

The rule every dsh product follows (docs/hybrid-ranking.md; :func:`dsh_common.embedding.fuse`):
``score = z + w x lexical / best lexical``, where ``z`` is the query's cosine with an
item's stored vector standardised among the items of the same language, and ``w`` is
:data:`FUSION_LEXICAL_WEIGHT` (1.5 here, measured; the shared default is 0.5). Here:

- **the lexical channel** is :mod:`dsh_knowledge.retrieval`'s ranking - its eligibility,
  integer scores and order, exactly - cut to its first :data:`LEXICAL_POOL` rows (a broad
  query's long tail would cost more to score than the whole semantic channel, and its share
  of the best score is small there anyway); near-duplicates are not folded yet;
- **the semantic channel** is every stored vector of the workspace
  (:mod:`dsh_knowledge.semantic_index`), restricted by an eligibility mask computed with the
  very same SQL conditions as the lexical channel (workspace, workspace-wide or the
  project, candidate or verified, no automatic candidate, the requested type and status): a
  semantic hit can never come from another workspace, another project, an archived or
  superseded item or an unreviewed automatic candidate;
- the fused order is then walked with the lexical ranking's near-duplicate folding and
  ``limit``, so the first ``k`` of a longer answer are the answer for ``k``.

Each result keeps ``knowledge`` and ``explanation`` (the lexical account of that item:
``matchType`` ``none`` for an item no query token matched), ``score`` becomes the fused
score, and ``hybrid`` is :meth:`dsh_common.embedding.FusedHit.explain` (``channels``, and the
``lexical`` and ``semantic`` parts). ``total`` counts every eligible item either channel
found. Deterministic: equal inputs give the same order on every run and on both backends.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import islice
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from dsh_common import embedding
from dsh_common.embedding.fusion import SEMANTIC_FLOOR, FusedHit, SemanticIndex, fuse
from dsh_knowledge.retrieval import _eligible_where, explanation, rank_lexically
from dsh_knowledge.scoring import (
    DEFAULT_RESULT_LIMIT,
    MAX_RETRIEVAL_RESULTS,
    Row,
    duplicate_tokens,
    match_text,
    prepare_query,
    score_row,
)
from dsh_knowledge.search_index import token_stream
from dsh_knowledge.semantic_index import complete, workspace_index
from dsh_knowledge.tokenize import MAX_QUERY_CHARACTERS, content_tokens, normalize_text

if TYPE_CHECKING:
    from dsh_knowledge.repository import KnowledgeRepository

__all__ = ["LEXICAL_POOL", "retrieve_hybrid"]

#: What a lexical hit's share of the best lexical score is worth, in standard deviations of
#: the semantic channel. dsh_common's default (0.5) let a Chinese keyword query lose its
#: exact answer to an English note: among many Chinese notes on the same topic the answer's
#: standardised cosine is modest. Measured on the bilingual evaluation with 2,000 and
#: 10,000 knowledge distractors (bench_hybrid.py --weights): 1.5 is the smallest weight
#: that keeps every keyword query's answer first at both sizes (keyword MRR 1.000, as
#: BM25's), while cross-lingual + paraphrase top-3 stays at 0.85 and 0.80 (0.85 and 0.79
#: at 0.5); the price is their MRR, 0.79 and 0.75 instead of 0.82 and 0.78.
FUSION_LEXICAL_WEIGHT: float = 1.5
#: How many of the lexical ranking's first rows take part in the fusion.
LEXICAL_POOL: Final = 200
#: The first window of fused hits walked is twice the limit and this many more (a hook asks
#: for 4); it is widened fourfold while near-duplicate folding needs more.
_WINDOW_SLACK = 8
_NO_CONTRIBUTIONS = {
    "exactPhrase": 0,
    "exactTokens": 0,
    "partialTokens": 0,
    "tokenCoverage": 0,
    "text": 0,
    "scope": 0,
    "status": 0,
    "type": 0,
    "evidence": 0,
    "freshness": 0,
}


def _missing_warning(count: int) -> str:
    return (
        f"{count} items of this scope have no stored vector yet and rank by their words "
        "only: run `dsh-knowledge vectors build` to encode them once"
    )


def retrieve_hybrid(
    repository: KnowledgeRepository,
    query: str,
    *,
    workspace: str,
    project: str | None,
    limit: int | None,
    preferred_types: Sequence[str] | None,
    status: str | None,
    type: str | None,
    use_index: bool,
    counts: dict[str, int] | None,
    warnings: list[str] | None,
) -> list[dict[str, Any]]:
    """The hybrid ranking of ``query`` (options already validated by the caller)."""
    text = query[:MAX_QUERY_CHARACTERS]
    if not text.strip():
        return []
    store = repository.store
    prepared = prepare_query(query)
    preferred = list(preferred_types or [])
    result_limit = min(limit if limit is not None else DEFAULT_RESULT_LIMIT, MAX_RETRIEVAL_RESULTS)
    pool: list[Row] = []
    hit_ids: set[str] = set()
    newest: int | None = None
    if prepared.tokens:
        lexical = rank_lexically(
            repository,
            prepared,
            workspace=workspace,
            project=project,
            type=type,
            status=status,
            preferred=preferred,
            use_index=use_index,
            take=lambda rows: list(islice(rows, LEXICAL_POOL)),
            count=False,
            hit_ids=counts is not None,
            fetch_items=False,
        )
        pool, newest, hit_ids = lexical.rows, lexical.newest, lexical.hit_ids or set()
    model = embedding.model_id()
    where, params = _eligible_where(workspace, project, type, status, "k")
    eligible = _eligible(store, where, params)
    index = workspace_index(store, workspace, model)
    rows = _rows(store, index, eligible)
    if rows is None:  # items without a vector: a few are encoded now
        index, missing = complete(store, index, eligible, model)
        if missing and warnings is not None:
            warnings.append(_missing_warning(missing))
        rows = [row for row in map(index.positions.get, eligible) if row is not None]
    cosines = index.cosines(embedding.encode([text])[0])
    mask = np.zeros(len(index), dtype=bool)
    mask[rows] = True
    if counts is not None:
        semantic = {index.keys[r] for r in np.nonzero(mask & (cosines >= SEMANTIC_FLOOR))[0]}
        counts["total"] = len(hit_ids | semantic)
    walk = _Walk(repository, prepared, project, preferred, newest, pool)
    chosen = walk.run(index, cosines, mask, result_limit)
    items = {i["id"]: i for i in repository.get_many([row.item_id for _, row in chosen])}
    token_count = len(prepared.tokens)
    return [
        {
            "knowledge": items[row.item_id],
            "score": hit.score,
            "explanation": explanation(row, token_count) if token_count else _no_tokens(row),
            "hybrid": hit.explain(),
        }
        for hit, row in chosen
    ]


#: Eligibility lists one store object keeps (by filter), while nothing is committed.
_MAX_ELIGIBLE_CACHED = 8


def _eligible(store: Any, where: str, params: list[Any]) -> list[str]:
    """The ids of every item the query may see (the lexical channel's own SQL conditions).

    Reading them costs a long-lived process more than the rest of a query at 10,000 items,
    so it keeps them per filter while the store's change token says nothing was committed
    (SQLite; PostgreSQL reads them every time).
    """
    token = store.change_token()
    cache: dict[tuple[Any, ...], tuple[Any, list[str]]] = store.search_cache.setdefault(
        "eligible", {}
    )
    key = (where, *params)
    hit = cache.get(key)
    if token is not None and hit is not None and hit[0] == token:
        return hit[1]
    sql = f"SELECT k.id FROM knowledge k WHERE {where}"  # noqa: S608 - fixed clauses
    with store.read() as db:
        eligible = [row[0] for row in db.execute(sql, params)]
    if token is not None:
        if len(cache) >= _MAX_ELIGIBLE_CACHED:
            cache.clear()
        cache[key] = (token, eligible)
    return eligible


def _rows(store: Any, index: SemanticIndex, eligible: list[str]) -> list[int] | None:
    """The index rows of the ``eligible`` items; None when one of them has no vector.

    Kept beside the eligibility list it was computed from, for the same index object.
    """
    cache: dict[str, tuple[list[str], SemanticIndex, list[int] | None]] = (
        store.search_cache.setdefault("eligible_rows", {})
    )
    hit = cache.get("last")
    if hit is not None and hit[0] is eligible and hit[1] is index:
        return hit[2]
    found = list(map(index.positions.get, eligible))
    rows = None if None in found else [row for row in found if row is not None]
    cache["last"] = (eligible, index, rows)
    return rows


def _no_tokens(row: Row) -> dict[str, Any]:
    """The explanation of a hit for a query with no scorable token (only stopwords)."""
    return {
        "matchType": "none",
        "matchedTokens": [],
        "tokenCoverage": 0,
        "contributions": row.contributions,
        "suppressedSimilarIds": row.suppressed,
    }


class _Walk:
    """The fused order walked with near-duplicate folding (the lexical ranking's rule)."""

    def __init__(  # noqa: PLR0917 - one call site
        self,
        repository: KnowledgeRepository,
        prepared: Any,
        project: str | None,
        preferred: list[str],
        newest: int | None,
        pool: list[Row],
    ) -> None:
        self.repository = repository
        self.prepared = prepared
        self.project = project
        self.preferred = preferred
        self.newest = newest
        self.rows: dict[str, Row] = {row.item_id: row for row in pool}
        # The integer scores themselves: the hybrid account shows them as the ranking does.
        self.pairs: list[tuple[str, float]] = [(row.item_id, row.score) for row in pool]

    def run(
        self, index: SemanticIndex, cosines: Any, mask: Any, limit: int
    ) -> list[tuple[FusedHit, Row]]:
        window = 2 * limit + _WINDOW_SLACK
        while True:
            hits = fuse(
                self.pairs,
                index,
                cosines,
                eligible=mask,
                limit=window,
                lexical_weight=FUSION_LEXICAL_WEIGHT,
            )
            self._load([hit.key for hit in hits if hit.key not in self.rows])
            for row in self.rows.values():
                row.suppressed = []  # a wider window walks again from the start
            chosen, finished = self._fold(hits, limit)
            if finished or len(hits) < window:
                return chosen
            window *= 4

    def _fold(self, hits: list[FusedHit], limit: int) -> tuple[list[tuple[FusedHit, Row]], bool]:
        chosen: list[tuple[FusedHit, Row]] = []
        for hit in hits:
            row = self.rows[hit.key]
            original = next(
                (
                    kept
                    for _, kept in chosen
                    if kept.type == row.type
                    and kept.project == row.project
                    and duplicate_tokens(kept.tokens, row.tokens)
                ),
                None,
            )
            if original is not None:
                original.suppressed.append(row.item_id)
                continue
            if len(chosen) == limit:
                return chosen, True
            chosen.append((hit, row))
        return chosen, False

    def _load(self, item_ids: list[str]) -> None:
        """Rows for hits outside the lexical pool, scored by the lexical rules for their
        explanation (their fused score has no lexical part)."""
        for item in self.repository.get_many(item_ids):
            tokens = content_tokens(item["content"])
            row = Row(
                item["id"],
                item["type"],
                item["scope"].get("project"),
                item["status"],
                item["createdAt"],
                item["updatedAt"],
                len(item["evidence"]),
                tokens,
                token_stream(tokens),
                normalize_text(item["content"]),
            )
            if self.prepared.tokens:
                row.match = match_text(self.prepared, row)
                score_row(self.prepared, row, self.project, self.preferred, self.newest)
            else:
                row.contributions = dict(_NO_CONTRIBUTIONS)
            self.rows[row.item_id] = row
