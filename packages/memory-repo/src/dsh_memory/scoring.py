"""The ranking shared by the scan and the index: phrase and id tiers, BM25F, coverage.

Text model. Every field is *normalised* (:func:`normalize`): lowercased, split on runs of
characters that are not letters or numbers, with a break wherever Han characters meet other
letters, and written as ``" tok tok ... "`` (single spaces, one at each end). A word token
is a run of non-Han letters/numbers; a Han token is a run of Han characters.

Query terms (:func:`plan_query`), at most :data:`MAX_QUERY_TERMS` distinct ones, in order:

- a word of three or more characters after light English suffix stripping (:func:`stem`:
  ``chunks`` -> ``chunk``, ``scheduling`` -> ``schedul``) matches every record word that
  *starts with* the stem (``chunk``, ``chunked``, ``chunks``); a shorter word (``v2``, ``go``)
  matches that exact word only;
- a Han token of one character matches that character; a longer one contributes each of its
  distinct bigrams (``缓存雪崩`` -> 缓存, 存雪, 雪崩), each matching as a substring of a Han
  token - so "缓存雪崩预防" still finds "缓存雪崩的预防".

Score of a record, the sum of its ``score_components``:

- ``phrase`` (:data:`PHRASE_WEIGHT`): the whole normalised query occurs contiguously in
  one field (word ends on word boundaries) - an exact phrase comes before records that only
  share its words unless their ``bm25`` is more than 1.0 higher;
- ``id`` (:data:`ID_WEIGHT`): the whole query occurs in the record id (``sec/redaction``,
  or ``chunks`` for ``old/chunks``) - the spec's "id matches weigh most";
- ``bm25`` (:data:`BM25_WEIGHT`): BM25F (k1 1.2, b 0.75 against the record's length: all
  its fields, as textbook BM25F) over the fields id x2, tags x1.5, created_by/source_hash
  and body, plus the type (a label: not length-normalised), with each term's idf
  computed over the *corpus the search looks at*
  (every valid record of the scope's folders, expired ones included), normalised to 0-1
  by the query's maximum;
- ``coverage`` (:data:`COVERAGE_WEIGHT`): the idf-weighted share of the query's tokens the
  record matches (a Han token counts by the share of its bigrams), so a record sharing only
  some words still ranks, below the ones sharing all of them.

Ties are broken by path (code point order). The scan and the index call the same
functions on the same normalised fields with the same statistics, so both give identical
results; :mod:`dsh_memory.search_index` only finds the candidates faster.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from dsh_memory import frontmatter
from dsh_memory.records import SCOPES, Record

#: Distinct query terms used; the rest of a long query is ignored (bounded work per query).
MAX_QUERY_TERMS = 32
#: Characters of a record body that are searchable (bounded work and index per record).
MAX_SEARCHABLE_BODY_CHARS = 20_000
#: Records gathered as candidates, rarest term first; later terms only score (see
#: :func:`gathering_terms`).
MAX_CANDIDATES = 5_000
MIN_PREFIX_CHARS = 3

PHRASE_WEIGHT = 1.0
ID_WEIGHT = 1.0
BM25_WEIGHT = 2.0
COVERAGE_WEIGHT = 1.0
K1 = 1.2
B = 0.75
#: BM25F field weights, in :class:`RecordText` field order.
FIELD_WEIGHTS = (2.0, 1.5, 1.0, 1.0, 1.0)

_SPLIT = re.compile(r"[\W_]+")
_HAN_CHAR = "\u3007\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_HAN_BOUNDARY = re.compile(
    f"(?<=[{_HAN_CHAR}])(?=[^{_HAN_CHAR}])|(?<=[^{_HAN_CHAR}])(?=[{_HAN_CHAR}])"
)
_HAN = re.compile(f"[{_HAN_CHAR}]")
_SUFFIXES = (
    "ational",
    "ations",
    "ation",
    "ingly",
    "ings",
    "ing",
    "ments",
    "ment",
    "ness",
    "ies",
    "ied",
    "ers",
    "er",
    "ed",
    "es",
    "ly",
    "s",
)


def normalize(value: str) -> str:
    """``" tok tok "``: lowercased letter/number runs, Han runs split from other letters."""
    tokens = _SPLIT.split(_HAN_BOUNDARY.sub(" ", value.lower()))
    joined = " ".join(token for token in tokens if token)
    return f" {joined} " if joined else " "


def is_han(token: str) -> bool:
    return _HAN.match(token) is not None


def stem(word: str) -> str:
    """Light English suffix stripping; the stem keeps at least four characters."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


@dataclass(frozen=True)
class Term:
    text: str
    #: "prefix" (word start), "word" (whole word) or "han" (substring of a Han token).
    kind: str
    #: Index of the query token this term came from (for coverage).
    group: int

    @property
    def needle(self) -> str:
        """What the term looks for in a normalised field (fields start and end with a space)."""
        if self.kind == "prefix":
            return " " + self.text
        if self.kind == "word":
            return f" {self.text} "
        return self.text

    def count(self, field: str) -> int:
        return field.count(self.needle)


@dataclass(frozen=True)
class QueryPlan:
    phrase: str
    terms: tuple[Term, ...]
    groups: int


