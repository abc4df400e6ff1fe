"""Git provenance: which commit and repository-relative path a piece of file evidence describes.

``gitProvenance`` is ``{"commit": <full 40/64-hex id, lowercase>, "path": <repository-relative
path with "/" separators>}``. It is captured only for a file that is tracked, present in
``HEAD`` and clean: the index and the work tree both hold exactly the blob ``HEAD`` records, no
symlinked path component, no assume-unchanged/skip-worktree/unmerged index entry and no filter
driver. Anything else is skipped with a reason, never an exception: a failed capture must not
stop knowledge from being stored.

Capture is read-only, never runs a filter, hook or fsmonitor, and costs the same small number
of git processes for one file or for many (:func:`capture_file_provenances`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

from dsh_knowledge._git.compare import _compare_pairs
from dsh_knowledge._git.inspect import (
    DEFAULT_GIT_COMMAND_TIMEOUT_MS,
    DEFAULT_GIT_OPERATION_BUDGET_MS,
    GIT_OPERATION_REASONS,
    MAX_GIT_EVIDENCE_CHECKS,
    MAX_GIT_OUTPUT_BYTES,
    MAX_GIT_PATH_CHARS,
    InvalidGitValueError,
    clamp_limits,
)
from dsh_knowledge._git.inspect import normalize_git_commit as _normalize_commit
from dsh_knowledge._git.inspect import normalize_repository_relative_path as _normalize_path
from dsh_knowledge._git.session import SnapshotCheck, _GitFailure, _Session, discover_root
from dsh_knowledge.errors import GitProvenanceError

__all__ = [
    "DEFAULT_GIT_COMMAND_TIMEOUT_MS",
    "DEFAULT_GIT_OPERATION_BUDGET_MS",
    "GIT_OPERATION_REASONS",
    "MAX_GIT_EVIDENCE_CHECKS",
    "MAX_GIT_OUTPUT_BYTES",
    "MAX_GIT_PATH_CHARS",
    "MAX_PROVENANCE_CAPTURE_BUDGET_MS",
    "MAX_PROVENANCE_CAPTURE_FILES",
    "attach_git_provenance",
    "capture_file_provenance",
    "capture_file_provenances",
    "capture_git_provenance",
    "normalize_git_commit",
    "normalize_repository_relative_path",
    "validate_git_provenance",
]

#: knowledge_add's bounds: at most 8 file captures per add, 5 s for all of them.
MAX_PROVENANCE_CAPTURE_FILES = 8
MAX_PROVENANCE_CAPTURE_BUDGET_MS = 5000

# The capture reasons that differ from a snapshot comparison's wording.
_CAPTURE_REASON = {
    "missing_path_at_commit": "file_not_in_head",
    "missing_commit": "missing_head",
}


def normalize_repository_relative_path(raw: str) -> str:
    """Normalise a repository-relative path (``\\`` to ``/``, drop ``.`` and empty segments).

    Raises :class:`GitProvenanceError` (``invalid-git-provenance``) for an empty, absolute,
    drive-lettered, NUL-bearing, ``..``-traversing or over-long (> 4096) path.
    """
    try:
        return _normalize_path(raw)
    except InvalidGitValueError as exc:
        raise GitProvenanceError(str(exc)) from None


def normalize_git_commit(raw: str) -> str:
    """A full SHA-1 (40 hex) or SHA-256 (64 hex) id, lowercased; else GitProvenanceError."""
    try:
        return _normalize_commit(raw)
    except InvalidGitValueError as exc:
        raise GitProvenanceError(str(exc)) from None


def validate_git_provenance(value: object) -> dict[str, str]:
    """``{"commit", "path"}`` normalised, or GitProvenanceError naming what is wrong.

    For the repository: a ``gitProvenance`` object must have exactly these two string fields.
    """
    if not isinstance(value, dict) or set(value) != {"commit", "path"}:
        raise GitProvenanceError("Git provenance must be an object with commit and path.")
    return {
        "commit": normalize_git_commit(value["commit"]),
        "path": normalize_repository_relative_path(value["path"]),
    }


def capture_file_provenances(
    repo_dir: str | os.PathLike[str],
    source_paths: Sequence[str],
    *,
    command_timeout_ms: float | None = None,
    operation_budget_ms: float | None = None,
    cancel: threading.Event | None = None,
) -> list[dict[str, Any]]:
    """Capture provenance for many files at once (one batch of git processes).

    Each answer is ``{"status": "captured", "provenance": {"commit", "path"}}`` or
    ``{"status": "skipped", "reason": <code>}`` with the earlier tool's capture reasons:
    ``invalid_path`` (no git run), ``invalid_workspace``, ``not_repository``,
    ``git_unavailable``, ``missing_head``, ``file_not_in_head``, ``working_tree_changed``
    (edited, staged, deleted or untracked), ``unsafe_path``, ``unsafe_index_state``,
    ``unsafe_filter``, ``timeout``, ``cancelled``, ``operation_budget_exceeded``,
    ``command_failed``, ``malformed_output``. Paths are relative to the repository root.
    """
    command_timeout, operation_budget = clamp_limits(command_timeout_ms, operation_budget_ms)
    answers: list[dict[str, Any] | None] = [None] * len(source_paths)
    wanted: dict[str, list[int]] = {}
    for index, raw in enumerate(source_paths):
        try:
            wanted.setdefault(_normalize_path(raw), []).append(index)
        except InvalidGitValueError:
            answers[index] = {"status": "skipped", "reason": "invalid_path"}
    if wanted:
        session = _Session(
            command_timeout=command_timeout,
            operation_budget=operation_budget,
            output_cap=MAX_GIT_OUTPUT_BYTES * max(1, -(-len(wanted) // MAX_GIT_EVIDENCE_CHECKS)),
            cancel=cancel,
            git="git",
        )
        # "HEAD" stands in for the commit: one cat-file resolves it with every HEAD:path.
        pairs = [("HEAD", path) for path in wanted]
        checks: dict[tuple[str, str], SnapshotCheck] = {}
        head: str | None = None
        try:
            root = discover_root(session, os.fspath(repo_dir))
            head = _compare_pairs(session, root, pairs, checks, "working_tree_changed")
        except _GitFailure as failure:
            for pair in pairs:
                checks.setdefault(pair, SnapshotCheck("unverifiable", failure.reason))
        for pair, indexes in ((p, wanted[p[1]]) for p in pairs):
            check = checks[pair]
            answer: dict[str, Any]
            if check.status == "current" and head is not None:
                answer = {"status": "captured", "provenance": {"commit": head, "path": pair[1]}}
            else:
                reason = check.reason or "command_failed"
                answer = {"status": "skipped", "reason": _CAPTURE_REASON.get(reason, reason)}
            for index in indexes:
                answers[index] = answer
    return [
        a if a is not None else {"status": "skipped", "reason": "command_failed"} for a in answers
    ]


def capture_file_provenance(
    repo_dir: str | os.PathLike[str],
    source_path: str,
    *,
    command_timeout_ms: float | None = None,
    operation_budget_ms: float | None = None,
) -> dict[str, Any]:
    """One file's capture outcome: ``captured`` with provenance, or ``skipped`` with a reason."""
    return capture_file_provenances(
        repo_dir,
        [source_path],
        command_timeout_ms=command_timeout_ms,
        operation_budget_ms=operation_budget_ms,
    )[0]


