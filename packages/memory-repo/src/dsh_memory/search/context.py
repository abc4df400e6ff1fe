"""``memory.context``: a bounded, usage-ordered read of memory records for an agent.

Selection: with a query, every record the search would return (same terms, same scoring,
same exclusions); without one, every valid, unexpired record in scope. Order: effective
usage (``usage_count``) descending, ``last_usage`` descending, generation descending,
logical id ascending, path ascending; then ``limit`` (1-20, default 10) applies. Usage is
the earlier tool's selection rule: relevance chooses *which* records are candidates, usage
feedback decides which of them the agent sees first.

Each body (front matter removed) is cut to 4 KiB of UTF-8 without splitting a character
(``truncated`` says so). A successful read adds one use per returned record to the usage
sidecar (``dsh_memory.store.usage``); the values returned are the updated ones.

Generations: the usage sidecar format (schema 1) has no generation field, so every record
is generation 1 and the effective usage is its ``usage_count``; ``content_hash`` (the front
matter's, else ``sha256:`` of the body) identifies the content that usage refers to.
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any

from dsh_memory.errors import ContextInvalidRequestError
from dsh_memory.search import search_index
from dsh_memory.search.search import (
    Progress,
    citation,
    fused_ranking,
    hybrid_ranking,
    matching_records,
    plan_query,
    validate_limit,
    validate_query,
    validate_scope,
)
from dsh_memory.store.records import Record
from dsh_memory.store.usage import read_usage, record_usage, usage_of

DEFAULT_LIMIT = 10
MAX_BODY_BYTES = 4096


def bounded_body(body: str, max_bytes: int = MAX_BODY_BYTES) -> tuple[str, bool]:
    """``(content, truncated)``: at most ``max_bytes`` of UTF-8, never half a character."""
    encoded = body.encode("utf-8")
    if len(encoded) <= max_bytes:
        return body, False
    # A cut inside a multi-byte character leaves an incomplete tail; "ignore" drops just
    # that tail (the body itself is valid UTF-8, so nothing else can be dropped).
    return encoded[:max_bytes].decode("utf-8", errors="ignore"), True


def _usage_order(
    entries: list[tuple[Record, float | None]], usage: dict[str, Any]
) -> list[tuple[Record, float | None]]:
    by_identity = sorted(entries, key=lambda pair: (pair[0].id or "", pair[0].path))
    return sorted(by_identity, key=lambda pair: (*usage_of(usage, pair[0].path), 1), reverse=True)


def context(
    root: Path,
    query: object = None,
    limit: object = DEFAULT_LIMIT,
    scope: object = "active",
    *,
    use_index: bool = True,
    now: _dt.datetime | None = None,
    record_use: bool = True,
    ranking: object = None,
    encode_budget: int | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """The contract's ``memory.context`` value: ``{query, count, records}``, plus ``warnings``,
    ``total`` (the records that matched - with a query, the search's ``count`` - before
    ``limit``) and ``truncated`` (``total`` is more than the records returned).

    ``record_use=False`` reads without recording usage (the service passes it for a Git
    repository that is not a memory repository: reading is fine there, writing is not).

    ``ranking`` (else ``DSH_RANKING``) ``"hybrid"`` selects a query's records by the hybrid
    ranking (:func:`dsh_memory.search.search.search` says how), each gains ``hybrid``, ``total``
    counts every fused candidate and ``retrieval`` (only then) says how they were found and
    which ranking answered. Without a query there is nothing to rank: hybrid changes
    nothing.

    Raises ``ContextInvalidRequestError`` for a blank/oversized query, a limit outside
    1-20 or an unknown scope (nothing is written then), ``UsageInvalidError`` /
    ``UnsafeLayoutError`` for a bad sidecar and ``UsageBusyError`` when another process
    holds the usage lock too long.
    """
    checked_query = None if query is None else validate_query(query, ContextInvalidRequestError)
    checked_limit = validate_limit(limit, DEFAULT_LIMIT, ContextInvalidRequestError)
    checked_scope = validate_scope(scope, ContextInvalidRequestError)
    wanted = hybrid_ranking(ranking, ContextInvalidRequestError) and checked_query is not None
    instant = now or _dt.datetime.now(_dt.UTC)
    usage = read_usage(root)
    explained: dict[str, dict[str, Any]] = {}
    notes: list[dict[str, str]] = []
    if checked_query is not None:
        matches, retrieval = matching_records(
            root, plan_query(checked_query), checked_scope, use_index=use_index, now=instant
        )
        # Relevance selects (the search's own top ``limit``), usage then orders them: with
        # partial matches nearly every record matches something, so ordering all matches by
        # usage would put a frequently used but unrelated record first.
        entries: list[tuple[Record, float | None]] = [
            (match.record, match.score) for match in matches[:checked_limit]
        ]
        total = len(matches)
        if wanted:
            fused, notes = fused_ranking(
                root,
                checked_query,
                matches,
                retrieval,
                scope=checked_scope,
                now=instant,
                limit=checked_limit,
                budget=encode_budget,
                progress=progress,
            )
            retrieval = {**retrieval, "ranking": "hybrid" if fused is not None else "lexical"}
            if fused is not None:
                hits, total = fused
                entries = [(match.record, match.score) for match, _hit in hits]
                explained = {m.record.path: hit.explain() for m, hit in hits if hit is not None}
    else:
        records, total, retrieval = search_index.context_candidates(
            root,
            checked_scope,
            instant,
            list(usage["records"]),
            checked_limit,
            use_index=use_index,
        )
        entries = [(record, None) for record in records]
    selected = _usage_order(entries, usage)[:checked_limit]
    if any(record.partial for record, _score in selected):
        full = {
            record.path: record
            for record in search_index.complete_records(root, [r for r, _s in selected])
        }
        selected = [(full[record.path], score) for record, score in selected if record.path in full]
    chosen = [item.path for item, _score in selected]
    updated = record_usage(root, chosen, instant) if record_use else read_usage(root)
    results = []
    for record, score in selected:
        content, truncated = bounded_body(record.body)
        count, last = usage_of(updated, record.path)
        item: dict[str, Any] = {
            "path": record.path,
            "id": record.id,
            "type": record.type,
            "content": content,
            "truncated": truncated,
            "citation": citation(record.path, record.id),
            "usage_count": count,
            "last_usage": last or None,
            "logical_id": record.id,
            "generation": 1,
            "content_hash": record.content_hash,
            "source_rollouts": list(record.source_rollouts),
        }
        if score is not None:
            item["score"] = score
        if record.path in explained:
            item["hybrid"] = explained[record.path]
        results.append(item)
    warnings = search_index.invalid_record_warnings(
        root, checked_scope, use_index=use_index, index_fresh=retrieval["mode"] == "index"
    )
    # total / truncated: as runs reports them (additive; the contract's fields come first).
    value: dict[str, Any] = {
        "query": checked_query,
        "count": len(results),
        "records": results,
        "warnings": warnings + notes,
        "total": total,
        "truncated": total > len(results),
    }
    if wanted:
        value["retrieval"] = retrieval
    return value
