"""Recall: deterministic, CJK-aware keyword/substring scoring over the bounded corpus.

The scoring rules are :mod:`dsh_compound.scoring`'s; the records come from
:func:`dsh_compound.corpus_index.read_corpus` (the corpus scan, served from the recall cache
where files did not change, identical to a cold scan). Ties sort by ID. Scores measure
lexical overlap, not semantic confidence.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from dsh_common import paths as common_paths
from dsh_common.cli import is_undecodable
from dsh_compound.corpus_index import read_corpus
from dsh_compound.errors import InvalidLimitError, InvalidQueryError, InvalidRankingError
from dsh_compound.evidence import EvidenceRun, evidence_report, evidence_warning
from dsh_compound.limits import LIMITS, js_length
from dsh_compound.record import self_reported_evidence, summary_of
from dsh_compound.scanning import StoredRecord, unknown_keys_warning
from dsh_compound.scoring import (
    FIELD_WEIGHTS,
    Terms,
    recall_terms,
    score_metadata,
    score_text,
    searchable_text,
)
from dsh_compound.semantic import ENCODE_LIMIT
from dsh_compound.workspace import select_workspace

__all__ = [
    "FIELD_WEIGHTS",
    "RETRIEVAL_METHOD",
    "Terms",
    "recall",
    "recall_terms",
    "score_metadata",
    "score_text",
    "searchable_text",
    "validate_limit",
    "validate_query",
]

RETRIEVAL_METHOD = "lexical-nfkc-substring"


def validate_query(query: object) -> str:
    """Return ``query`` if it is nonempty text of at most 500 JavaScript characters."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidQueryError("query must be nonempty text")
    if is_undecodable(query):
        raise InvalidQueryError("query is not valid UTF-8 text")
    if js_length(query) > LIMITS.query_length:
        raise InvalidQueryError(f"query is longer than {LIMITS.query_length} characters")
    return query


def resolve_ranking(ranking: object = None, *, source: str | None = None) -> str:
    """``"lexical"`` or ``"hybrid"``: ``ranking`` when given, else ``$DSH_RANKING``, else
    lexical (dsh-common's rule); anything else is :class:`InvalidRankingError`. ``source``
    names the option the value came from in the message (``--ranking``)."""
    from dsh_common.embedding import mode  # noqa: PLC0415

    try:
        if ranking is not None and source is not None:
            return mode.parse_ranking(ranking, source=source)
        return mode.resolve_ranking(ranking)
    except mode.InvalidRankingError as exc:
        raise InvalidRankingError(exc.message, details=exc.details) from None


def validate_limit(limit: object) -> int:
    """Return ``limit`` if it is an integer from 1 to 10 (text digits are accepted)."""
    value: object = limit
    if isinstance(limit, str):
        text = limit.strip()
        value = int(text) if text.isascii() and text.isdigit() else None
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidLimitError(f"limit must be an integer from 1 to {LIMITS.max_limit}")
    if not 1 <= value <= LIMITS.max_limit:
        raise InvalidLimitError(f"limit must be from 1 to {LIMITS.max_limit}, not {value}")
    return value


def _result(
    workspace: common_paths.Workspace, stored: StoredRecord, score: int, cache: EvidenceRun
) -> dict[str, Any]:
    metadata = stored.metadata
    report = evidence_report(workspace, metadata["files"], cache)
    warnings: list[str] = []
    if stored.content_status != "consistent":
        warnings.append("contentStatus modified: the body differs from the metadata")
    if stored.unknown_keys:
        warnings.append(unknown_keys_warning(stored.id, stored.unknown_keys))
    moved = evidence_warning(stored.id, report)
    if moved is not None:
        warnings.append(moved)
    return {
        "id": stored.id,
        "title": metadata["title"],
        "tags": list(metadata["tags"]),
        "path": str(stored.path),
        "digest": stored.digest,
        "score": score,
        "summary": summary_of(metadata),
        "evidence": self_reported_evidence(metadata, bounded=True),
        **report,
        "contentStatus": stored.content_status,
        "warnings": warnings,
    }


def recall(
    workspace: str | os.PathLike[str],
    query: str,
    limit: int = LIMITS.default_limit,
    *,
    run: EvidenceRun | None = None,
    ranking: str | None = None,
    encode_limit: int | None = ENCODE_LIMIT,
    progress: Callable[[int, int], object] | None = None,
) -> dict[str, Any]:
    """Rank the corpus's records for ``query``; ``{query, results, warnings, ...}``.

    The contract's six fields (docs/compatibility/compound.md) come first and keep their meaning
    (``truncated``: the scan stopped
    at the corpus limit). Two more say whether the answer is complete: ``total`` counts the
    scanned records that matched, before ``limit``; ``resultsTruncated`` is true when
    ``limit`` cut some of them off. When ``truncated`` is true, ``total`` is a lower bound.
    ``run`` carries the evidence comparisons (and their hashing budget) of a larger run.

    ``ranking`` is ``"lexical"`` or ``"hybrid"`` (default: ``$DSH_RANKING``, else lexical;
    anything else is ``invalid-ranking``). Lexical is the contract's ranking, output
    unchanged. Hybrid fuses it with the lessons' meaning (:mod:`dsh_compound.semantic`):
    each hit gains ``hybrid`` (the fused score and each channel's part) and the result
    ``ranking: "hybrid"``; where that cannot run - no ``[semantic]`` extra, or more than
    ``encode_limit`` lessons without vectors (None: encode them all, reporting
    ``progress(done, total)``) - the results are the lexical ones, ``ranking`` says
    ``"lexical"`` and the first warning says why.
    """
    text = validate_query(query)
    count = validate_limit(limit)
    mode = resolve_ranking(ranking)
    selected = select_workspace(workspace)
    view = read_corpus(selected)
    scan = view.scan
    scored = view.ranked(Terms(recall_terms(text)))
    cache = run if run is not None else EvidenceRun()
    extra: dict[str, Any] = {}
    hits: list[tuple[int, StoredRecord, dict[str, Any] | None]]
    hits = [(score, stored, None) for score, stored in scored]
    if mode == "hybrid":
        from dsh_compound.semantic import rank  # noqa: PLC0415 - numpy and the model

        fused = rank(
            str(selected.canonical),
            view.records,
            scored,
            text,
            encode_limit=encode_limit,
            progress=progress,
        )
        if fused.hits is None:
            scan.warnings.add_first(str(fused.warning))
            extra["ranking"] = "lexical"
        else:
            by_id = {record.id: record for record in view.records}
            lexical = {record.id: score for score, record in scored}
            hits = [(lexical.get(hit.key, 0), by_id[hit.key], hit.explain()) for hit in fused.hits]
            extra["ranking"] = "hybrid"
    results = []
    for score, stored, explained in hits[:count]:
        result = _result(selected, stored, score, cache)
        if explained is not None:
            result["hybrid"] = explained
        results.append(result)
    unverified = cache.warning()
    if unverified is not None:
        scan.warnings.add(unverified)
    return {
        "query": text,
        "results": results,
        "warnings": scan.warnings.as_list(),
        "retrievalMethod": RETRIEVAL_METHOD,
        "scanned": scan.scanned,
        "truncated": scan.truncated,
        "total": len(hits),
        "resultsTruncated": len(hits) > len(results),
        **extra,
    }
