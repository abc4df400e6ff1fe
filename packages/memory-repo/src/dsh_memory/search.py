"""``memory.search``: bilingual full-text search over payload records.

Scoring is the earlier tool's, per query term, on lowercased text (``str.lower``):

- +1 if the searchable text (id, type, tags, created_by, source_hash, body) contains it,
- +3 if the id contains it,
- +2 if the type equals it,
- +1 if the body contains it.

Results are sorted by score (descending) then path (code point order); a record that
scores 0 is not a result. Expired records, records with invalid metadata and ``summary.md``
never are.

Tokenisation (what changed from the earlier tool, precisely):

1. The query is lowercased and split on runs of characters that are not letters or numbers
   (the earlier ``/[^\\p{L}\\p{N}]+/u``; in Python ``[\\W_]+``). Tokens are kept in order,
   duplicates included. A token without Han characters is one term, exactly as before:
   Latin queries score exactly as in the earlier tool.
2. A token containing Han characters (the earlier tool matched it only as one contiguous
   phrase, so "缓存雪崩预防" found nothing in "缓存雪崩的预防") is expanded, with
   ``dsh_common.text``, into: the token itself (the exact-phrase match still scores), its
   ICU word segments of two or more characters (``text.segment_words``; one-character
   segments such as "的" are dropped: the bigrams already cover them and they would match
   nearly every Chinese record), and every Han bigram (``text.han_bigrams``). Each distinct
   expansion is one term scored with the rules above, so a record sharing more of a Chinese
   phrase ranks higher, and the whole phrase ranks highest.

The snippet is the body from 40 characters before the first hit of the first query term
that occurs in the body, to 120 characters after it, whitespace collapsed; the first 160
characters when no term occurs in the body. The citation is
``[source: <path> · id: <id>]``.

Legacy records (no front matter) are searched too, shown with their deterministic
``legacy-<hash>`` id; that synthetic id is not matched against the query.
"""

from __future__ import annotations

import datetime as _dt
import re
from pathlib import Path
from typing import Any

from dsh_common import text
from dsh_memory.errors import SearchInvalidRequestError
from dsh_memory.records import SCOPES, Record
from dsh_memory.scoring import is_visible, ranked_matches, score_record

__all__ = [
    "citation",
    "is_visible",
    "matching_records",
    "query_terms",
    "ranked_matches",
    "score_record",
    "search",
    "snippet",
]

DEFAULT_LIMIT = 20
MAX_LIMIT = 20
#: Queries longer than this are refused: a query is a few words, not a document.
MAX_QUERY_CHARS = 1000
SNIPPET_BEFORE = 40
SNIPPET_AFTER = 120
SNIPPET_FALLBACK = 160

_NOT_LETTER_OR_NUMBER = re.compile(r"[\W_]+")
_HAN = re.compile("[\u3007\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]")
_WHITESPACE = re.compile(r"\s+")


def query_terms(query: str) -> list[str]:
    """The terms a query is scored by (see the module docstring for the exact rules)."""
    terms: list[str] = []
    for token in _NOT_LETTER_OR_NUMBER.split(query.lower()):
        if not token:
            continue
        if _HAN.search(token) is None:
            terms.append(token)
            continue
        expansion = [token]
        expansion.extend(
            segment.lower() for segment in text.segment_words(token) if len(segment) >= 2
        )
        expansion.extend(text.han_bigrams(token))
        terms.extend(dict.fromkeys(expansion))
    return terms


def snippet(body: str, terms: list[str]) -> str:
    lowered = body.lower()
    for term in terms:
        first = lowered.find(term)
        if first != -1:
            window = body[max(0, first - SNIPPET_BEFORE) : first + SNIPPET_AFTER]
            return _WHITESPACE.sub(" ", window).strip()
    return _WHITESPACE.sub(" ", body[:SNIPPET_FALLBACK]).strip()


