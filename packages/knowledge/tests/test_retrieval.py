from __future__ import annotations

from typing import Any

import pytest

from dsh_knowledge.errors import ValidationError
from dsh_knowledge.repository import KnowledgeRepository
from dsh_knowledge.retrieval import (
    RETRIEVAL_SCORING,
    are_conservative_duplicates,
    retrieve_relevant_knowledge,
)

WS = "/work/payments"
EV = {"type": "session", "source": "s-1", "timestamp": "2025-01-01T00:00:00.000Z"}


def _add(
    repository: KnowledgeRepository,
    content: str,
    *,
    project: str | None = None,
    type: str = "fact",
    verified: bool = False,
    evidence: int = 0,
    origin: str = "explicit",
    updated_at: str | None = None,
) -> str:
    item = repository.create(
        type=type,
        content=content,
        scope={"workspace": WS, "project": project},
        evidence=[EV] * evidence,
        creation_origin=origin,
    )
    if verified:
        repository.verify(item["id"])
    if updated_at is not None:
        repository.store.connection.execute(
            "UPDATE knowledge SET updated_at = ?, created_at = ? WHERE id = ?",
            (updated_at, updated_at, item["id"]),
        )
    return str(item["id"])


def _retrieve(repository: KnowledgeRepository, query: str, **options: Any) -> list[dict[str, Any]]:
    options.setdefault("workspace", WS)
    indexed = retrieve_relevant_knowledge(repository, query, **options)
    scanned = retrieve_relevant_knowledge(repository, query, use_index=False, **options)
    assert indexed == scanned  # every example doubles as an index-equivalence check
    return indexed


def _ids(results: list[dict[str, Any]]) -> list[str]:
    return [result["knowledge"]["id"] for result in results]


def test_scoring_constants_are_the_earlier_tools(repository: KnowledgeRepository) -> None:
    assert RETRIEVAL_SCORING["textMultiplier"] == 10000
    assert RETRIEVAL_SCORING["freshnessBucketsDays"][0] == {"max": 7, "score": 4}


def test_explanation_of_an_exact_phrase_match(repository: KnowledgeRepository) -> None:
    item = _add(
        repository,
        "Provider selection must use ResponseRouter.",
        project="payments",
        verified=True,
        evidence=5,
    )
    [result] = _retrieve(repository, "ResponseRouter", project="payments")
    assert result["knowledge"]["id"] == item
    assert result["explanation"] == {
        "matchType": "exact_phrase",
        "matchedTokens": ["responserouter"],
        "tokenCoverage": 1,
        "contributions": {
            "exactPhrase": 1000,
            "exactTokens": 100,
            "partialTokens": 0,
            "tokenCoverage": 400,
            "text": 1500,
            "scope": 1000,
            "status": 100,
            "type": 0,
            "evidence": 3,
            "freshness": 4,
        },
        "suppressedSimilarIds": [],
    }
    assert result["score"] == 1500 * 10000 + 1000 + 100 + 3 + 4


def test_partial_and_mixed_matches(repository: KnowledgeRepository) -> None:
    _add(repository, "Routing fallbacks use the provider registry")
    [result] = _retrieve(repository, "fallback routing nothing")
    explanation = result["explanation"]
    assert explanation["matchType"] == "mixed_tokens"
    assert explanation["matchedTokens"] == ["routing", "fallback"]
    assert explanation["contributions"]["partialTokens"] == 40
    assert explanation["tokenCoverage"] == 0.667
    assert explanation["contributions"]["tokenCoverage"] == 267


def test_partial_match_needs_four_characters_on_both_sides(
    repository: KnowledgeRepository,
) -> None:
    _add(repository, "The api gateway")
    assert _retrieve(repository, "apis") == []
    assert _retrieve(repository, "gate")[0]["explanation"]["matchType"] == "partial_tokens"


def test_items_without_a_token_match_are_dropped(repository: KnowledgeRepository) -> None:
    _add(repository, "Caching uses redis")
    assert _retrieve(repository, "postgres migrations") == []


def test_stopword_only_query_returns_nothing(repository: KnowledgeRepository) -> None:
    _add(repository, "the and of")
    assert _retrieve(repository, "the and of") == []


def test_project_scope_outranks_workspace_wide_at_equal_text(
    repository: KnowledgeRepository,
) -> None:
    wide = _add(repository, "cache invalidation rule", verified=True)
    scoped = _add(repository, "cache invalidation rule!", project="payments")
    other = _add(repository, "cache invalidation rule", project="billing")
    results = _retrieve(repository, "cache invalidation", project="payments")
    assert _ids(results) == [scoped, wide]
    assert other not in _ids(results)


