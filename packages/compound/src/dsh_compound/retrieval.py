"""Recall: deterministic, CJK-aware keyword/substring scoring over the bounded corpus.

Terms are the ICU word segments of the original query plus every two-character n-gram of
each Chinese run, each NFKC-normalised and lowercased, at most 999 before de-duplication.
A term scores a field's weight when it is a substring of that field's normalised text:
title 8, tags 10, whenToUse 5, problem 3, rootCause 2, resolution 2, paths 1. Ties sort by
ID. Scores measure lexical overlap, not semantic confidence.

A long Chinese query yields hundreds of one- and two-character Han terms. Testing each with
``in`` against every field would cost terms x characters; instead, when there are many,
each field's unigrams and bigrams are enumerated once - as UTF-32 machine integers, so no
string is created per position - and intersected with the term set in C. The two ways give
the same score (a Han term of at most two characters occurs in a text exactly when it is
one of that text's unigrams or bigrams); property tests check.
"""

from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass
from typing import Any

from dsh_common import paths as common_paths
from dsh_common.cli import is_undecodable
from dsh_common.text import han_bigrams, han_runs, normalize, segment_words
from dsh_compound.corpus import StoredRecord, scan_corpus, unknown_keys_warning
from dsh_compound.errors import InvalidLimitError, InvalidQueryError
from dsh_compound.evidence import EvidenceRun, evidence_report, evidence_warning
from dsh_compound.limits import LIMITS, js_length
from dsh_compound.record import self_reported_evidence, summary_of
from dsh_compound.workspace import select_workspace

#: Field weights per matching term, in the contract's order (docs/compatibility/compound.md,
#: Recall).
FIELD_WEIGHTS: tuple[tuple[str, int], ...] = (
    ("title", 8),
    ("tags", 10),
    ("whenToUse", 5),
    ("problem", 3),
    ("rootCause", 2),
    ("resolution", 2),
    ("paths", 1),
)
RETRIEVAL_METHOD = "lexical-nfkc-substring"


# Above this many short Han terms, the gram-set intersection beats per-term ``in``.
_GRAM_INDEX_THRESHOLD = 24
# Separators no term can contain (terms are word-like segments or Han n-grams).
_JOIN = "\x00"
_FIELD_SEPARATOR = "\x1e"


