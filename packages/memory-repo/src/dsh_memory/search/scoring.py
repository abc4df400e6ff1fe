"""The ranking shared by the scan and the index: phrase and id tiers, BM25F, coverage.

Fields and query terms are those of :mod:`dsh_memory.search.terms` (normalised text, stems, Han
bigrams, glossary translations); the names are re-exported here.

Score of a record, the sum of its ``score_components``:

- ``phrase`` (:data:`PHRASE_WEIGHT`): the whole normalised query occurs contiguously in
  one field (word ends on word boundaries) - an exact phrase comes before records that only
  share its words unless their ``bm25`` is more than 1.0 higher;
- ``id`` (:data:`ID_WEIGHT`): the whole query occurs in the record id (``sec/redaction``,
  or ``chunks`` for ``old/chunks``) - the earlier tool's "id matches weigh most";
- ``bm25`` (:data:`BM25_WEIGHT`): BM25F (k1 1.2, b 0.75 against the record's length: all
  its fields, as textbook BM25F) over the fields id x2, tags x1.5, created_by/source_hash
  and body, plus the type (a label: not length-normalised), with each term's idf
  computed over the *corpus the search looks at*
  (every valid record of the scope's folders, expired ones included), normalised to 0-1
  by the query's maximum;
- ``coverage`` (:data:`COVERAGE_WEIGHT`): the idf-weighted share of the query's tokens the
  record matches (a Han token counts by the share of its bigrams), so a record sharing only
  some words still ranks, below the ones sharing all of them.

A token with translations contributes the better of its own terms and its translations to
``bm25`` and ``coverage``, never both; a translation scores at its weight with the idf of
the token it translates, and gathers candidates only within :data:`TRANSLATION_CANDIDATES`
(:func:`gathering_terms`).

Ties are broken by path (code point order). The scan and the index call the same
functions on the same normalised fields with the same statistics, so both give identical
results; :mod:`dsh_memory.search.search_index` only finds the candidates faster.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from dsh_memory.search.terms import (
    EXPANSION_WEIGHT,
    MAX_QUERY_TERMS,
    MIN_PREFIX_CHARS,
    QueryPlan,
    Term,
    is_han,
    normalize,
    plan_query,
    stem,
)
from dsh_memory.store import frontmatter
from dsh_memory.store.records import SCOPES, Record

__all__ = [
    "COMPONENTS",
    "EXPANSION_WEIGHT",
    "MAX_CANDIDATES",
    "MAX_QUERY_TERMS",
    "MAX_SEARCHABLE_BODY_CHARS",
    "MIN_PREFIX_CHARS",
    "TRANSLATION_CANDIDATES",
    "CorpusStats",
    "Match",
    "QueryPlan",
    "RecordText",
    "Scorer",
    "Term",
    "gathered_candidates",
    "gathering_terms",
    "haystack",
    "index_tokens",
    "is_han",
    "is_visible",
    "matches",
    "normalize",
    "plan_query",
    "rank",
    "ranked_matches",
    "record_text",
    "scan_stats",
    "score_components",
    "stem",
    "text_length",
]

#: Characters of a record body that are searchable (bounded work and index per record).
MAX_SEARCHABLE_BODY_CHARS = 20_000
#: Records gathered as candidates, rarest term first; later terms only score (see
#: :func:`gathering_terms`).
MAX_CANDIDATES = 5_000
#: Records gathered by glossary translations (see :func:`gathering_terms`).
TRANSLATION_CANDIDATES = 200

PHRASE_WEIGHT = 1.0
ID_WEIGHT = 1.0
BM25_WEIGHT = 2.0
COVERAGE_WEIGHT = 1.0
K1 = 1.2
B = 0.75
#: BM25F field weights, in :class:`RecordText` field order.
FIELD_WEIGHTS = (2.0, 1.5, 1.0, 1.0, 1.0)


class RecordText:
    """A record's normalised fields (id, tags, type, provenance, body), BM25 length."""

    __slots__ = ("fields", "head", "length")

    def __init__(self, fields: tuple[str, ...], length: int) -> None:
        self.fields = fields
        # The short fields joined: each starts and ends with a space, so no needle can
        # straddle two of them; one test here usually rules a term out of all four.
        self.head = "".join(fields[:-1])
        self.length = length


