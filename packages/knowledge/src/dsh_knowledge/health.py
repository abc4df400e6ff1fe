"""Knowledge health: a bounded, live, read-only summary of 1-16 items' Git evidence.

Health reuses the freshness comparison and adds a reason list per item:

* no Git-backed file evidence (and nothing overflowed) -> ``["no_git_backed_file_evidence"]``;
* status ``current`` -> ``["snapshot_matches"]``;
* otherwise the distinct reasons of the non-current Git-backed evidence, in evidence order,
  then ``evidence_overflow`` when more than 16 evidence records exist.

At most 16 evidence details are returned per item (the rest are counted in ``overflowCount``,
which makes the item ``unverifiable`` unless stale evidence outranks it). A file deleted from
the work tree reports ``source_path_missing`` here (freshness says ``working_tree_changed``).

The whole batch is one Git inspection: identical ``(commit, path)`` pairs across items are
checked once, and 16 items x 16 evidence cost the same handful of git processes as one. Health
is never persisted or cached and never verifies, archives, supersedes, deletes or edits
knowledge: these functions take item dicts and never touch the database. One health check runs
at a time per process; a concurrent request gets an immediate ``health_check_busy`` result
instead of queueing behind the first.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from dsh_common.locks import utc_now_iso
from dsh_knowledge._git.inspect import MAX_GIT_EVIDENCE_CHECKS
from dsh_knowledge.errors import HealthBatchError
from dsh_knowledge.freshness import EvaluatedItem, evaluate_freshness_batch
from dsh_knowledge.guidance import create_health_guidance

__all__ = [
    "MAX_HEALTH_BATCH_ITEMS",
    "MAX_HEALTH_EVIDENCE_DETAILS",
    "busy_health",
    "check_health",
    "check_health_detailed",
]

MAX_HEALTH_BATCH_ITEMS = MAX_GIT_EVIDENCE_CHECKS
MAX_HEALTH_EVIDENCE_DETAILS = MAX_GIT_EVIDENCE_CHECKS

# Process-wide fail-fast gate: health is an explicit foreground check, and two at once would
# only double the Git work against the same repository.
_HEALTH_GATE = threading.Lock()


def _validate_batch(items: Sequence[Mapping[str, Any]], repo_dir: object) -> None:
    if not isinstance(items, Sequence) or len(items) == 0:
        raise HealthBatchError("A health batch must contain at least one item.")
    if len(items) > MAX_HEALTH_BATCH_ITEMS:
        raise HealthBatchError(
            f"A health batch may contain at most {MAX_HEALTH_BATCH_ITEMS} items."
        )
    if not isinstance(repo_dir, str | os.PathLike) or not os.fspath(repo_dir).strip():
        raise HealthBatchError("An explicit workspace directory is required for health checks.")
    workspaces = set()
    for item in items:
        scope = item.get("scope") if isinstance(item, Mapping) else None
        if not isinstance(scope, Mapping):
            raise HealthBatchError("Every health batch item must be a knowledge item.")
        workspaces.add(scope.get("workspace"))
    if len(workspaces) > 1:
        raise HealthBatchError("A health batch must contain items from one workspace scope.")


def _health_of(evaluated: EvaluatedItem, checked_at: str) -> dict[str, Any]:
    backed = set(evaluated.backed_indexes)
    evidence = [
        {
            "evidenceIndex": row["evidenceIndex"],
            "type": row["type"],
            "status": row["status"],
            "reason": row["reason"] if row["reason"] is not None else "snapshot_matches",
        }
        for row in evaluated.evidence
    ]
    reasons: list[str]
    if not backed and evaluated.overflow_count == 0:
        reasons = ["no_git_backed_file_evidence"]
    elif evaluated.status == "current":
        reasons = ["snapshot_matches"]
    else:
        distinct = dict.fromkeys(
            row["reason"]
            for row in evidence
            if row["evidenceIndex"] in backed and row["status"] != "current"
        )
        if evaluated.overflow_count > 0:
            distinct["evidence_overflow"] = None
        reasons = list(distinct)
    return {
        "knowledgeId": evaluated.knowledge_id,
        "checkedAt": checked_at,
        "status": evaluated.status,
        "reasons": reasons,
        "evidence": evidence,
        "overflowCount": evaluated.overflow_count,
    }


def busy_health(item: Mapping[str, Any], checked_at: str | None = None) -> dict[str, Any]:
    """The result a request gets while another health check holds the gate."""
    evidence = list(item.get("evidence") or [])
    overflow = max(0, len(evidence) - MAX_HEALTH_EVIDENCE_DETAILS)
    return {
        "knowledgeId": str(item.get("id", "")),
        "checkedAt": checked_at or utc_now_iso(),
        "status": "unverifiable",
        "reasons": ["health_check_busy"] + (["evidence_overflow"] if overflow else []),
        "evidence": [
            {
                "evidenceIndex": index,
                "type": entry.get("type"),
                "status": "unverifiable",
                "reason": "health_check_busy",
            }
            for index, entry in enumerate(evidence[:MAX_HEALTH_EVIDENCE_DETAILS])
        ],
        "overflowCount": overflow,
    }


def check_health_detailed(
    items: Sequence[Mapping[str, Any]],
    repo_dir: str | os.PathLike[str],
    *,
    include_guidance: bool = False,
    command_timeout_ms: float | None = None,
    operation_budget_ms: float | None = None,
    cancel: threading.Event | None = None,
) -> tuple[list[dict[str, Any]], int]:
    """:func:`check_health` plus the number of git processes the batch spawned."""
    _validate_batch(items, repo_dir)
    if not _HEALTH_GATE.acquire(blocking=False):
        checked_at = utc_now_iso()
        busy = [busy_health(item, checked_at) for item in items]
        return _with_guidance(busy, include_guidance), 0
    try:
        evaluation = evaluate_freshness_batch(
            items,
            repo_dir,
            max_evidence_per_item=MAX_HEALTH_EVIDENCE_DETAILS,
            missing_path_reason="source_path_missing",
            command_timeout_ms=command_timeout_ms,
            operation_budget_ms=operation_budget_ms,
            cancel=cancel,
        )
    finally:
        _HEALTH_GATE.release()
    results = [_health_of(item, evaluation.checked_at) for item in evaluation.items]
    return _with_guidance(results, include_guidance), evaluation.commands_run


def _with_guidance(results: list[dict[str, Any]], include: bool) -> list[dict[str, Any]]:
    if include:
        for result in results:
            # Computed from status and reasons alone: no further Git or item access.
            result["guidance"] = create_health_guidance(result)
    return results


def check_health(
    items: Sequence[Mapping[str, Any]],
    repo_dir: str | os.PathLike[str],
    *,
    include_guidance: bool = False,
    command_timeout_ms: float | None = None,
    operation_budget_ms: float | None = None,
    cancel: threading.Event | None = None,
) -> list[dict[str, Any]]:
    """Health of 1-16 items from one workspace scope against the repository at ``repo_dir``.

    Each result is ``{"knowledgeId", "checkedAt", "status", "reasons", "evidence":
    [{"evidenceIndex", "type", "status", "reason"}], "overflowCount"}``, plus ``"guidance":
    [{"code", "message"}]`` when ``include_guidance``. Raises :class:`HealthBatchError` for an
    empty or > 16 batch, mixed workspaces, or a blank ``repo_dir``.
    """
    results, _ = check_health_detailed(
        items,
        repo_dir,
        include_guidance=include_guidance,
        command_timeout_ms=command_timeout_ms,
        operation_budget_ms=operation_budget_ms,
        cancel=cancel,
    )
    return results
