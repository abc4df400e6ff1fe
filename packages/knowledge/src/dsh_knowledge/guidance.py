"""Deterministic advisory guidance for a health result (``includeGuidance``).

Guidance is derived from the health ``status`` and ``reasons`` only: it does no Git work,
reads no other item field, and never changes knowledge or retrieval. It is empty for
``current`` health; an empty list does not mean verified or true, and ``unverifiable`` does
not mean false. Codes come out in one canonical order, each at most once; messages are fixed
texts of at most 160 characters (the earlier tool's wording, so both tools advise alike).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dsh_knowledge.errors import HealthGuidanceInputError

__all__ = [
    "GUIDANCE_MESSAGES",
    "HEALTH_GUIDANCE_CODES",
    "HEALTH_REASONS",
    "MAX_HEALTH_GUIDANCE_ENTRIES",
    "MAX_HEALTH_GUIDANCE_MESSAGE_CHARS",
    "MAX_HEALTH_GUIDANCE_REASONS",
    "REASON_GUIDANCE",
    "create_health_guidance",
]

#: Canonical output order.
HEALTH_GUIDANCE_CODES: tuple[str, ...] = (
    "inspection_incomplete",
    "review_claim",
    "review_evidence",
    "manual_safe_review",
    "check_environment",
    "retry_explicit_check",
)
MAX_HEALTH_GUIDANCE_ENTRIES = len(HEALTH_GUIDANCE_CODES)
MAX_HEALTH_GUIDANCE_MESSAGE_CHARS = 160
#: Health reports at most 16 detail-derived reasons plus ``evidence_overflow``.
MAX_HEALTH_GUIDANCE_REASONS = 17

#: Every health reason and the guidance it maps to (None: no advice needed).
REASON_GUIDANCE: Mapping[str, str | None] = {
    "working_tree_changed": "review_claim",
    "source_path_missing": "review_claim",
    "invalid_path": "review_evidence",
    "invalid_commit": "review_evidence",
    "missing_commit": "review_evidence",
    "missing_path_at_commit": "review_evidence",
    "file_not_in_head": "review_evidence",
    "missing_git_provenance": "review_evidence",
    "not_file_evidence": "review_evidence",
    "no_git_backed_file_evidence": "review_evidence",
    "invalid_workspace": "check_environment",
    "not_repository": "check_environment",
    "git_unavailable": "check_environment",
    "missing_head": "check_environment",
    "command_failed": "check_environment",
    "malformed_output": "check_environment",
    "unsafe_path": "manual_safe_review",
    "unsafe_index_state": "manual_safe_review",
    "unsafe_filter": "manual_safe_review",
    "health_check_busy": "retry_explicit_check",
    "cancelled": "retry_explicit_check",
    "timeout": "retry_explicit_check",
    "evidence_overflow": "inspection_incomplete",
    "operation_budget_exceeded": "inspection_incomplete",
    "snapshot_matches": None,
}
HEALTH_REASONS: tuple[str, ...] = tuple(REASON_GUIDANCE)

GUIDANCE_MESSAGES: Mapping[str, str] = {
    "inspection_incomplete": (
        "Inspection was incomplete. Review remaining evidence independently; inspected "
        "details do not establish full coverage."
    ),
    "review_claim": (
        "Review the stored claim against the changed or missing source before relying on it. "
        "The claim may still be valid."
    ),
    "review_evidence": (
        "Review the evidence references or assess the claim independently. Unverifiable "
        "evidence does not make the claim false."
    ),
    "manual_safe_review": (
        "Review evidence in a trusted local workflow. Keep path, index, and filter safety "
        "checks enabled."
    ),
    "check_environment": (
        "Check the active workspace and local Git availability, then request inspection "
        "again. Knowledge validity is unresolved."
    ),
    "retry_explicit_check": (
        "Request another explicit inspection when convenient. No retry has been scheduled."
    ),
}

_STATUSES = frozenset({"current", "potentially_stale", "unverifiable"})


def create_health_guidance(health: Mapping[str, Any]) -> list[dict[str, str]]:
    """``[{"code", "message"}]`` for a health result's ``status`` and ``reasons``.

    Raises :class:`HealthGuidanceInputError` ("Invalid health guidance input.") for anything
    that is not a known status with at most 17 known reasons; the message never echoes the
    input, which may hold paths or stderr text.
    """
    if not isinstance(health, Mapping):
        raise HealthGuidanceInputError("Invalid health guidance input.")
    status = health.get("status")
    reasons = health.get("reasons")
    if (
        not isinstance(status, str)
        or status not in _STATUSES
        or not isinstance(reasons, list | tuple)
        or len(reasons) > MAX_HEALTH_GUIDANCE_REASONS
    ):
        raise HealthGuidanceInputError("Invalid health guidance input.")
    codes: set[str] = set()
    for reason in reasons:
        if not isinstance(reason, str) or reason not in REASON_GUIDANCE:
            raise HealthGuidanceInputError("Invalid health guidance input.")
        code = REASON_GUIDANCE[reason]
        if code is not None:
            codes.add(code)
    if status == "current":
        return []
    return [
        {"code": code, "message": GUIDANCE_MESSAGES[code]}
        for code in HEALTH_GUIDANCE_CODES
        if code in codes
    ]