def record_text(record: Record) -> RecordText:
    fields = (
        normalize(record.scoring_id()),
        normalize(" ".join(record.tags)),
        normalize(record.type or ""),
        normalize(f"{record.created_by or ''} {record.source_hash or ''}"),
        normalize(record.body[:MAX_SEARCHABLE_BODY_CHARS]),
    )
    return RecordText(fields, text_length(fields))


def text_length(fields: Iterable[str]) -> int:
    """Words plus Han characters: the BM25 length (of all of a record's fields)."""
    total = 0
    for field in fields:
        for token in field.split():
            total += len(token) if is_han(token) else 1
    return total


def index_tokens(text: RecordText) -> set[str]:
    """What the term index holds for a record: its words, Han bigrams and the last Han
    character of each Han run.

    A term matches a record exactly when the index finds it: a word term is a token (or a
    token prefix), a Han bigram a bigram token, and a single Han character the tokens it
    starts (``"锁"*``): a character inside a run starts a bigram, the last one of a run is a
    token of its own. Every other character would be a second posting beside a bigram that
    already says the same (about a fifth of the index on dense Chinese).
    """
    tokens: set[str] = set()
    for field in text.fields:
        for token in field.split():
            if is_han(token):
                tokens.add(token[-1])
                tokens.update(token[i : i + 2] for i in range(len(token) - 1))
            else:
                tokens.add(token)
    return tokens


def matches(term: Term, text: RecordText) -> bool:
    needle = term.needle
    return needle in text.head or needle in text.fields[-1]


@dataclass(frozen=True)
class CorpusStats:
    """Valid records of the scope's folders: how many, average length, per-term counts."""

    count: int
    average_length: float
    document_frequency: dict[Term, int]

    def idf(self, term: Term) -> float:
        df = self.document_frequency.get(term, 0)
        return math.log(1 + (self.count - df + 0.5) / (df + 0.5))


def gathering_terms(plan: QueryPlan, df: dict[Term, int]) -> list[Term]:
    """The terms whose records become candidates: rarest first, up to MAX_CANDIDATES.

    The rarest matching term is always gathered; a later one only while the candidates
    (counted as the sum of document frequencies, a bound on their union) stay within
    MAX_CANDIDATES. Skipped, very common terms still score the gathered records.

    Glossary translations come after the query's own terms and within a budget of their own,
    :data:`TRANSLATION_CANDIDATES`: a translation is a weaker handle, so it may bring in a
    few records that share none of the query's words (a specific term's notes in the other
    language), never a common word's thousands - those would cost every query time and
    rank below the records in the query's language anyway. When none of the query's own
    terms matches, the rarest translation is gathered whatever its count.
    """
    ordered = sorted(
        (term for term in plan.terms if df.get(term, 0) > 0),
        key=lambda term: (term.translation, df[term], term.text, term.kind),
    )
    chosen: list[Term] = []
    total = 0
    translated = 0
    for term in ordered:
        if chosen and total + df[term] > MAX_CANDIDATES:
            continue
        if term.translation:
            if chosen and translated + df[term] > TRANSLATION_CANDIDATES:
                continue
            translated += df[term]
        chosen.append(term)
        total += df[term]
    return chosen


COMPONENTS = ("phrase", "id", "bm25", "coverage")
#: Shared empty per-token lists of a record with no translation (never written).
_NO_GROUPS: list[float] = []