def test_without_project_only_workspace_wide_items_are_candidates(
    repository: KnowledgeRepository,
) -> None:
    wide = _add(repository, "deploy freeze friday")
    _add(repository, "deploy freeze friday", project="payments")
    assert _ids(_retrieve(repository, "deploy freeze")) == [wide]


def test_verified_outranks_candidate(repository: KnowledgeRepository) -> None:
    candidate = _add(repository, "retry budget is three", updated_at="2025-01-02T00:00:00.000Z")
    verified = _add(
        repository,
        "retry budget is set to three",
        verified=True,
        updated_at="2025-01-01T00:00:00.000Z",
    )
    assert _ids(_retrieve(repository, "retry budget")) == [verified, candidate]


def test_preferred_types_add_ten_points_per_rank(repository: KnowledgeRepository) -> None:
    fact = _add(repository, "timeouts are five seconds", type="fact")
    lesson = _add(repository, "timeouts are five seconds", type="lesson")
    results = _retrieve(repository, "timeouts", preferred_types=["lesson", "fact"])
    assert _ids(results) == [lesson, fact]
    assert [r["explanation"]["contributions"]["type"] for r in results] == [20, 10]


def test_evidence_contribution_is_capped_at_three(repository: KnowledgeRepository) -> None:
    _add(repository, "evidence heavy", evidence=7)
    assert _retrieve(repository, "evidence")[0]["explanation"]["contributions"]["evidence"] == 3


@pytest.mark.parametrize(
    ("age_days", "score"), [(0, 4), (7, 4), (8, 3), (30, 3), (31, 2), (180, 2), (181, 1)]
)
def test_freshness_is_relative_to_the_newest_match(
    repository: KnowledgeRepository, age_days: int, score: int
) -> None:
    _add(repository, "newest freshness anchor", updated_at="2025-07-01T00:00:00.000Z")
    from datetime import UTC, datetime, timedelta

    old = datetime(2025, 7, 1, tzinfo=UTC) - timedelta(days=age_days)
    older = _add(repository, "older freshness", updated_at=old.strftime("%Y-%m-%dT%H:%M:%S.000Z"))
    results = {r["knowledge"]["id"]: r for r in _retrieve(repository, "freshness")}
    assert results[older]["explanation"]["contributions"]["freshness"] == score


def test_ties_break_by_updated_then_created_then_id(repository: KnowledgeRepository) -> None:
    stamp = "2025-01-01T00:00:00.000Z"
    ids = [_add(repository, f"tie breaker {n}", updated_at=stamp) for n in range(3)]
    newer = _add(repository, "tie breaker 9", updated_at="2025-01-01T00:00:00.001Z")
    # Same score (both freshness 4): newer updatedAt first, then ids ascending.
    assert _ids(_retrieve(repository, "breaker")) == [newer, *sorted(ids)]


def test_automatic_candidates_wait_for_verification(repository: KnowledgeRepository) -> None:
    automatic = _add(repository, "auto extracted claim", origin="automatic")
    assert _retrieve(repository, "extracted") == []
    repository.verify(automatic)
    assert _ids(_retrieve(repository, "extracted")) == [automatic]


def test_archived_and_superseded_are_never_returned(repository: KnowledgeRepository) -> None:
    archived = _add(repository, "terminal state one")
    repository.archive(archived)
    old = _add(repository, "terminal state two", verified=True)
    new = _add(repository, "terminal state three", verified=True)
    repository.supersede(old, new)
    assert _ids(_retrieve(repository, "terminal")) == [new]


def test_status_option_restricts_to_one_active_status(repository: KnowledgeRepository) -> None:
    candidate = _add(repository, "status filter")
    verified = _add(repository, "status filter too", verified=True)
    assert _ids(_retrieve(repository, "filter", status="candidate")) == [candidate]
    assert _ids(_retrieve(repository, "filter", status="verified")) == [verified]


