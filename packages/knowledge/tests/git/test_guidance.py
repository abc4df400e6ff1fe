"""Health guidance: a fixed, ordered mapping from health reasons to advice."""

from __future__ import annotations

from typing import Any

import pytest

from dsh_knowledge.errors import HealthGuidanceInputError
from dsh_knowledge.guidance import (
    HEALTH_GUIDANCE_CODES,
    MAX_HEALTH_GUIDANCE_ENTRIES,
    MAX_HEALTH_GUIDANCE_MESSAGE_CHARS,
    REASON_GUIDANCE,
    create_health_guidance,
)

EXPECTED_MAPPING = {
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
MIXED = [
    "timeout",
    "git_unavailable",
    "unsafe_filter",
    "missing_commit",
    "working_tree_changed",
    "evidence_overflow",
]


def test_mapping_covers_every_health_reason_exactly() -> None:
    assert dict(REASON_GUIDANCE) == EXPECTED_MAPPING


@pytest.mark.parametrize(("reason", "code"), list(EXPECTED_MAPPING.items()))
def test_each_reason_maps_to_its_code(reason: str, code: str | None) -> None:
    status = "current" if reason == "snapshot_matches" else "unverifiable"
    guidance = create_health_guidance({"status": status, "reasons": [reason]})
    assert [g["code"] for g in guidance] == ([] if code is None else [code])
    assert all(0 < len(g["message"]) <= MAX_HEALTH_GUIDANCE_MESSAGE_CHARS for g in guidance)


def test_codes_come_out_once_in_canonical_order() -> None:
    once = create_health_guidance({"status": "potentially_stale", "reasons": MIXED})
    twice = create_health_guidance(
        {"status": "potentially_stale", "reasons": [*MIXED[::-1], "source_path_missing"]}
    )
    assert once == twice
    assert [g["code"] for g in once] == list(HEALTH_GUIDANCE_CODES)
    assert len(once) == MAX_HEALTH_GUIDANCE_ENTRIES


def test_current_health_has_empty_guidance() -> None:
    assert create_health_guidance({"status": "current", "reasons": ["snapshot_matches"]}) == []


def test_changed_and_missing_sources_share_broad_advice() -> None:
    [changed] = create_health_guidance(
        {"status": "potentially_stale", "reasons": ["working_tree_changed"]}
    )
    [missing] = create_health_guidance(
        {"status": "potentially_stale", "reasons": ["source_path_missing"]}
    )
    assert changed == missing
    assert "may still be valid" in changed["message"]


def test_results_are_fresh_copies() -> None:
    first = create_health_guidance({"status": "unverifiable", "reasons": ["missing_commit"]})
    first[0]["message"] = "caller mutation"
    again = create_health_guidance({"status": "unverifiable", "reasons": ["missing_commit"]})
    assert again[0]["message"] != "caller mutation"


def test_seventeen_reasons_are_accepted() -> None:
    reasons = [*MIXED, *MIXED, *MIXED[:5]]
    assert len(reasons) == 17
    assert len(create_health_guidance({"status": "unverifiable", "reasons": reasons})) == 6


@pytest.mark.parametrize(
    "bad",
    [
        None,
        {"status": "private-status", "reasons": ["snapshot_matches"]},
        {"status": "unverifiable", "reasons": "C:\\private\\source.ts"},
        {"status": "unverifiable", "reasons": ["fatal: private stderr password=secret"]},
        {"status": "current", "reasons": ["a" * 40]},
        {"status": "unverifiable", "reasons": ["__proto__"]},
        {"status": "unverifiable", "reasons": [None]},
        {"status": "unverifiable", "reasons": ["missing_commit"] * 18},
    ],
)
def test_invalid_input_is_rejected_without_echoing_it(bad: Any) -> None:
    with pytest.raises(HealthGuidanceInputError) as caught:
        create_health_guidance(bad)
    assert str(caught.value) == "Invalid health guidance input."
    assert isinstance(caught.value, TypeError)
    assert caught.value.code == "invalid-health-guidance-input"