class Scorer:
    """One query's scoring, with everything that does not depend on the record precomputed."""

    def __init__(self, plan: QueryPlan, stats: CorpusStats) -> None:
        self.phrase = plan.phrase
        own = [term for term in plan.terms if not term.translation]
        added = [term for term in plan.terms if term.translation]
        group_terms = [0] * plan.groups
        for term in own:
            group_terms[term.group] += 1
        # A group's coverage weight: the sum of its own terms' shares (a word's idf, a Han
        # token's mean bigram idf); its terms share it.
        possible = [0.0] * plan.groups
        for term in own:
            possible[term.group] += stats.idf(term) / group_terms[term.group]
        expanded = {term.group for term in added}
        # (needle, idf, coverage share, group or -1): the group only where a translation
        # may also cover it (the coverage of a group is the better of the two).
        self.items = [
            (
                term.needle,
                stats.idf(term),
                stats.idf(term) / group_terms[term.group],
                term.group if term.group in expanded else -1,
            )
            for term in own
        ]
        # Translations score at their weight, with the idf of the token they translate (its
        # mean over the token's own terms): how rare a concept is does not change with the
        # language a note uses, and a translation rarer in this memory must not outweigh
        # the query's own word. They never raise the maximum the bm25 part is normalised
        # by: an answer in the query's own words keeps the same scale.
        self.added = [
            (term.needle, term.weight * possible[term.group], term.group) for term in added
        ]
        self.added_share = {group: EXPANSION_WEIGHT * possible[group] for group in expanded}
        self.groups = plan.groups
        self.best = sum(idf for _needle, idf, _share, _group in self.items) * (K1 + 1)
        self.possible = sum(possible)
        self.average_length = stats.average_length or 1.0

    def components(self, text: RecordText) -> tuple[float, float, float, float]:
        """``(phrase, id, bm25, coverage)``, weighted: they sum to the score."""
        id_field, tags, kind, other, body = text.fields
        head = text.head
        # BM25F with one length normalisation: the weighted frequency over id, tags,
        # provenance and body is divided by the record's length (b = 0.75 of its length,
        # all fields, against the average), so a match in a short, focused note counts
        # more. The type is a category label, not text: a type match counts the same
        # everywhere (length-normalising it was measured better at scale but reorders the
        # records of one type by length, which the public evaluation's `procedure` query
        # shows is no better an answer than path order).
        length_norm = 1 - B + B * text.length / self.average_length
        k1 = K1
        k1_plus_one = K1 + 1
        bm25 = 0.0
        covered = 0.0
        # A token with translations scores the better of its own terms and its
        # translations, never both: a record that has the query's words gains nothing from
        # also having their translation (a bilingual note is not a better answer), a record
        # in the other language is still found.
        # Most candidates have no translation at all: they take the plain path, with no
        # per-token bookkeeping (two substring tests per translation).
        translated = (
            [item for item in self.added if item[0] in head or item[0] in body]
            if self.added
            else None
        )
        id_weight, tags_weight, type_weight, other_weight, body_weight = FIELD_WEIGHTS
        # Per token: its own terms' bm25 and coverage, against its translations' bm25 (only
        # kept for a record that has a translation).
        own_bm25 = own_cover = added_bm25 = _NO_GROUPS
        if translated:
            own_bm25 = [0.0] * self.groups
            own_cover = [0.0] * self.groups
            added_bm25 = [0.0] * self.groups
            for needle, idf, group in translated:
                added_bm25[group] += idf * _saturated(needle, text, length_norm)
        for needle, idf, share, group in self.items:
            # _saturated, inlined: this loop is most of a query's ranking time.
            in_head = needle in head
            body_hits = body.count(needle)
            if not in_head and not body_hits:
                continue
            frequency = body_weight * body_hits
            label = 0.0
            if in_head:
                frequency += (
                    id_weight * id_field.count(needle)
                    + tags_weight * tags.count(needle)
                    + other_weight * other.count(needle)
                )
                label = type_weight * kind.count(needle)
            frequency = frequency / length_norm + label
            saturated = frequency * k1_plus_one / (frequency + k1)
            covered += share
            if translated and group >= 0:
                own_bm25[group] += idf * saturated
                own_cover[group] += share
            else:
                bm25 += idf * saturated
        if translated:
            for group, share in self.added_share.items():
                bm25 += max(own_bm25[group], added_bm25[group])
                if added_bm25[group]:
                    covered += max(0.0, share - own_cover[group])
        phrase = self.phrase in head or self.phrase in body
        return (
            PHRASE_WEIGHT if phrase else 0.0,
            ID_WEIGHT if self.phrase in id_field else 0.0,
            round(BM25_WEIGHT * bm25 / self.best, 6) if self.best else 0.0,
            round(COVERAGE_WEIGHT * covered / self.possible, 6) if self.possible else 0.0,
        )


def _saturated(needle: str, text: RecordText, length_norm: float) -> float:
    """A term's BM25F frequency part, ``tf (k1 + 1) / (tf + k1)``, for a term the record has."""
    id_field, tags, kind, other, body = text.fields
    id_weight, tags_weight, type_weight, other_weight, body_weight = FIELD_WEIGHTS
    frequency = (
        id_weight * id_field.count(needle)
        + tags_weight * tags.count(needle)
        + other_weight * other.count(needle)
        + body_weight * body.count(needle)
    )
    frequency = frequency / length_norm + type_weight * kind.count(needle)
    return frequency * (K1 + 1) / (frequency + K1)


