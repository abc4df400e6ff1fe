"""Batched, read-only comparison of recorded Git snapshots with the live repository.

This is the engine behind provenance capture, freshness and health. It answers, for many
``(commit, path)`` pairs at once, "does the file at ``path`` in the work tree and in the index
still hold the blob that ``commit`` recorded?" with a closed set of reason codes.

Why it is shaped like this:

* **A constant number of git processes.** The earlier tool ran a few commands per commit
  group; checking 16 items x 16 evidence that way costs hundreds of processes. Here one
  ``cat-file --batch-check`` answers every commit, every ``commit:path`` blob and every recorded
  directory tree, one ``ls-files -v -s`` reads index flags, modes and staged blob ids, two
  ``check-attr --stdin`` calls read filter/conversion attributes, one ``hash-object
  --no-filters --stdin-paths`` hashes the work-tree files, and one ``cat-file --batch`` reads
  the distinct recorded directory trees (file modes). The count does not grow with the number
  of evidence entries (``_git.compare``).
* **Nothing the repository names is ever executed.** None of those commands runs a clean,
  smudge or process filter (``hash-object`` gets ``--no-filters``; ``git diff``, which would run
  a clean filter on a stat-dirty file, is never used). ``dsh_common.git.GitRunner`` also turns
  off fsmonitor and hooks and strips every ``GIT_*`` variable.
* **Bounded.** Per-command timeout (at most 1.5 s), one total budget (at most 8 s), and stdout
  capped at 64 KiB per 16 checks in the batch (the earlier tool's 64 KiB per command, scaled to
  the batch so a 256-check batch is not refused for being a batch).
"""

from __future__ import annotations

import math
import os
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from dsh_knowledge._git.compare import _compare_pairs
from dsh_knowledge._git.conversion import MAX_LINE_ENDING_REHASH_BYTES
from dsh_knowledge._git.session import (
    FULL_OBJECT_ID,
    FreshnessStatus,
    SnapshotCheck,
    _GitFailure,
    _Session,
    _unverifiable,
    discover_root,
)
from dsh_knowledge.errors import ValidationError

__all__ = [
    "DEFAULT_GIT_COMMAND_TIMEOUT_MS",
    "DEFAULT_GIT_OPERATION_BUDGET_MS",
    "GIT_OPERATION_REASONS",
    "MAX_GIT_EVIDENCE_CHECKS",
    "MAX_GIT_OUTPUT_BYTES",
    "MAX_GIT_PATH_CHARS",
    "MAX_LINE_ENDING_REHASH_BYTES",
    "FreshnessStatus",
    "InvalidGitValueError",
    "SnapshotCheck",
    "SnapshotInspection",
    "clamp_limits",
    "inspect_snapshots",
    "normalize_git_commit",
    "normalize_repository_relative_path",
]

#: Evidence entries one freshness report checks; also the health batch and detail limits.
MAX_GIT_EVIDENCE_CHECKS = 16
#: Longest repository-relative path accepted in provenance.
MAX_GIT_PATH_CHARS = 4096
#: Hard maxima; callers may lower them, never raise them.
DEFAULT_GIT_COMMAND_TIMEOUT_MS = 1500
DEFAULT_GIT_OPERATION_BUDGET_MS = 8000
#: stdout cap for one git command per 16 checks it covers.
MAX_GIT_OUTPUT_BYTES = 64 * 1024


#: Every reason a Git inspection can give (the earlier tool's ``GitOperationReason``).
GIT_OPERATION_REASONS: tuple[str, ...] = (
    "invalid_workspace",
    "invalid_path",
    "not_repository",
    "git_unavailable",
    "missing_head",
    "file_not_in_head",
    "working_tree_changed",
    "unsafe_path",
    "unsafe_index_state",
    "unsafe_filter",
    "invalid_commit",
    "missing_commit",
    "missing_path_at_commit",
    "timeout",
    "cancelled",
    "operation_budget_exceeded",
    "command_failed",
    "malformed_output",
)

_DRIVE_PREFIX = re.compile(r"[A-Za-z]:")


class InvalidGitValueError(ValueError):
    """A commit or path fails the lexical provenance rules (internal; callers map it)."""


