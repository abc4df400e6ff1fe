"""One page of ranked results, as ``dsh-knowledge retrieve`` and ``knowledge_search`` give it.

Both say the same things about a ranked retrieval (:func:`retrieve_relevant_knowledge`):
the results up to the limit, how many items matched in all, whether more distinct results
were ranked than shown, which ranking ran when hybrid was asked for, and the warnings. The
command line (and its fast path) prints the results whole; the agent tool summarises them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dsh_knowledge.repository import KnowledgeRepository
from dsh_knowledge.retrieval import effective_ranking, retrieve_relevant_knowledge
from dsh_knowledge.scoring import MAX_RETRIEVAL_RESULTS

__all__ = ["RankedPage", "ranked_page"]


@dataclass
class RankedPage:
    """The results shown and what a caller is told about the rest."""

    results: list[dict[str, Any]]
    #: Every item the query matched, before the limit and before near-duplicates are folded.
    total: int
    #: More distinct results were ranked than shown.
    truncated: bool
    #: The ranking that ran, when hybrid was asked for (``hybrid``, or ``lexical`` when it
    #: could not run here); None for a lexical request, whose output stays as it always was.
    ranking: str | None
    warnings: list[str]

    def to_json(self, key: str, shown: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """``{key: shown, "total", "truncated"[, "ranking"][, "warnings"]}`` (``shown``
        defaults to the results themselves)."""
        output: dict[str, Any] = {
            key: self.results if shown is None else shown,
            "total": self.total,
            "truncated": self.truncated,
        }
        if self.ranking is not None:
            output["ranking"] = self.ranking
        if self.warnings:
            output["warnings"] = self.warnings
        return output


def ranked_page(
    repository: KnowledgeRepository,
    query: str,
    *,
    ranking: str,
    limit: int,
    workspace: str,
    project: str | None = None,
    preferred_types: Sequence[str] | None = None,
    status: str | None = None,
    type: str | None = None,
) -> RankedPage:
    """The first ``limit`` results of ``query`` ranked by ``ranking`` (``lexical`` or
    ``hybrid``; hybrid without the ``[semantic]`` extra ranks lexically, with a warning).

    An invalid ``limit`` (or filter) is the library's validation error.
    """
    used, problem = effective_ranking(repository.store, ranking)
    warnings: list[str] = [] if problem is None else [problem]
    counts: dict[str, int] = {}
    # One more than asked says whether more distinct results were ranked (a near-duplicate is
    # folded into the result it repeats, so ``total`` may exceed what is shown uncut).
    probe = limit + 1 if 0 < limit < MAX_RETRIEVAL_RESULTS else limit
    results = retrieve_relevant_knowledge(
        repository,
        query,
        workspace=workspace,
        project=project,
        limit=probe,
        preferred_types=preferred_types,
        status=status,
        type=type,
        counts=counts,
        ranking=used,
        warnings=warnings,
    )
    return RankedPage(
        results=results[:limit],
        total=counts.get("total", len(results)),
        truncated=len(results) > limit,
        ranking=used if ranking == "hybrid" else None,
        warnings=warnings,
    )
