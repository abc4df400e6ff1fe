"""Deterministic ranked retrieval (M2): the earlier tool's integer scoring, explained.

Score = text points x 10,000 + 1,000 (exact requested project) + 100 (verified)
+ 10 x preference rank + min(evidence, 3) + freshness bucket (1-4, age against the newest
*matching* item, never the wall clock). Text points: 1,000 for the exact normalised phrase,
100 per exact token, 40 per partial token (both >= 4 characters, one containing the other),
and round(400 x coverage). Ties: updatedAt desc, createdAt desc, id asc.

Two candidate paths produce identical output (a property test holds them to it):
``use_index=True`` asks the FTS5 trigram index (see :mod:`dsh_knowledge.search_index`) for
the rows where some query token can match; ``use_index=False`` is the earlier tool's plain
scan of every active item in scope. Both feed the same matching and scoring code.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dsh_knowledge.errors import ValidationError
from dsh_knowledge.models import KNOWLEDGE_TYPES, parse_timestamp_ms
from dsh_knowledge.repository import KnowledgeRepository
from dsh_knowledge.search_index import (
    MAX_EXACT_SUBSTRING_TOKEN_LENGTH,
    MIN_PARTIAL_TOKEN_LENGTH,
    exact_expression,
    inner_substrings,
    known_terms,
    match_expression,
    phrase_expression,
    sync_search_index,
    token_stream,
)
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


def _js_round(value: float) -> int:
    """``Math.round``: halves round up (Python's round() would round them to even)."""
    return math.floor(value + 0.5)


@dataclass
class _Row:
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
class _Query:
    normalized: str
    tokens: list[str]
    # For each token: the padded whole-token forms of its substrings of length >= 4
    # (empty when partial matching does not apply or the token is too long to list them).
    substrings: list[tuple[str, ...]]


def _prepare_query(query: str) -> _Query:
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
    return _Query(normalized, tokens, substrings)


def _match(query: _Query, row: _Row) -> tuple[bool, list[str], list[str]]:
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


def _score(
    query: _Query, row: _Row, project: str | None, preferred: Sequence[str], newest: int | None
) -> None:
    phrase, exact, partial = row.match
    coverage = (len(exact) + len(partial)) / len(query.tokens)
    exact_phrase = 1000 if phrase else 0
    exact_points = len(exact) * 100
    partial_points = len(partial) * 40
    coverage_points = _js_round(400 * coverage)
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


def _time_key(value: str) -> tuple[int, str]:
    # Parseable timestamps order by time, then text; unparseable ones sort after them.
    parsed = parse_timestamp_ms(value)
    return (parsed if parsed is not None else -(2**62), value)


def _is_subsequence(shorter: Sequence[str], longer: Sequence[str]) -> bool:
    position = 0
    for token in longer:
        if position < len(shorter) and token == shorter[position]:
            position += 1
    return position == len(shorter)


def _duplicate_tokens(left: Sequence[str], right: Sequence[str]) -> bool:
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
    """The M2 near-duplicate predicate on two items (``type``, ``content``, ``scope``).

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
    return _duplicate_tokens(content_tokens(left["content"]), content_tokens(right["content"]))


def _validate(
    *,
    workspace: object,
    project: object,
    type: object,
    status: object,
    preferred_types: object,
    limit: object,
) -> None:
    if not isinstance(workspace, str) or not workspace.strip():
        raise ValidationError("Retrieval options must include a non-empty workspace.")
    if project is not None and (not isinstance(project, str) or not project.strip()):
        raise ValidationError("Project scope must be a non-empty string when provided.")
    if type is not None and type not in KNOWLEDGE_TYPES:
        raise ValidationError(f"Invalid knowledge type: {type}")
    if status is not None and status not in ACTIVE_STATUSES:
        raise ValidationError(f"Invalid retrieval status: {status}")
    if preferred_types is not None and (
        isinstance(preferred_types, str)
        or not isinstance(preferred_types, Sequence)
        or any(t not in KNOWLEDGE_TYPES for t in preferred_types)
        or len(set(preferred_types)) != len(preferred_types)
        or len(preferred_types) > 3
    ):
        raise ValidationError("Preferred knowledge types must be unique valid types.")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValidationError("Retrieval limit must be a positive integer.")


def _eligible_where(
    workspace: str, project: str | None, type: str | None, status: str | None, alias: str
) -> tuple[str, list[Any]]:
    """Eligibility over ``alias`` (knowledge ``k`` or its index copy ``d``: same columns)."""
    statuses = [status] if status is not None else list(ACTIVE_STATUSES)
    a = alias
    clauses = [
        f"{a}.workspace = ?",
        f"{a}.status IN ({','.join('?' * len(statuses))})",
        # Automatic-origin candidates wait for an explicit verification before retrieval.
        f"NOT ({a}.status = 'candidate' AND {a}.creation_origin = 'automatic')",
    ]
    params: list[Any] = [workspace, *statuses]
    if project is None:
        clauses.append(f"{a}.project IS NULL")
    else:
        clauses.append(f"({a}.project IS NULL OR {a}.project = ?)")
        params.append(project)
    if type is not None:
        clauses.append(f"{a}.type = ?")
        params.append(type)
    return " AND ".join(clauses), params


_EVIDENCE_COUNT = (
    "(SELECT count(*) FROM (SELECT 1 FROM knowledge_evidence e "
    "WHERE e.knowledge_id = k.id LIMIT 3))"
)


_CANONICAL_TIMESTAMP = (
    "[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z"
)
_TEMP_DDL = (
    "CREATE TEMP TABLE IF NOT EXISTS retrieval_hits (doc INTEGER PRIMARY KEY, "
    "exact_mask INTEGER NOT NULL, match_mask INTEGER NOT NULL, text INTEGER NOT NULL, "
    "phrase INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS temp.retrieval_hits_text ON retrieval_hits (text)",
)
_HIT_SELECT = "SELECT rowid, ?, ?, ?, ?, ? FROM knowledge_fts WHERE knowledge_fts MATCH ?"
_HITS_JOIN = (
    "FROM temp.retrieval_hits h CROSS JOIN knowledge_search_doc d ON d.doc_id = h.doc WHERE "
)
_ROW_SELECT = (
    "SELECT h.text, h.exact_mask, h.match_mask, h.phrase, d.id, d.type, d.project, d.status, "
    "d.created_at, d.updated_at, d.evidence_count, d.toks "
)
_DAY = 86_400_000


class _IndexedSearch:
    """One indexed retrieval: FTS hits scored in SQL, then read in rank order, lazily.

    Text points depend only on which query tokens match, so SQLite computes them for every
    hit (per-token FTS queries and a GROUP BY, no Python per hit) into a temporary table.
    With canonical timestamps SQLite also orders the hits by the complete ranking key
    (text, scope + status + type + evidence + freshness, updatedAt, createdAt, id) and we
    read only as many rows as the result walk needs. Otherwise we read one text tier at a
    time and order it with the same Python code as the full scan.
    """

    def __init__(self, repository: KnowledgeRepository, query: _Query) -> None:
        self.repository = repository
        self.db = repository.store.connection
        self.query = query
        self.canonical = False

    def _fill_hits(self) -> int:
        for statement in _TEMP_DDL:
            self.db.execute(statement)
        self.db.execute("DELETE FROM temp.retrieval_hits")
        parts: list[str] = []
        params: list[Any] = []
        # One SELECT per FTS query, each row tagged (exact bit, match bit, exact count,
        # match count, phrase) through bound values. Strings that are nobody's token are
        # left out up front (the vocabulary lookup is far cheaper than an FTS phrase).
        known = known_terms(
            self.db,
            [piece for token in self.query.tokens for piece in [token, *inner_substrings(token)]],
        )
        for position, token in enumerate(self.query.tokens):
            bit = 1 << position
            partial = match_expression(token, known)
            if partial is None:  # shorter than 4: only an exact match counts
                if token in known:
                    parts.append(_HIT_SELECT)
                    params.extend([bit, bit, 1, 1, 0, exact_expression(token)])
            else:
                if token in known:
                    parts.append(_HIT_SELECT)
                    params.extend([bit, 0, 1, 0, 0, exact_expression(token)])
                parts.append(_HIT_SELECT)
                params.extend([0, bit, 0, 1, 0, partial])
        parts.append(_HIT_SELECT)
        params.extend([0, 0, 0, 0, 1, phrase_expression(self.query.normalized)])
        count = len(self.query.tokens)
        # The same arithmetic as _score: 400 * (matched / count), rounded half up.
        self.db.execute(
            "WITH hits (doc, e, m, ec, mc, ph) AS (" + " UNION ALL ".join(parts) + ") "  # noqa: S608 - fixed SQL, bound values
            "INSERT INTO temp.retrieval_hits (doc, exact_mask, match_mask, text, phrase) "
            "SELECT doc, sum(e), sum(m), 1000 * max(ph) + 100 * sum(ec) + 40 * (sum(mc) - sum(ec))"
            f" + CAST(400.0 * (sum(mc) * 1.0 / {count}) + 0.5 AS INTEGER), max(ph) "
            "FROM hits GROUP BY doc HAVING sum(mc) > 0",
            params,
        )
        return int(self.db.execute("SELECT count(*) FROM temp.retrieval_hits").fetchone()[0])

    def _state(self) -> tuple[int, int]:
        # data_version moves on commits by other connections, total_changes on ours.
        return (self.db.execute("PRAGMA data_version").fetchone()[0], self.db.total_changes)

    def all_canonical(self) -> bool:
        """Whether every timestamp is in toISOString form (then text order is time order).

        Anything else (a hand-edited or legacy row) sends ordering to Python. Cached on the
        store until the database changes; call before touching the temporary table, whose
        writes also count in total_changes (see :meth:`remember`).
        """
        cached = self.repository.store.search_cache.get("canonical")
        if cached is not None and cached[0] == self._state():
            return bool(cached[1])
        row = self.db.execute(
            "SELECT NOT EXISTS (SELECT 1 FROM knowledge_search_doc "
            "WHERE updated_at NOT GLOB ?1 OR created_at NOT GLOB ?1)",
            (_CANONICAL_TIMESTAMP,),
        ).fetchone()
        return bool(row[0])

    def remember(self) -> None:
        """Cache the canonical flag against the state after our own temporary writes."""
        self.repository.store.search_cache["canonical"] = (self._state(), self.canonical)

    def rows(
        self, where: str, params: list[Any], project: str | None, preferred: Sequence[str]
    ) -> tuple[int | None, Any, bool]:
        """(newest matching time, groups of rows, whether the groups are already ordered)."""
        self.canonical = self.all_canonical()
        if self._fill_hits() == 0:
            return None, iter(()), True
        if not self.canonical:
            values = self.db.execute(f"SELECT d.updated_at {_HITS_JOIN}{where}", params)
            parsed = (parse_timestamp_ms(value) for (value,) in values)
            newest = max((value for value in parsed if value is not None), default=None)
            cursor = self.db.execute(
                f"{_ROW_SELECT}FROM temp.retrieval_hits h INDEXED BY retrieval_hits_text "
                "CROSS JOIN knowledge_search_doc d ON d.doc_id = h.doc "
                f"WHERE {where} ORDER BY h.text DESC",
                params,
            )
            return newest, self._tiers(cursor), False
        row = self.db.execute(f"SELECT max(d.updated_at) {_HITS_JOIN}{where}", params).fetchone()
        if row[0] is None:
            return None, iter(()), True
        newest_text = str(row[0])
        # The score below the text points, in SQL, exactly as _score computes it.
        type_points = "".join(
            f" WHEN {_sql_text(kind)} THEN {(len(preferred) - rank) * 10}"
            for rank, kind in enumerate(preferred)
        )
        age = "CAST(round((julianday(?) - julianday(d.updated_at)) * 86400000.0) AS INTEGER)"
        rest = (
            "(CASE WHEN d.project = ? THEN 1000 ELSE 0 END"
            " + CASE WHEN d.status = 'verified' THEN 100 ELSE 0 END"
            + (f" + CASE d.type{type_points} ELSE 0 END" if preferred else "")
            + " + min(d.evidence_count, 3)"
            f" + CASE WHEN {age} <= {7 * _DAY} THEN 4 WHEN {age} <= {30 * _DAY} THEN 3"
            f" WHEN {age} <= {180 * _DAY} THEN 2 ELSE 1 END)"
        )
        cursor = self.db.execute(
            f"{_ROW_SELECT}{_HITS_JOIN}{where} ORDER BY h.text DESC, {rest} DESC, "
            "d.updated_at DESC, d.created_at DESC, d.id ASC",
            [*params, project, newest_text, newest_text, newest_text],
        )
        return parse_timestamp_ms(newest_text), iter([self._stream(cursor)]), True

    def _row(self, record: Sequence[Any]) -> _Row:
        _text, exact_mask, match_mask, phrase, *columns = record
        item_id, item_type, project, status, created, updated, count, stream = columns
        partial_mask = match_mask & ~exact_mask
        row = _Row(
            item_id, item_type, project, status, created, updated, count,
            stream[1:-1].split(" ") if len(stream) > 2 else [], stream, "",
        )  # fmt: skip
        tokens = self.query.tokens
        row.match = (
            bool(phrase),
            [t for i, t in enumerate(tokens) if exact_mask >> i & 1],
            [t for i, t in enumerate(tokens) if partial_mask >> i & 1],
        )
        return row

    def _stream(self, cursor: Any) -> Any:
        for record in cursor:
            yield self._row(record)

    def _tiers(self, cursor: Any) -> Any:
        tier: list[_Row] = []
        tier_text = None
        for record in cursor:
            if tier and record[0] != tier_text:
                yield tier
                tier = []
            tier_text = record[0]
            tier.append(self._row(record))
        if tier:
            yield tier


def _sql_text(value: str) -> str:
    # Only the three validated type names reach here; quoting keeps it a literal anyway.
    return "'" + value.replace("'", "''") + "'"


def _scanned_rows(repository: KnowledgeRepository, where: str, params: list[Any]) -> list[_Row]:
    sql = (
        "SELECT k.id, k.type, k.project, k.status, k.created_at, k.updated_at, "  # noqa: S608 - fixed clauses
        f"{_EVIDENCE_COUNT}, k.content FROM knowledge k WHERE {where}"
    )
    rows = []
    for (
        item_id,
        item_type,
        project,
        status,
        created,
        updated,
        count,
        content,
    ) in repository.store.connection.execute(sql, params):
        normalized = normalize_text(content)
        tokens = content_tokens(content)
        rows.append(
            _Row(
                item_id,
                item_type,
                project,
                status,
                created,
                updated,
                count,
                tokens,
                token_stream(tokens),
                normalized,
            )
        )
    return rows


def retrieve_relevant_knowledge(
    repository: KnowledgeRepository,
    query: str,
    *,
    workspace: str,
    project: str | None = None,
    limit: int | None = None,
    preferred_types: Sequence[str] | None = None,
    status: str | None = None,
    type: str | None = None,
    use_index: bool = True,
) -> list[dict[str, Any]]:
    """Ranked ``[{"knowledge", "score", "explanation"}]`` for ``query`` in one scope.

    Considers verified items and explicit-origin candidates of ``workspace`` that are
    workspace-wide or (when given) in ``project``; archived and superseded items never.
    ``use_index=False`` runs the plain full scan (same results, slower at scale).
    """
    _validate(
        workspace=workspace,
        project=project,
        type=type,
        status=status,
        preferred_types=preferred_types,
        limit=limit,
    )
    if not isinstance(query, str):
        raise ValidationError("Retrieval query must be a string.")
    prepared = _prepare_query(query)
    if not prepared.tokens:
        return []
    preferred = list(preferred_types or [])
    result_limit = min(limit if limit is not None else DEFAULT_RESULT_LIMIT, MAX_RETRIEVAL_RESULTS)
    indexable = all(len(t) <= MAX_EXACT_SUBSTRING_TOKEN_LENGTH for t in prepared.tokens)
    if use_index and repository.store.index_ready and indexable:
        sync_search_index(repository.store)
        where, params = _eligible_where(workspace, project, type, status, "d")
        with repository.store.read():
            search = _IndexedSearch(repository, prepared)
            newest, tiers, ordered = search.rows(where, params, project, preferred)
            selected = _select(
                ordered=ordered,
                tiers=tiers,
                query=prepared,
                project=project,
                preferred=preferred,
                newest=newest,
                limit=result_limit,
            )
            items = {i["id"]: i for i in repository.get_many([r.item_id for r in selected])}
            search.remember()
    else:
        where, params = _eligible_where(workspace, project, type, status, "k")
        matches: list[_Row] = []
        for row in _scanned_rows(repository, where, params):
            row.match = _match(prepared, row)
            if row.match[1] or row.match[2]:
                matches.append(row)
        parsed = [parse_timestamp_ms(row.updated_at) for row in matches]
        newest = max((value for value in parsed if value is not None), default=None)
        selected = _select(
            ordered=False,
            tiers=iter([matches]),
            query=prepared,
            project=project,
            preferred=preferred,
            newest=newest,
            limit=result_limit,
        )
        items = {i["id"]: i for i in repository.get_many([r.item_id for r in selected])}
    return [_result(row, items[row.item_id], len(prepared.tokens)) for row in selected]


def _select(
    *,
    ordered: bool,
    tiers: Any,
    query: _Query,
    project: str | None,
    preferred: list[str],
    newest: int | None,
    limit: int,
) -> list[_Row]:
    """Score, order and walk the ranked rows with near-duplicate suppression.

    ``tiers`` yields groups of rows in descending text order (the full scan passes one
    group with every match); each group is ordered by the complete key before the walk,
    unless ``ordered`` says SQLite already delivered the rows in final rank order.
    The walk records duplicates of kept rows and stops at the first non-duplicate once
    ``limit`` rows are kept.
    """
    selected: list[_Row] = []
    for tier in tiers:
        if not ordered:
            for row in tier:
                _score(query, row, project, preferred, newest)
            # Stable multi-key sort: id ascending first, then the descending keys on top.
            tier.sort(key=lambda row: row.item_id)
            tier.sort(
                key=lambda row: (row.score, _time_key(row.updated_at), _time_key(row.created_at)),
                reverse=True,
            )
        for row in tier:
            if ordered:  # rows arrive in rank order; score only the ones we look at
                _score(query, row, project, preferred, newest)
            # Same type and exact scope are part of the predicate (workspace is fixed here).
            original = next(
                (
                    kept
                    for kept in selected
                    if kept.type == row.type
                    and kept.project == row.project
                    and _duplicate_tokens(kept.tokens, row.tokens)
                ),
                None,
            )
            if original is not None:
                original.suppressed.append(row.item_id)
                continue
            if len(selected) == limit:
                return selected
            selected.append(row)
    return selected


def _result(row: _Row, item: dict[str, Any], token_count: int) -> dict[str, Any]:
    phrase, exact, partial = row.match
    coverage = math.floor((len(exact) + len(partial)) / token_count * 1000 + 0.5)
    if phrase:
        match_type = "exact_phrase"
    elif exact and partial:
        match_type = "mixed_tokens"
    elif exact:
        match_type = "exact_tokens"
    else:
        match_type = "partial_tokens"
    return {
        "knowledge": item,
        "score": row.score,
        "explanation": {
            "matchType": match_type,
            "matchedTokens": [*exact, *partial],
            # JSON.stringify writes 1, not 1.0: keep whole numbers integral.
            "tokenCoverage": coverage // 1000 if coverage % 1000 == 0 else coverage / 1000,
            "contributions": row.contributions,
            "suppressedSimilarIds": row.suppressed,
        },
    }
