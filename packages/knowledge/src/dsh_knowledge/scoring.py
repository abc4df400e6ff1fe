"""Matching and scoring shared by both retrieval paths (the earlier tool's rules).

Score = text points x 10,000 + 1,000 (exact requested project) + 100 (verified)
+ 10 x preference rank + min(evidence, 3) + freshness bucket (1-4, age against the newest
*matching* item, never the wall clock). Text points: 1,000 for the exact normalised phrase,
100 per exact token, 40 per partial token (both >= 4 characters, one containing the other),
and round(400 x coverage). Ties: updatedAt desc, createdAt desc, id asc.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dsh_knowledge.models import parse_timestamp_ms
from dsh_knowledge.search_index import MAX_EXACT_SUBSTRING_TOKEN_LENGTH, MIN_PARTIAL_TOKEN_LENGTH
from dsh_knowledge.tokenize import (
    CONTRAST_TOKENS,
    MAX_QUERY_CHARACTERS,
    content_tokens,
    normalize_text,
    query_tokens,
)

RETRIEVAL_SCORING: Mapping[str, Any] = {
    "exactPhrase": 1000,
    "exactToken": 100,
    "partialToken": 40,
    "fullTokenCoverage": 400,
    "textMultiplier": 10000,
    "projectScopeMultiplier": 1000,
    "verifiedStatusMultiplier": 100,
    "preferredTypeMultiplier": 10,
    "evidenceItemContribution": 1,
    "maxEvidenceContribution": 3,
    "similarityThreshold": 0.9,
    "freshnessBucketsDays": (
        {"max": 7, "score": 4},
        {"max": 30, "score": 3},
        {"max": 180, "score": 2},
    ),
    "olderFreshnessScore": 1,
}
DEFAULT_RESULT_LIMIT = 20
MAX_RETRIEVAL_RESULTS = 100
MIN_SIMILARITY_TOKENS = 8
ACTIVE_STATUSES = ("verified", "candidate")
_DAY_MS = 86_400_000
_FRESHNESS_BUCKETS = tuple(
    (bucket["max"] * _DAY_MS, bucket["score"])
    for bucket in RETRIEVAL_SCORING["freshnessBucketsDays"]
)


def js_round(value: float) -> int:
    """``Math.round``: halves round up (Python's round() would round them to even)."""
    return math.floor(value + 0.5)


@dataclass
class Row:
    """One eligible item as both candidate paths see it."""

    item_id: str
    type: str
    project: str | None
    status: str
    created_at: str
    updated_at: str
    evidence_count: int
    tokens: list[str]
    stream: str  # token_stream(tokens)
    normalized: str
    match: tuple[bool, list[str], list[str]] = (False, [], [])
    score: int = 0
    contributions: dict[str, int] = field(default_factory=dict)
    suppressed: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Query:
    normalized: str
    tokens: list[str]
    # For each token: the padded whole-token forms of its substrings of length >= 4
    # (empty when partial matching does not apply or the token is too long to list them).
    substrings: list[tuple[str, ...]]


def prepare_query(query: str) -> Query:
    normalized = normalize_text(query[:MAX_QUERY_CHARACTERS])
    tokens = query_tokens(normalized)
    substrings: list[tuple[str, ...]] = []
    for token in tokens:
        length = len(token)
        if MIN_PARTIAL_TOKEN_LENGTH <= length <= MAX_EXACT_SUBSTRING_TOKEN_LENGTH:
            substrings.append(
                tuple(
                    f" {token[start : start + size]} "
                    for size in range(MIN_PARTIAL_TOKEN_LENGTH, length + 1)
                    for start in range(length - size + 1)
                )
            )
        else:
            substrings.append(())
    return Query(normalized, tokens, substrings)


def match_text(query: Query, row: Row) -> tuple[bool, list[str], list[str]]:
    """(exact phrase, exact tokens, partial tokens) - the earlier tool's matchText."""
    exact: list[str] = []
    partial: list[str] = []
    token_set = set(row.tokens)
    stream = row.stream
    for token, substrings in zip(query.tokens, query.substrings, strict=True):
        if token in token_set:
            exact.append(token)
        elif len(token) >= MIN_PARTIAL_TOKEN_LENGTH:
            # q inside a content token (q has no spaces, so it lies within one token, whose
            # length is then >= len(q) >= 4), or a content token of length >= 4 inside q.
            if token in stream:
                partial.append(token)
            elif substrings:
                if any(piece in stream for piece in substrings):
                    partial.append(token)
            elif any(len(t) >= MIN_PARTIAL_TOKEN_LENGTH and t in token for t in token_set):
                partial.append(token)
    phrase = bool(query.normalized) and f" {query.normalized} " in f" {row.normalized} "
    return phrase, exact, partial


def _freshness(updated_ms: int | None, newest_ms: int | None) -> int:
    if updated_ms is None or newest_ms is None:
        return int(RETRIEVAL_SCORING["olderFreshnessScore"])
    age = max(0, newest_ms - updated_ms)
    for limit, score in _FRESHNESS_BUCKETS:
        if age <= limit:
            return int(score)
    return int(RETRIEVAL_SCORING["olderFreshnessScore"])


def score_row(
    query: Query, row: Row, project: str | None, preferred: Sequence[str], newest: int | None
) -> None:
    phrase, exact, partial = row.match
    coverage = (len(exact) + len(partial)) / len(query.tokens)
    exact_phrase = 1000 if phrase else 0
    exact_points = len(exact) * 100
    partial_points = len(partial) * 40
    coverage_points = js_round(400 * coverage)
    text = exact_phrase + exact_points + partial_points + coverage_points
    scope = 1000 if project is not None and row.project == project else 0
    status = 100 if row.status == "verified" else 0
    type_points = (len(preferred) - preferred.index(row.type)) * 10 if row.type in preferred else 0
    evidence = min(row.evidence_count, 3)
    freshness = _freshness(parse_timestamp_ms(row.updated_at), newest)
    row.contributions = {
        "exactPhrase": exact_phrase,
        "exactTokens": exact_points,
        "partialTokens": partial_points,
        "tokenCoverage": coverage_points,
        "text": text,
        "scope": scope,
        "status": status,
        "type": type_points,
        "evidence": evidence,
        "freshness": freshness,
    }
    row.score = text * 10000 + scope + status + type_points + evidence + freshness


def time_key(value: str) -> tuple[int, str]:
    # Parseable timestamps order by time, then text; unparseable ones sort after them.
    parsed = parse_timestamp_ms(value)
    return (parsed if parsed is not None else -(2**62), value)


def _is_subsequence(shorter: Sequence[str], longer: Sequence[str]) -> bool:
    position = 0
    for token in longer:
        if position < len(shorter) and token == shorter[position]:
            position += 1
    return position == len(shorter)


def duplicate_tokens(left: Sequence[str], right: Sequence[str]) -> bool:
    if list(left) == list(right):
        return True
    if min(len(left), len(right)) < MIN_SIMILARITY_TOKENS:
        return False
    if not _is_subsequence(left, right) and not _is_subsequence(right, left):
        return False
    left_set, right_set = set(left), set(right)
    if (left_set & CONTRAST_TOKENS) != (right_set & CONTRAST_TOKENS):
        return False
    union = len(left_set | right_set)
    return union > 0 and len(left_set & right_set) / union >= 0.9


def are_conservative_duplicates(left: Mapping[str, Any], right: Mapping[str, Any]) -> bool:
    """The near-duplicate predicate on two items (``type``, ``content``, ``scope``).

    Same type and exact scope; then the same token sequence, or (both >= 8 tokens) one an
    in-order subsequence of the other, identical contrast/negation/modal words, and a
    Jaccard similarity of distinct tokens >= 0.9.
    """
    if left["type"] != right["type"]:
        return False
    if left["scope"]["workspace"] != right["scope"]["workspace"]:
        return False
    if left["scope"].get("project") != right["scope"].get("project"):
        return False
    return duplicate_tokens(content_tokens(left["content"]), content_tokens(right["content"]))
