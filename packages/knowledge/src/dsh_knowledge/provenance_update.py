"""``dsh-knowledge provenance ID…``: Git provenance for file evidence, after the commit.

Agents nearly always add knowledge on a dirty work tree, so file evidence is often stored
without ``gitProvenance`` and would stay ``unverifiable`` for good. Once such a file is
committed and clean, :func:`capture_missing_provenance` records the commit and path for it -
the same strict capture rules as at add time (tracked, present in HEAD, index and work tree
equal to HEAD, no symlinked component, no index flags, no filters). It is an explicit change:
an item that gains provenance has its evidence rewritten and its ``updatedAt`` moved; an
item where nothing could be captured is left exactly as it was.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from dsh_knowledge.errors import NotFoundError
from dsh_knowledge.provenance import (
    DEFAULT_GIT_COMMAND_TIMEOUT_MS,
    MAX_PROVENANCE_CAPTURE_BUDGET_MS,
    capture_file_provenances,
)
from dsh_knowledge.repository import KnowledgeRepository

__all__ = ["CAPTURE_PROVENANCE_GUIDANCE", "capture_missing_provenance", "provenance_guidance"]

CAPTURE_PROVENANCE_GUIDANCE = (
    "Once the evidence file is committed and clean, run `dsh-knowledge provenance {id}` to "
    "record its Git provenance."
)


def provenance_guidance(item: Mapping[str, Any]) -> dict[str, str] | None:
    """The ``capture_provenance`` guidance entry when file evidence lacks provenance."""
    if any(e["type"] == "file" and "gitProvenance" not in e for e in item["evidence"]):
        message = CAPTURE_PROVENANCE_GUIDANCE.format(id=item["id"])
        return {"code": "capture_provenance", "message": message}
    return None


def capture_missing_provenance(
    repository: KnowledgeRepository,
    item_ids: Sequence[str],
    repo_dir: str | os.PathLike[str],
) -> list[dict[str, Any]]:
    """Per item ``{"id", "attempted", "captured", "warnings", "updatedAt"}``.

    ``warnings`` lists ``{"evidenceIndex", "reason"}`` for file evidence still without
    provenance (capture reasons such as ``working_tree_changed``). Unknown ids raise
    NotFoundError before anything changes.
    """
    wanted = list(dict.fromkeys(item_ids))
    found = {item["id"]: item for item in repository.get_many(wanted)}
    for item_id in wanted:
        if item_id not in found:
            raise NotFoundError(f"Knowledge item not found: {item_id}")
    reports = []
    for item_id in wanted:
        item = found[item_id]
        evidence = [dict(record) for record in item["evidence"]]
        slots = [
            index
            for index, record in enumerate(evidence)
            if record["type"] == "file" and "gitProvenance" not in record
        ]
        warnings: list[dict[str, Any]] = []
        captured = 0
        if slots:
            outcomes = capture_file_provenances(
                repo_dir,
                [evidence[index]["source"] for index in slots],
                command_timeout_ms=DEFAULT_GIT_COMMAND_TIMEOUT_MS,
                operation_budget_ms=MAX_PROVENANCE_CAPTURE_BUDGET_MS,
            )
            for index, outcome in zip(slots, outcomes, strict=True):
                if outcome["status"] == "captured":
                    evidence[index]["gitProvenance"] = dict(outcome["provenance"])
                    captured += 1
                else:
                    warnings.append({"evidenceIndex": index, "reason": outcome["reason"]})
        updated_at = item["updatedAt"]
        if captured:
            updated_at = repository.update(item_id, evidence=evidence)["updatedAt"]
        reports.append(
            {
                "id": item_id,
                "attempted": len(slots),
                "captured": captured,
                "warnings": warnings,
                "updatedAt": updated_at,
            }
        )
    return reports