def capture_git_provenance(
    repo_dir: str | os.PathLike[str],
    source_path: str,
    *,
    command_timeout_ms: float | None = None,
    operation_budget_ms: float | None = None,
) -> dict[str, str] | None:
    """``{"commit", "path"}`` for a clean, tracked file present in HEAD; otherwise None."""
    outcome = capture_file_provenance(
        repo_dir,
        source_path,
        command_timeout_ms=command_timeout_ms,
        operation_budget_ms=operation_budget_ms,
    )
    if outcome["status"] != "captured":
        return None
    provenance: dict[str, str] = outcome["provenance"]
    return provenance


def attach_git_provenance(
    evidence: Sequence[dict[str, Any]],
    repo_dir: str | os.PathLike[str],
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Opportunistic capture for an add: new evidence list plus the ``provenanceCapture`` report.

    Every ``file`` evidence without ``gitProvenance`` is attempted (its ``source`` is the
    repository-relative path); the first 8 are captured in one batch within 5 s, later ones
    are skipped as ``evidence_limit_exceeded``. A skipped capture never blocks the add. The
    report is ``{"attempted", "captured", "skipped", "warnings": [{"evidenceIndex",
    "reason"}]}``, or None when there was no file evidence to attempt. The input is not changed.
    """
    updated = [dict(entry) for entry in evidence]
    attempts = [
        index
        for index, entry in enumerate(updated)
        if entry.get("type") == "file" and entry.get("gitProvenance") is None
    ]
    if not attempts:
        return updated, None
    slots = attempts[:MAX_PROVENANCE_CAPTURE_FILES]
    outcomes = capture_file_provenances(
        repo_dir,
        [str(updated[index].get("source", "")) for index in slots],
        command_timeout_ms=DEFAULT_GIT_COMMAND_TIMEOUT_MS,
        operation_budget_ms=MAX_PROVENANCE_CAPTURE_BUDGET_MS,
    )
    warnings: list[dict[str, Any]] = []
    for index, outcome in zip(slots, outcomes, strict=True):
        if outcome["status"] == "captured":
            updated[index]["gitProvenance"] = dict(outcome["provenance"])
        else:
            warnings.append({"evidenceIndex": index, "reason": outcome["reason"]})
    for index in attempts[MAX_PROVENANCE_CAPTURE_FILES:]:
        warnings.append({"evidenceIndex": index, "reason": "evidence_limit_exceeded"})
    report = {
        "attempted": len(attempts),
        "captured": len(attempts) - len(warnings),
        "skipped": len(warnings),
        "warnings": warnings,
    }
    return updated, report
