"""The earlier tool's scoring rules, shared by the scan and the index.

Per query term, on lowercased text: +1 if the searchable text (id, type, tags, created_by,
source_hash, body) contains it, +3 if the id contains it, +2 if the type equals it, +1 if
the body contains it. The id, the type and the body are all part of the searchable text, so
a term that misses the searchable text scores nothing at all - which is why the index may
skip every record whose grams cannot contain any term. ``search_index`` evaluates the same
rules in SQL (``instr``) for speed; a property test holds the two to identical results.
"""

from __future__ import annotations

import datetime as _dt

from dsh_memory import frontmatter
from dsh_memory.records import SCOPES, Record


def score_record(record: Record, terms: list[str]) -> int:
    """The earlier tool's per-term score of one record."""
    searchable = record.searchable().lower()
    record_id = record.scoring_id().lower()
    record_type = (record.type or "").lower()
    body = record.body.lower()
    score = 0
    for term in terms:
        if term in searchable:
            score += 1
            if term in record_id:
                score += 3
            if record_type == term:
                score += 2
            if term in body:
                score += 1
    return score


def is_visible(record: Record, scope: str, now: _dt.datetime) -> bool:
    """Valid, in scope and not expired: the records search and context may return."""
    if not record.valid or record.folder not in SCOPES[scope]:
        return False
    return not frontmatter.is_expired({"expires_at": record.expires_at}, now)


def ranked_matches(
    records: list[Record], terms: list[str], scope: str, now: _dt.datetime
) -> list[tuple[Record, int]]:
    """Visible records with a positive score, best first (score desc, path asc)."""
    scored = []
    for record in records:
        if not is_visible(record, scope, now):
            continue
        score = score_record(record, terms)
        if score > 0:
            scored.append((record, score))
    scored.sort(key=lambda pair: (-pair[1], pair[0].path))
    return scored