def validate_query(query: object) -> str:
    """Return ``query`` if it is nonempty text of at most 500 JavaScript characters."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidQueryError("query must be nonempty text")
    if is_undecodable(query):
        raise InvalidQueryError("query is not valid UTF-8 text")
    if js_length(query) > LIMITS.query_length:
        raise InvalidQueryError(f"query is longer than {LIMITS.query_length} characters")
    return query


def validate_limit(limit: object) -> int:
    """Return ``limit`` if it is an integer from 1 to 10 (text digits are accepted)."""
    value: object = limit
    if isinstance(limit, str):
        text = limit.strip()
        value = int(text) if text.isascii() and text.isdigit() else None
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidLimitError(f"limit must be an integer from 1 to {LIMITS.max_limit}")
    if not 1 <= value <= LIMITS.max_limit:
        raise InvalidLimitError(f"limit must be from 1 to {LIMITS.max_limit}, not {value}")
    return value


def recall_terms(query: str) -> list[str]:
    """The distinct normalised terms of ``query``, in first-seen order (<= 999 raw terms)."""
    raw = segment_words(query) + han_bigrams(query)
    normalized = [term for term in (normalize(t) for t in raw) if term]
    return list(dict.fromkeys(normalized[: LIMITS.query_terms]))


@dataclass(frozen=True)
class _Terms:
    short_han: frozenset[str]  # Han-only terms of one or two characters
    long_han: tuple[str, ...]  # Han-only terms of three or more characters
    other: tuple[str, ...]  # everything else (Latin words, digits, mixed)

    @functools.cached_property
    def unigram_keys(self) -> frozenset[int]:
        return frozenset(_gram_key(t) for t in self.short_han if len(t) == 1)

    @functools.cached_property
    def bigram_keys(self) -> frozenset[int]:
        return frozenset(_gram_key(t) for t in self.short_han if len(t) == 2)

    @functools.cached_property
    def long_han_keyed(self) -> tuple[tuple[int, str], ...]:
        return tuple((_gram_key(t[:2]), t) for t in self.long_han)

    @classmethod
    def split(cls, terms: list[str]) -> _Terms:
        short: set[str] = set()
        long_han: list[str] = []
        other: list[str] = []
        for term in terms:
            if han_runs(term) == [term]:
                if len(term) <= 2:
                    short.add(term)
                else:
                    long_han.append(term)
            else:
                other.append(term)
        return cls(frozenset(short), tuple(long_han), tuple(other))


# One code point per 4 bytes in the machine's byte order, so that memoryview.cast sees
# each character ("I") and each pair of neighbours ("Q") as one machine integer.
_NATIVE_UTF32 = "utf-32-le" if sys.byteorder == "little" else "utf-32-be"


def _gram_key(gram: str) -> int:
    """The integer a one- or two-character gram has in :func:`_gram_keys` sets."""
    raw = memoryview(gram.encode(_NATIVE_UTF32))
    return int(raw.cast("I")[0] if len(gram) == 1 else raw.cast("Q")[0])


def _gram_keys(text: str) -> tuple[set[int], set[int]]:
    """Every character and every pair of neighbouring characters of ``text``, as integers.

    Encoding to UTF-32 and reinterpreting the bytes as 4- and 8-byte integers enumerates
    all unigrams and bigrams in C, without creating a string per position - about three
    times faster than slicing. Pairs at even offsets come from the whole buffer, pairs at
    odd offsets from the buffer shifted by one character. Non-Han grams are included and
    harmless: they can never equal a Han term's key.
    """
    raw = memoryview(text.encode(_NATIVE_UTF32))
    unigrams = set(raw.cast("I"))
    even = len(raw) // 8 * 8
    odd = (len(raw) - 4) // 8 * 8 if len(raw) >= 4 else 0
    bigrams = set(raw[:even].cast("Q"))
    bigrams.update(raw[4 : 4 + odd].cast("Q"))
    return unigrams, bigrams


def searchable_text(metadata: dict[str, Any]) -> str:
    """The scored fields of a record, normalised once, joined by a field separator.

    Tags and paths are joined with NUL inside their field. Both separators are control
    characters that NFKC leaves alone and no term can contain, so normalising the joined
    text equals joining the normalised fields, and no match can span two fields. A field
    may hold the separator itself (text fields accept control characters): it becomes NUL
    there, which no term can match either, so the record still splits into its seven fields.
    """
    parts = [
        metadata["title"],
        _JOIN.join(metadata["tags"]),
        metadata["whenToUse"],
        metadata["problem"],
        metadata["rootCause"],
        metadata["resolution"],
        _JOIN.join(entry["path"] for entry in metadata["files"]),
    ]
    joined = _FIELD_SEPARATOR.join(part.replace(_FIELD_SEPARATOR, _JOIN) for part in parts)
    return normalize(joined)


def _score(text: str, terms: _Terms, *, use_gram_index: bool) -> int:
    # Terms that occur nowhere in the record cannot occur in a field: one scan of the
    # whole record settles most terms for most records.
    other = [t for t in terms.other if t in text]
    fields = text.split(_FIELD_SEPARATOR)
    if use_gram_index:
        return _score_with_grams(fields, terms, other)
    short = [t for t in terms.short_han if t in text]
    long_han = [t for t in terms.long_han if t in text]
    if not (short or long_han or other):
        return 0
    present = short + long_han + other
    score = 0
    for field_text, (_, weight) in zip(fields, FIELD_WEIGHTS, strict=True):
        score += weight * sum(1 for t in present if t in field_text)
    return score


def _score_with_grams(fields: list[str], terms: _Terms, other: list[str]) -> int:
    score = 0
    unigram_keys = terms.unigram_keys
    bigram_keys = terms.bigram_keys
    long_han = terms.long_han_keyed
    for field_text, (_, weight) in zip(fields, FIELD_WEIGHTS, strict=True):
        hits = sum(1 for t in other if t in field_text)
        # An ASCII field cannot contain a Han term; any other field is enumerated in full
        # (grams that are not Han are harmless: no Han term's key can equal them).
        if not field_text.isascii():
            # Set intersections in C: a short Han term occurs in the field exactly when it
            # is one of the field's unigrams or bigrams.
            unigrams, bigrams = _gram_keys(field_text)
            hits += len(unigram_keys.intersection(unigrams))
            hits += len(bigram_keys.intersection(bigrams))
            hits += sum(1 for key, t in long_han if key in bigrams and t in field_text)
        score += hits * weight
    return score


def score_metadata(metadata: dict[str, Any], terms: list[str]) -> int:
    """The recall score of one record's metadata for already-normalised ``terms``."""
    split = _Terms.split(terms)
    use_index = len(split.short_han) > _GRAM_INDEX_THRESHOLD
    return _score(searchable_text(metadata), split, use_gram_index=use_index)


