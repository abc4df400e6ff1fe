"""The text model and a query's terms, shared by the scan, the index and the ranking.

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
  token - so "缓存雪崩预防" still finds "缓存雪崩的预防";
- then the glossary translations of the tokens (:mod:`dsh_memory.search.glossary`: ``cache`` ->
  缓存, 互斥锁 -> ``mutex``, ``lock``), at most :data:`glossary.MAX_EXPANSIONS` words, each a
  term (or the bigrams of a Chinese word, sharing its weight) of the token's group with the
  weight :data:`EXPANSION_WEIGHT`.

:mod:`dsh_memory.search.scoring` re-exports these names: it is where the rest of the package and
the index look them up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from dsh_memory.search import glossary

#: Distinct query terms used; the rest of a long query is ignored (bounded work per query).
MAX_QUERY_TERMS = 32
MIN_PREFIX_CHARS = 3
#: Weight of a glossary translation (:mod:`dsh_memory.search.glossary`) against the query's own
#: word: a record in the query's language ranks first, one in the other is still found.
EXPANSION_WEIGHT = 0.5

_SPLIT = re.compile(r"[\W_]+")
_HAN_CHAR = "\u3007\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
# One pattern for both jobs: every process that searches compiles it at import, and a Han
# class costs ~0.8 ms to compile (the lookaround boundary pattern this replaced cost ~3 ms,
# a second negated class ~1.5 ms more - a tenth of a search's start-up budget).
_HAN_RUN = re.compile(f"[{_HAN_CHAR}]+")
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
    # Spaces around each Han run split it from adjacent letters; empty tokens are dropped.
    tokens = _SPLIT.split(_HAN_RUN.sub(r" \g<0> ", value.lower()))
    joined = " ".join(token for token in tokens if token)
    return f" {joined} " if joined else " "


def is_han(token: str) -> bool:
    return _HAN_RUN.match(token) is not None


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
    #: 1.0 for the query's own words; a glossary translation's share of
    #: :data:`EXPANSION_WEIGHT` (see :func:`plan_query`).
    weight: float = 1.0
    #: Whether the term is a glossary translation of the token, not the token itself.
    translation: bool = False

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


def _token_terms(token: str, group: int) -> list[Term]:
    if is_han(token):
        grams = [token] if len(token) == 1 else [token[i : i + 2] for i in range(len(token) - 1)]
        return [Term(gram, "han", group) for gram in grams]
    base = stem(token)
    return [Term(base, "prefix" if len(base) >= MIN_PREFIX_CHARS else "word", group)]


def _covered(term: Term, terms: list[Term]) -> bool:
    """A prefix term whose matches a shorter prefix term already finds adds nothing."""
    return term.kind == "prefix" and any(
        other.kind == "prefix" and term.text.startswith(other.text) for other in terms
    )


def plan_query(query: str) -> QueryPlan:
    """The query's own terms, then the glossary translations of its tokens (see module doc)."""
    tokens = normalize(query).split()
    terms: dict[tuple[str, str], Term] = {}
    for group, token in enumerate(tokens):
        for term in _token_terms(token, group):
            terms.setdefault((term.text, term.kind), term)
    capped = list(terms.values())[:MAX_QUERY_TERMS]
    seen = set(terms)
    # Only tokens that kept a term of their own are translated (the cap bounds the query).
    kept = {term.group for term in capped}
    added = 0
    for group, token in enumerate(tokens):
        if group not in kept:
            continue
        for word in glossary.expansions(token, han=is_han(token), stem=stem):
            if added >= glossary.MAX_EXPANSIONS:
                break
            # A translation weighs as one word, however many bigrams it has (水位线 is one
            # word, not two matches): its terms share the weight.
            grams = _token_terms(word, group)
            fresh = [
                Term(term.text, term.kind, group, EXPANSION_WEIGHT / len(grams), translation=True)
                for term in grams
                if (term.text, term.kind) not in seen and not _covered(term, capped)
            ]
            if fresh:
                added += 1
            for term in fresh:
                seen.add((term.text, term.kind))
                capped.append(term)
    left = "" if tokens and is_han(tokens[0]) else " "
    right = "" if tokens and is_han(tokens[-1]) else " "
    return QueryPlan(
        phrase=left + " ".join(tokens) + right, terms=tuple(capped), groups=len(tokens)
    )
