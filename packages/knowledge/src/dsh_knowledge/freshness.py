"""Freshness: do an item's Git-backed file snapshots still match the live repository?

A report explains every evidence record and aggregates only Git-backed file evidence:

* ``current`` - the work tree and the index hold the blob the recorded commit has at that path
  (a file edited and then restored is current again: this compares snapshots, not history);
* ``potentially_stale`` - the file was modified, staged, deleted, untracked or renamed away
  (renames are not followed: the old path is gone, so it is stale);
* ``unverifiable`` - no provenance, Git or objects unavailable, a limit was hit, or a safe
  comparison cannot be guaranteed (symlinked component, index flags, filters).

Freshness never changes an item's lifecycle, never proves a claim true or false, never returns
diffs or file contents, and never fetches. These functions take the item JSON dict and do not
touch the database.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dsh_common.locks import utc_now_iso
from dsh_knowledge._git.inspect import (
    MAX_GIT_EVIDENCE_CHECKS,
    FreshnessStatus,
    inspect_snapshots,
)

__all__ = [
    "FRESHNESS_STATUSES",
    "FreshnessEvaluation",
    "aggregate_freshness",
    "check_freshness",
    "evaluate_freshness_batch",
]

FRESHNESS_STATUSES: tuple[FreshnessStatus, ...] = ("current", "potentially_stale", "unverifiable")


@dataclass(frozen=True)
class EvaluatedItem:
    """One item's evaluated evidence window, before shaping into a report."""

    knowledge_id: str
    status: FreshnessStatus
    #: ``{"evidenceIndex", "type", "status", "reason"}``; reason None means current.
    evidence: list[dict[str, Any]]
    #: Indexes of Git-backed file evidence inside the window (what the aggregate covers).
    backed_indexes: list[int]
    overflow_count: int


@dataclass(frozen=True)
class FreshnessEvaluation:
    """Evaluated items of one batch, their shared timestamp and the git processes it cost."""

    checked_at: str
    items: list[EvaluatedItem]
    commands_run: int


def aggregate_freshness(statuses: Sequence[str]) -> FreshnessStatus:
    """None checked is unverifiable; any stale wins; then any unverifiable; else current."""
    if not statuses:
        return "unverifiable"
    if "potentially_stale" in statuses:
        return "potentially_stale"
    if "unverifiable" in statuses:
        return "unverifiable"
    return "current"


def _provenance_of(evidence: Mapping[str, Any]) -> tuple[object, object] | None:
    provenance = evidence.get("gitProvenance")
    if provenance is None:
        return None
    if not isinstance(provenance, Mapping):
        return (None, None)  # reported as invalid_commit
    return (provenance.get("commit"), provenance.get("path"))


def evaluate_freshness_batch(
    items: Sequence[Mapping[str, Any]],
    repo_dir: str | os.PathLike[str],
    *,
    max_evidence_per_item: int | None = None,
    missing_path_reason: str = "working_tree_changed",
    command_timeout_ms: float | None = None,
    operation_budget_ms: float | None = None,
    cancel: threading.Event | None = None,
) -> FreshnessEvaluation:
    """The shared evaluator behind freshness and health: one git batch for every item.

    Per item, evidence past ``max_evidence_per_item`` is not materialised (counted as
    overflow), and Git-backed evidence past the 16th in the window is not checked
    (``operation_budget_exceeded``). Identical ``(commit, path)`` pairs are checked once.
    """
    windows: list[list[Mapping[str, Any]]] = []
    overflow: list[int] = []
    for item in items:
        all_evidence: list[Mapping[str, Any]] = list(item.get("evidence") or [])
        limit = len(all_evidence) if max_evidence_per_item is None else max_evidence_per_item
        windows.append(all_evidence[:limit])
        overflow.append(len(all_evidence) - len(windows[-1]))

    entries: list[list[dict[str, Any]]] = []
    backed: list[list[int]] = []
    to_check: list[tuple[int, int]] = []
    provenances: list[tuple[object, object]] = []
    for item_index, window in enumerate(windows):
        rows: list[dict[str, Any]] = []
        backed_here: list[int] = []
        for evidence_index, evidence in enumerate(window):
            kind = evidence.get("type")
            provenance = _provenance_of(evidence)
            row: dict[str, Any] = {
                "evidenceIndex": evidence_index,
                "type": kind,
                "status": "unverifiable",
                # Session evidence proves nothing about a file; other evidence without a
                # recorded snapshot is legacy or caller-supplied and cannot be compared.
                "reason": "not_file_evidence" if kind == "session" else "missing_git_provenance",
            }
            if provenance is not None and kind != "file":
                row["reason"] = "not_file_evidence"
            elif provenance is not None:
                backed_here.append(evidence_index)
                if len(backed_here) > MAX_GIT_EVIDENCE_CHECKS:
                    row["reason"] = "operation_budget_exceeded"
                else:
                    to_check.append((item_index, evidence_index))
                    provenances.append(provenance)
            rows.append(row)
        entries.append(rows)
        backed.append(backed_here)

    inspection = inspect_snapshots(
        repo_dir,
        provenances,
        command_timeout_ms=command_timeout_ms,
        operation_budget_ms=operation_budget_ms,
        missing_path_reason=missing_path_reason,
        cancel=cancel,
    )
    for (item_index, evidence_index), check in zip(to_check, inspection.checks, strict=True):
        row = entries[item_index][evidence_index]
        row["status"] = check.status
        row["reason"] = check.reason

    evaluated: list[EvaluatedItem] = []
    for item_index, item in enumerate(items):
        statuses = [entries[item_index][i]["status"] for i in backed[item_index]]
        status = aggregate_freshness(statuses)
        if overflow[item_index] and status != "potentially_stale":
            # Unchecked evidence could be stale: only a stale finding outranks the gap.
            status = "unverifiable"
        evaluated.append(
            EvaluatedItem(
                knowledge_id=str(item.get("id", "")),
                status=status,
                evidence=entries[item_index],
                backed_indexes=backed[item_index],
                overflow_count=overflow[item_index],
            )
        )
    return FreshnessEvaluation(
        checked_at=utc_now_iso(), items=evaluated, commands_run=inspection.commands_run
    )


def check_freshness(
    item: Mapping[str, Any],
    repo_dir: str | os.PathLike[str],
    *,
    command_timeout_ms: float | None = None,
    operation_budget_ms: float | None = None,
    cancel: threading.Event | None = None,
) -> dict[str, Any]:
    """The freshness report of one item against the repository at ``repo_dir``.

    ``{"knowledgeId", "checkedAt", "status", "evidence": [{"evidenceIndex", "type", "status",
    "reason"?}]}`` - ``reason`` is absent for current evidence. At most 16 Git-backed entries
    are checked; later ones report ``operation_budget_exceeded``. ``command_timeout_ms``
    (<= 1500) and ``operation_budget_ms`` (<= 8000) may only lower the hard limits.
    """
    evaluation = evaluate_freshness_batch(
        [item],
        repo_dir,
        command_timeout_ms=command_timeout_ms,
        operation_budget_ms=operation_budget_ms,
        cancel=cancel,
    )
    evaluated = evaluation.items[0]
    evidence = []
    for row in evaluated.evidence:
        shaped = {k: v for k, v in row.items() if k != "reason"}
        if row["reason"] is not None:
            shaped["reason"] = row["reason"]
        evidence.append(shaped)
    return {
        "knowledgeId": evaluated.knowledge_id,
        "checkedAt": evaluation.checked_at,
        "status": evaluated.status,
        "evidence": evidence,
    }