def score_components(plan: QueryPlan, text: RecordText, stats: CorpusStats) -> dict[str, float]:
    """The weighted components of a record's score, by name (they sum to the score)."""
    return dict(zip(COMPONENTS, Scorer(plan, stats).components(text), strict=True))


def is_visible(record: Record, scope: str, now: _dt.datetime) -> bool:
    """Valid, in scope and not expired: the records search and context may return."""
    if not record.valid or record.folder not in SCOPES[scope]:
        return False
    return not frontmatter.is_expired({"expires_at": record.expires_at}, now)


class Match(NamedTuple):
    """A ranked record (a named tuple: thousands are made per query, cheaply)."""

    record: Record
    score: float
    parts: tuple[float, float, float, float]

    @property
    def components(self) -> dict[str, float]:
        return dict(zip(COMPONENTS, self.parts, strict=True))


def rank(
    candidates: Sequence[tuple[Record, RecordText]],
    plan: QueryPlan,
    stats: CorpusStats,
    scope: str,
    now: _dt.datetime,
) -> list[Match]:
    """The visible ones of ``candidates`` (records matching a gathered term), best first.

    Sorted by score descending, then path (code point order).
    """
    scorer = Scorer(plan, stats)
    components = scorer.components
    folders = SCOPES[scope]
    found: list[tuple[float, str, Match]] = []
    for record, text in candidates:
        # is_visible, with the common case (no expiry) answered without a date parse.
        if not record.valid or record.folder not in folders:
            continue
        if record.expires_at is not None and not is_visible(record, scope, now):
            continue
        parts = components(text)
        score = round(sum(parts), 6)
        # Sorted as plain tuples (paths are unique, so a Match is never compared).
        found.append((-score, record.path, Match(record, score, parts)))
    found.sort()
    return [match for _score, _path, match in found]


def haystack(text: RecordText) -> str:
    """A record's searchable text as one string, for :func:`gathered_candidates`: the head,
    a NUL, the body. No needle holds a NUL, so a needle is in it exactly when
    :func:`matches` finds it in the head or the body."""
    return f"{text.head}\0{text.fields[-1]}"


def scan_stats(plan: QueryPlan, texts: Sequence[RecordText]) -> CorpusStats:
    """Corpus statistics computed from every valid record of the scope (the scan path)."""
    stats, _positions = gathered_candidates(
        plan, [haystack(text) for text in texts], sum(text.length for text in texts)
    )
    return stats


def ranked_matches(
    records: list[Record], plan: QueryPlan, scope: str, now: _dt.datetime
) -> list[Match]:
    """The scan: statistics over the valid records of the scope, gathering, :func:`rank`."""
    valid = [
        (record, record_text(record))
        for record in records
        if record.valid and record.folder in SCOPES[scope]
    ]
    stats, positions = gathered_candidates(
        plan,
        [haystack(text) for _record, text in valid],
        sum(text.length for _record, text in valid),
    )
    return rank([valid[position] for position in positions], plan, stats, scope, now)


def gathered_candidates(
    plan: QueryPlan, haystacks: Sequence[str], total_length: int
) -> tuple[CorpusStats, list[int]]:
    """The statistics over ``haystacks`` - the searchable text (:func:`haystack`) of every
    valid record of the scope's folders, ``total_length`` their summed BM25 length - and
    the positions of the candidates among them (records matching a gathered term), in order.

    The scan and an index without a term table both call this, so they agree by
    construction; the index then builds records and texts for the candidates only. The
    loops run in C (``map`` of ``str.__contains__``): a 1,000-character query is 32 terms
    over every record.
    """
    df = {
        term: sum(map(str.__contains__, haystacks, itertools.repeat(term.needle)))
        for term in plan.terms
    }
    count = len(haystacks)
    stats = CorpusStats(count, total_length / count if count else 0.0, df)
    found: set[int] = set()
    for term in gathering_terms(plan, df):
        hits = map(str.__contains__, haystacks, itertools.repeat(term.needle))
        found.update(itertools.compress(range(count), hits))
    return stats, sorted(found)