def test_limit_defaults_to_twenty_and_caps_at_one_hundred(
    repository: KnowledgeRepository,
) -> None:
    repository.create_many(
        [
            {"type": "fact", "content": f"bulk item {n} alpha{n}", "scope": {"workspace": WS}}
            for n in range(105)
        ]
    )
    assert len(_retrieve(repository, "bulk")) == 20
    assert len(_retrieve(repository, "bulk", limit=500)) == 100


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"workspace": " "}, "Retrieval options must include a non-empty workspace."),
        ({"status": "archived"}, "Invalid retrieval status: archived"),
        ({"preferred_types": ["fact", "fact"]}, "Preferred knowledge types must be unique"),
        ({"preferred_types": ["opinion"]}, "Preferred knowledge types must be unique"),
        ({"limit": 0}, "Retrieval limit must be a positive integer."),
        ({"project": ""}, "Project scope must be a non-empty string when provided."),
    ],
)
def test_invalid_options_are_rejected(
    repository: KnowledgeRepository, options: dict[str, Any], message: str
) -> None:
    options.setdefault("workspace", WS)
    with pytest.raises(ValidationError, match=message.replace(".", r"\.")):
        retrieve_relevant_knowledge(repository, "anything", **options)


LONG = "the payment service retries failed webhooks with exponential backoff and jitter"


def test_identical_token_sequences_are_suppressed(repository: KnowledgeRepository) -> None:
    kept = _add(repository, "Cache TTL is 60s.", verified=True)
    dropped = _add(repository, "cache ttl is 60s")
    [result] = _retrieve(repository, "cache ttl")
    assert result["knowledge"]["id"] == kept
    assert result["explanation"]["suppressedSimilarIds"] == [dropped]


def test_in_order_near_duplicates_are_suppressed(repository: KnowledgeRepository) -> None:
    kept = _add(repository, LONG + " always", verified=True)
    dropped = _add(repository, LONG.replace(" jitter", "") + " always")
    results = _retrieve(repository, "webhooks backoff")
    assert _ids(results) == [kept]
    assert results[0]["explanation"]["suppressedSimilarIds"] == [dropped]


@pytest.mark.parametrize(
    "variant",
    [
        LONG.replace("retries", "never retries"),  # negation added
        " ".join(reversed(LONG.split())),  # reordered
        "payment retries webhooks",  # short: fewer than 8 tokens
    ],
)
def test_meaningful_differences_are_kept(repository: KnowledgeRepository, variant: str) -> None:
    _add(repository, LONG, verified=True)
    _add(repository, variant)
    assert len(_retrieve(repository, "webhooks payment retries")) == 2


def test_duplicates_need_the_same_type_and_scope() -> None:
    base = {"type": "fact", "content": LONG, "scope": {"workspace": WS}}
    assert are_conservative_duplicates(base, dict(base))
    assert not are_conservative_duplicates(base, {**base, "type": "lesson"})
    assert not are_conservative_duplicates(
        base, {**base, "scope": {"workspace": WS, "project": "p"}}
    )


def test_suppression_stops_at_first_non_duplicate_after_limit(
    repository: KnowledgeRepository,
) -> None:
    first = _add(repository, LONG, verified=True, evidence=3)
    dup = _add(repository, LONG, verified=True, evidence=2)
    _add(repository, "jitter for webhooks")
    late_dup = _add(repository, LONG.replace(" jitter", ""))
    results = _retrieve(repository, "jitter webhooks", limit=1)
    assert _ids(results) == [first]
    # The walk records `dup`, then stops at the first non-duplicate once the limit is
    # reached, so `late_dup` (ranked after it) is never examined.
    assert results[0]["explanation"]["suppressedSimilarIds"] == [dup]
    assert late_dup not in results[0]["explanation"]["suppressedSimilarIds"]
    full = _retrieve(repository, "jitter webhooks", limit=5)
    assert full[0]["explanation"]["suppressedSimilarIds"] == [dup, late_dup]


def test_chinese_query_finds_chinese_content(repository: KnowledgeRepository) -> None:
    item = _add(repository, "连接池耗尽导致超时")
    _add(repository, "缓存失效策略")
    [result] = _retrieve(repository, "数据库连接池")
    assert result["knowledge"]["id"] == item
    assert result["explanation"]["matchedTokens"] == ["连接", "接池"]


def test_mixed_language_query(repository: KnowledgeRepository) -> None:
    item = _add(repository, "Redis 连接池 must be bounded")
    assert _ids(_retrieve(repository, "redis连接池上限")) == [item]


def test_query_is_cut_at_1200_characters(repository: KnowledgeRepository) -> None:
    _add(repository, "needle")
    assert _retrieve(repository, "x" * 1200 + " needle") == []
    assert len(_retrieve(repository, "x" * 1100 + " needle")) == 1
