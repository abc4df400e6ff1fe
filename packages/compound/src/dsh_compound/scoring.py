"""Recall's scoring: a query's terms and a record's score, as the contract defines them.

Terms are the ICU word segments of the original query plus every two-character n-gram of
each Chinese run, each NFKC-normalised and lowercased, at most 999 before de-duplication.
A term scores a field's weight when it is a substring of that field's normalised text:
title 8, tags 10, whenToUse 5, problem 3, rootCause 2, resolution 2, paths 1. Scores
measure lexical overlap, not semantic confidence.

:func:`score_text` scores one record's text by substring search. A long Chinese query
yields hundreds of one- and two-character Han terms; testing each with ``in`` against every
field would cost terms x characters, so when there are many, each field's unigrams and
bigrams are enumerated once - as UTF-32 machine integers, so no string is created per
position - and intersected with the term set in C. The two ways give the same score (a Han
term of at most two characters occurs in a text exactly when it is one of that text's
unigrams or bigrams); property tests check. The recall cache scores unchanged records from
an inverted index of the same grams instead (:mod:`dsh_compound.gram_index`), with the same
result.
"""

from __future__ import annotations

import sys

from dsh_common.text import han_bigrams, han_runs, normalize, segment_words
from dsh_compound.limits import LIMITS

# Not typing.TYPE_CHECKING: importing typing costs every agent hook ~2 ms of start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

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


# Above this many short Han terms, the gram-set intersection beats per-term ``in``.
GRAM_INDEX_THRESHOLD = 24
# Separators no term can contain (terms are word-like segments or Han n-grams).
JOIN = "\x00"
FIELD_SEPARATOR = "\x1e"


def recall_terms(query: str) -> list[str]:
    """The distinct normalised terms of ``query``, in first-seen order (<= 999 raw terms)."""
    raw = segment_words(query) + han_bigrams(query)
    normalized = [term for term in (normalize(t) for t in raw) if term]
    return list(dict.fromkeys(normalized[: LIMITS.query_terms]))


class Terms:
    """A query's distinct terms, grouped by how they are best searched."""

    __slots__ = (
        "_bigram_keys",
        "_long_han_keyed",
        "_unigram_keys",
        "all",
        "long_han",
        "other",
        "short_han",
    )

    def __init__(self, terms: list[str]) -> None:
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
        #: Every term, in first-seen order.
        self.all = tuple(terms)
        #: Han-only terms of one or two characters.
        self.short_han = frozenset(short)
        #: Han-only terms of three or more characters.
        self.long_han = tuple(long_han)
        #: Everything else (Latin words, digits, mixed).
        self.other = tuple(other)
        self._unigram_keys: frozenset[int] | None = None
        self._bigram_keys: frozenset[int] | None = None
        self._long_han_keyed: tuple[tuple[int, str], ...] | None = None

    @property
    def use_gram_sets(self) -> bool:
        """Whether :func:`score_text` should enumerate each field's grams (many short terms)."""
        return len(self.short_han) > GRAM_INDEX_THRESHOLD

    @property
    def unigram_keys(self) -> frozenset[int]:
        if self._unigram_keys is None:
            self._unigram_keys = frozenset(gram_key(t) for t in self.short_han if len(t) == 1)
        return self._unigram_keys

    @property
    def bigram_keys(self) -> frozenset[int]:
        if self._bigram_keys is None:
            self._bigram_keys = frozenset(gram_key(t) for t in self.short_han if len(t) == 2)
        return self._bigram_keys

    @property
    def long_han_keyed(self) -> tuple[tuple[int, str], ...]:
        if self._long_han_keyed is None:
            self._long_han_keyed = tuple((gram_key(t[:2]), t) for t in self.long_han)
        return self._long_han_keyed


# One code point per 4 bytes in the machine's byte order, so that memoryview.cast sees
# each character ("I") and each pair of neighbours ("Q") as one machine integer.
NATIVE_UTF32 = "utf-32-le" if sys.byteorder == "little" else "utf-32-be"


def gram_key(gram: str) -> int:
    """The integer a one- or two-character gram has in :func:`gram_keys` sets."""
    raw = memoryview(gram.encode(NATIVE_UTF32))
    return int(raw.cast("I")[0] if len(gram) == 1 else raw.cast("Q")[0])


def gram_keys(text: str) -> tuple[set[int], set[int]]:
    """Every character and every pair of neighbouring characters of ``text``, as integers.

    Encoding to UTF-32 and reinterpreting the bytes as 4- and 8-byte integers enumerates
    all unigrams and bigrams in C, without creating a string per position - about three
    times faster than slicing. Pairs at even offsets come from the whole buffer, pairs at
    odd offsets from the buffer shifted by one character. Non-Han grams are included and
    harmless: they can never equal a Han term's key.
    """
    raw = memoryview(text.encode(NATIVE_UTF32))
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
        JOIN.join(metadata["tags"]),
        metadata["whenToUse"],
        metadata["problem"],
        metadata["rootCause"],
        metadata["resolution"],
        JOIN.join(entry["path"] for entry in metadata["files"]),
    ]
    joined = FIELD_SEPARATOR.join(part.replace(FIELD_SEPARATOR, JOIN) for part in parts)
    return normalize(joined)


def score_text(text: str, terms: Terms, *, use_gram_index: bool | None = None) -> int:
    """The recall score of a record's :func:`searchable_text` for ``terms``.

    ``use_gram_index`` forces one way of matching short Han terms (tests compare both);
    by default :attr:`Terms.use_gram_sets` decides.
    """
    if use_gram_index is None:
        use_gram_index = terms.use_gram_sets
    # Terms that occur nowhere in the record cannot occur in a field: one scan of the
    # whole record settles most terms for most records.
    other = [t for t in terms.other if t in text]
    fields = text.split(FIELD_SEPARATOR)
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


def _score_with_grams(fields: list[str], terms: Terms, other: list[str]) -> int:
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
            unigrams, bigrams = gram_keys(field_text)
            hits += len(unigram_keys.intersection(unigrams))
            hits += len(bigram_keys.intersection(bigrams))
            hits += sum(1 for key, t in long_han if key in bigrams and t in field_text)
        score += hits * weight
    return score


def score_metadata(metadata: dict[str, Any], terms: list[str]) -> int:
    """The recall score of one record's metadata for already-normalised ``terms``."""
    return score_text(searchable_text(metadata), Terms(terms))