def normalize_repository_relative_path(raw: str) -> str:
    """A repository-relative path with ``/`` separators, or InvalidGitValueError.

    Rejects empty, longer than 4096 characters, NUL, a leading ``/`` or ``\\``, a drive
    (``C:``), and any ``..`` segment; converts ``\\`` to ``/`` and drops empty and ``.``
    segments (the earlier tool's ``normalizeRepositoryRelativePath``).
    """
    if not isinstance(raw, str) or not raw or len(raw) > MAX_GIT_PATH_CHARS or "\0" in raw:
        raise InvalidGitValueError("Git path must be a non-empty path without NUL characters.")
    if raw.startswith(("/", "\\")) or _DRIVE_PREFIX.fullmatch(raw[:2]) or os.path.isabs(raw):
        raise InvalidGitValueError("Git path must be repository-relative.")
    segments = raw.replace("\\", "/").split("/")
    if ".." in segments:
        raise InvalidGitValueError("Git path must not traverse outside the repository.")
    normalized = "/".join(s for s in segments if s and s != ".")
    if not normalized:
        raise InvalidGitValueError("Git path must identify a file.")
    return normalized


def normalize_git_commit(raw: str) -> str:
    """A full 40- or 64-hex object id in lowercase, or InvalidGitValueError."""
    if not isinstance(raw, str) or not FULL_OBJECT_ID.fullmatch(raw):
        raise InvalidGitValueError("Git commit must be a full SHA-1 or SHA-256 object ID.")
    return raw.lower()


def clamp_limits(
    command_timeout_ms: float | None, operation_budget_ms: float | None
) -> tuple[float, float]:
    """(per-command timeout, total budget) in seconds, clamped to the hard maxima."""
    timeout = DEFAULT_GIT_COMMAND_TIMEOUT_MS if command_timeout_ms is None else command_timeout_ms
    budget = DEFAULT_GIT_OPERATION_BUDGET_MS if operation_budget_ms is None else operation_budget_ms
    for name, value in (("timeout", timeout), ("budget", budget)):
        if not math.isfinite(value) or value < 1:
            raise ValidationError(f"Git command {name} must be a positive finite number of ms.")
    return (
        min(timeout, DEFAULT_GIT_COMMAND_TIMEOUT_MS) / 1000.0,
        min(budget, DEFAULT_GIT_OPERATION_BUDGET_MS) / 1000.0,
    )


@dataclass(frozen=True)
class SnapshotInspection:
    """Answers in input order, plus facts for callers that prove batching."""

    checks: list[SnapshotCheck]
    commands_run: int
    #: Distinct valid ``(commit, path)`` pairs actually compared (duplicates share one check).
    distinct_checks: int = 0
    head: str | None = None
    root: str | None = None


def inspect_snapshots(
    workspace: str | os.PathLike[str],
    provenances: Sequence[tuple[object, object]],
    *,
    command_timeout_ms: float | None = None,
    operation_budget_ms: float | None = None,
    missing_path_reason: str = "working_tree_changed",
    cancel: threading.Event | None = None,
    git: str = "git",
) -> SnapshotInspection:
    """Compare every ``(commit, path)`` with the work tree and index of ``workspace``.

    Identical pairs are checked once. ``missing_path_reason`` is what a file deleted from
    the work tree reports (freshness says ``working_tree_changed``, health
    ``source_path_missing``).
    """
    command_timeout, operation_budget = clamp_limits(command_timeout_ms, operation_budget_ms)
    checks: list[SnapshotCheck | None] = [None] * len(provenances)
    pairs: dict[tuple[str, str], list[int]] = {}
    for index, (raw_commit, raw_path) in enumerate(provenances):
        try:
            commit = normalize_git_commit(raw_commit)  # type: ignore[arg-type]
        except InvalidGitValueError:
            checks[index] = _unverifiable("invalid_commit")
            continue
        try:
            path = normalize_repository_relative_path(raw_path)  # type: ignore[arg-type]
        except InvalidGitValueError:
            checks[index] = _unverifiable("invalid_path")
            continue
        pairs.setdefault((commit, path), []).append(index)

    output_cap = MAX_GIT_OUTPUT_BYTES * max(1, math.ceil(len(pairs) / MAX_GIT_EVIDENCE_CHECKS))
    session = _Session(
        command_timeout=command_timeout,
        operation_budget=operation_budget,
        output_cap=output_cap,
        cancel=cancel,
        git=git,
    )
    answers: dict[tuple[str, str], SnapshotCheck] = {}
    root: str | None = None
    head: str | None = None
    if pairs:
        try:
            root = discover_root(session, os.fspath(workspace))
            head = _compare_pairs(session, root, list(pairs), answers, missing_path_reason)
        except _GitFailure as failure:
            for pair in pairs:
                answers.setdefault(pair, _unverifiable(failure.reason))
    for pair, indexes in pairs.items():
        for index in indexes:
            checks[index] = answers[pair]
    return SnapshotInspection(
        checks=[c if c is not None else _unverifiable("command_failed") for c in checks],
        commands_run=session.commands_run,
        distinct_checks=len(pairs),
        head=head,
        root=root,
    )