def _result(
    workspace: common_paths.Workspace, stored: StoredRecord, score: int, cache: EvidenceRun
) -> dict[str, Any]:
    metadata = stored.parsed.metadata
    report = evidence_report(workspace, metadata["files"], cache)
    warnings: list[str] = []
    if stored.parsed.content_status != "consistent":
        warnings.append("contentStatus modified: the body differs from the metadata")
    if stored.parsed.unknown_keys:
        warnings.append(unknown_keys_warning(stored.id, stored.parsed.unknown_keys))
    moved = evidence_warning(stored.id, report)
    if moved is not None:
        warnings.append(moved)
    return {
        "id": stored.id,
        "title": metadata["title"],
        "tags": list(metadata["tags"]),
        "path": str(stored.path),
        "digest": stored.digest,
        "score": score,
        "summary": summary_of(metadata),
        "evidence": self_reported_evidence(metadata, bounded=True),
        **report,
        "contentStatus": stored.parsed.content_status,
        "warnings": warnings,
    }


def recall(
    workspace: str | os.PathLike[str],
    query: str,
    limit: int = LIMITS.default_limit,
    *,
    run: EvidenceRun | None = None,
) -> dict[str, Any]:
    """Rank the corpus's records for ``query``; ``{query, results, warnings, ...}``.

    The contract's six fields (docs/compatibility/compound.md) come first and keep their meaning
    (``truncated``: the scan stopped
    at the corpus limit). Two more say whether the answer is complete: ``total`` counts the
    scanned records that matched, before ``limit``; ``resultsTruncated`` is true when
    ``limit`` cut some of them off. When ``truncated`` is true, ``total`` is a lower bound.
    ``run`` carries the evidence comparisons (and their hashing budget) of a larger run.
    """
    text = validate_query(query)
    count = validate_limit(limit)
    selected = select_workspace(workspace)
    scan = scan_corpus(selected)
    terms = _Terms.split(recall_terms(text))
    use_index = len(terms.short_han) > _GRAM_INDEX_THRESHOLD
    scored: list[tuple[int, str, StoredRecord]] = []
    for stored in scan.records:
        score = _score(searchable_text(stored.parsed.metadata), terms, use_gram_index=use_index)
        if score > 0:
            scored.append((score, stored.id, stored))
    scored.sort(key=lambda item: (-item[0], item[1]))
    cache = run if run is not None else EvidenceRun()
    results = [_result(selected, stored, score, cache) for score, _, stored in scored[:count]]
    unverified = cache.warning()
    if unverified is not None:
        scan.warnings.add(unverified)
    return {
        "query": text,
        "results": results,
        "warnings": scan.warnings.as_list(),
        "retrievalMethod": RETRIEVAL_METHOD,
        "scanned": scan.scanned,
        "truncated": scan.truncated,
        "total": len(scored),
        "resultsTruncated": len(scored) > len(results),
    }