def plan_query(query: str) -> QueryPlan:
    tokens = normalize(query).split()
    terms: dict[tuple[str, str], Term] = {}
    for group, token in enumerate(tokens):
        if is_han(token):
            grams = (
                [token] if len(token) == 1 else [token[i : i + 2] for i in range(len(token) - 1)]
            )
            candidates = [Term(gram, "han", group) for gram in grams]
        else:
            base = stem(token)
            kind = "prefix" if len(base) >= MIN_PREFIX_CHARS else "word"
            candidates = [Term(base, kind, group)]
        for term in candidates:
            terms.setdefault((term.text, term.kind), term)
    capped = tuple(list(terms.values())[:MAX_QUERY_TERMS])
    left = "" if tokens and is_han(tokens[0]) else " "
    right = "" if tokens and is_han(tokens[-1]) else " "
    return QueryPlan(phrase=left + " ".join(tokens) + right, terms=capped, groups=len(tokens))


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
    """What the FTS index holds for a record: its words, Han characters and Han bigrams.

    A term matches a record exactly when the index finds it: a word term is a token (or a
    token prefix), a Han term a character or bigram token.
    """
    tokens: set[str] = set()
    for field in text.fields:
        for token in field.split():
            if is_han(token):
                tokens.update(token)
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
    """
    ordered = sorted(
        (term for term in plan.terms if df.get(term, 0) > 0),
        key=lambda term: (df[term], term.text, term.kind),
    )
    chosen: list[Term] = []
    total = 0
    for term in ordered:
        if chosen and total + df[term] > MAX_CANDIDATES:
            continue
        chosen.append(term)
        total += df[term]
    return chosen


COMPONENTS = ("phrase", "id", "bm25", "coverage")


class Scorer:
    """One query's scoring, with everything that does not depend on the record precomputed."""

    def __init__(self, plan: QueryPlan, stats: CorpusStats) -> None:
        self.phrase = plan.phrase
        group_terms = [0] * plan.groups
        for term in plan.terms:
            group_terms[term.group] += 1
        # (needle, idf, coverage share): a group's terms share its weight in the coverage.
        self.items = [
            (term.needle, stats.idf(term), stats.idf(term) / group_terms[term.group])
            for term in plan.terms
        ]
        self.best = sum(idf for _needle, idf, _share in self.items) * (K1 + 1)
        self.possible = sum(share for _needle, _idf, share in self.items)
        self.average_length = stats.average_length or 1.0

    def components(self, text: RecordText) -> tuple[float, float, float, float]:
        """``(phrase, id, bm25, coverage)``, weighted: they sum to the score."""
        id_field, tags, kind, other, body = text.fields
        head = text.head
        id_weight, tags_weight, type_weight, other_weight, body_weight = FIELD_WEIGHTS
        # BM25F with one length normalisation: the weighted frequency over id, tags,
        # provenance and body is divided by the record's length (b = 0.75 of its length,
        # all fields, against the average), so a match in a short, focused note counts
        # more. The type is a category label, not text: a type match counts the same
        # everywhere (length-normalising it was measured better at scale but reorders the
        # records of one type by length, which the public evaluation's `procedure` query
        # shows is no better an answer than path order).
        length_norm = 1 - B + B * text.length / self.average_length
        bm25 = 0.0
        covered = 0.0
        for needle, idf, share in self.items:
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
            bm25 += idf * frequency * (K1 + 1) / (frequency + K1)
            covered += share
        phrase = self.phrase in head or self.phrase in body
        return (
            PHRASE_WEIGHT if phrase else 0.0,
            ID_WEIGHT if self.phrase in id_field else 0.0,
            round(BM25_WEIGHT * bm25 / self.best, 6) if self.best else 0.0,
            round(COVERAGE_WEIGHT * covered / self.possible, 6) if self.possible else 0.0,
        )


def score_components(plan: QueryPlan, text: RecordText, stats: CorpusStats) -> dict[str, float]:
    """The weighted components of a record's score, by name (they sum to the score)."""
    return dict(zip(COMPONENTS, Scorer(plan, stats).components(text), strict=True))


def is_visible(record: Record, scope: str, now: _dt.datetime) -> bool:
    """Valid, in scope and not expired: the records search and context may return."""
    if not record.valid or record.folder not in SCOPES[scope]:
        return False
    return not frontmatter.is_expired({"expires_at": record.expires_at}, now)


@dataclass(frozen=True)
class Match:
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
    found = []
    for record, text in candidates:
        if not is_visible(record, scope, now):
            continue
        parts = scorer.components(text)
        found.append(Match(record, round(sum(parts), 6), parts))
    found.sort(key=lambda match: (-match.score, match.record.path))
    return found


def scan_stats(plan: QueryPlan, texts: Sequence[RecordText]) -> CorpusStats:
    """Corpus statistics computed from every valid record of the scope (the scan path)."""
    df = {term: sum(1 for text in texts if matches(term, text)) for term in plan.terms}
    total = sum(text.length for text in texts)
    return CorpusStats(len(texts), total / len(texts) if texts else 0.0, df)


def ranked_matches(
    records: list[Record], plan: QueryPlan, scope: str, now: _dt.datetime
) -> list[Match]:
    """The scan: statistics over the valid records of the scope, gathering, :func:`rank`."""
    valid = [
        (record, record_text(record))
        for record in records
        if record.valid and record.folder in SCOPES[scope]
    ]
    stats = scan_stats(plan, [text for _record, text in valid])
    gathered = gathering_terms(plan, stats.document_frequency)
    candidates = [
        (record, text) for record, text in valid if any(matches(t, text) for t in gathered)
    ]
    return rank(candidates, plan, stats, scope, now)