def citation(path: str, record_id: str | None) -> str:
    return f"[source: {path}]" if record_id is None else f"[source: {path} · id: {record_id}]"


def validate_query(query: object, error: type[Exception] = SearchInvalidRequestError) -> str:
    if not isinstance(query, str) or not query.strip():
        raise error("query must be a non-blank string")
    if len(query) > MAX_QUERY_CHARS:
        raise error(f"query is longer than {MAX_QUERY_CHARS} characters")
    if not query_terms(query):
        raise error("query has no letters or numbers to search for")
    return query


def validate_limit(
    limit: object, default: int, error: type[Exception] = SearchInvalidRequestError
) -> int:
    """An integer 1-20; the CLI passes the raw option string, so decimal strings count."""
    if limit is None:
        return default
    if isinstance(limit, str):
        stripped = limit.strip()
        if not stripped.isascii() or not stripped.isdigit():
            raise error(f"limit must be an integer from 1 to {MAX_LIMIT}")
        limit = int(stripped)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise error(f"limit must be an integer from 1 to {MAX_LIMIT}")
    return limit


def validate_scope(scope: object, error: type[Exception] = SearchInvalidRequestError) -> str:
    if scope is None:
        return "active"
    if not isinstance(scope, str) or scope not in SCOPES:
        raise error("scope must be one of active, archive, all")
    return scope


def search_result(record: Record, score: int, terms: list[str]) -> dict[str, Any]:
    return {
        "path": record.path,
        "score": score,
        "id": record.id,
        "type": record.type,
        "updated_at": record.updated_at,
        "content_hash": record.content_hash,
        "generation": 1,
        "source_rollouts": list(record.source_rollouts),
        "snippet": snippet(record.body, terms),
        "citation": citation(record.path, record.id),
    }


def matching_records(
    root: Path,
    terms: list[str],
    scope: str,
    *,
    use_index: bool = True,
    now: _dt.datetime | None = None,
) -> tuple[list[tuple[Record, int]], dict[str, Any]]:
    """All matches in rank order and how they were found (``retrieval``).

    Records served by the index are *partial* (path and id only);
    ``search_index.complete_records`` fills in the ones a caller returns.
    """
    from dsh_memory import search_index  # noqa: PLC0415 - SQLite only when searching

    instant = now or _dt.datetime.now(_dt.UTC)
    return search_index.ranked_candidates(root, terms, scope, instant, use_index=use_index)


def search(
    root: Path,
    query: object,
    limit: object = DEFAULT_LIMIT,
    scope: object = "active",
    *,
    use_index: bool = True,
    now: _dt.datetime | None = None,
) -> dict[str, Any]:
    """The spec's ``memory.search`` value: ``{query, count, results, retrieval}``.

    ``count`` is the number of matches before ``limit`` (as in the earlier tool);
    ``retrieval`` says whether the index served the query (``mode: "index"``) or a full
    scan did (``mode: "scan"``), and the index state. Raises ``SearchInvalidRequestError``
    for a missing, blank, oversized or token-less query, a limit outside 1-20 or an unknown
    scope; nothing on disk changes then.
    """
    checked_query = validate_query(query)
    checked_limit = validate_limit(limit, DEFAULT_LIMIT)
    checked_scope = validate_scope(scope)
    terms = query_terms(checked_query)
    matches, retrieval = matching_records(root, terms, checked_scope, use_index=use_index, now=now)
    from dsh_memory import search_index  # noqa: PLC0415 - SQLite only when searching

    top = matches[:checked_limit]
    completed = search_index.complete_records(root, [record for record, _score in top])
    full = {record.path: record for record in completed}
    results = [
        search_result(full[record.path], score, terms)
        for record, score in top
        if record.path in full
    ]
    return {
        "query": checked_query,
        "count": len(matches),
        "results": results,
        "retrieval": retrieval,
        "warnings": search_index.invalid_record_warnings(root, checked_scope, use_index=use_index),
    }
