"""Hybrid ranking: a product's lexical ranking and cosine similarity, fused into one order.

The rule, chosen by measurement on a bilingual evaluation (``bench/bench_embedding_eval.py``
prints the comparison; docs/benchmarks.md keeps the table):

    score = z + LEXICAL_WEIGHT * lexical / best_lexical

- ``z`` is the document's cosine with the query, standardised among the documents *of its
  own language* (mean and standard deviation per language, shrunk towards the whole store's
  by :data:`LANGUAGE_PRIOR` pseudo-documents so that a language with a handful of documents
  does not get extreme values). A multilingual model scores a query closer to every text in
  the query's language than to an equally good answer in another; raw cosines therefore
  rank any same-language text above the cross-lingual answer, while within each language
  the answer stands out. Standardising per language lets it compete.
- ``lexical / best_lexical`` is the product's own lexical score as a share of the query's
  best lexical score (whatever its scale: compound's weighted hits, memory's BM25,
  knowledge's points), weighted by :data:`LEXICAL_WEIGHT`. It is a tiebreaker of
  weight half a standard deviation, not an equal vote: a Chinese query shares two-character
  grams such as "什么" or "多少" with many Chinese notes, and an equal vote (reciprocal-rank
  fusion measured 0.33 top-3 against 0.90 here) lets that noise bury the English answer.
- A document enters the ranking when it matched lexically or when its cosine is at least
  :data:`SEMANTIC_FLOOR` (below it, a semantic-only hit is noise on our data).

Order is deterministic: score rounded to :data:`SCORE_DECIMALS` places, then the lexical
rank (a lexical hit before a semantic-only one), then the key. Without a semantic channel
(no vectors, hybrid unavailable) the result is the lexical ranking, in its own order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from dsh_common.embedding.language import LANGUAGES
from dsh_common.embedding.vectors import InvalidVectorError, Matrix, cosine_scores

LEXICAL_WEIGHT: Final = 0.5
SEMANTIC_FLOOR: Final = 0.2
LANGUAGE_PRIOR: Final = 20
SCORE_DECIMALS: Final = 6
#: The smallest standard deviation used when standardising (a store of identical texts).
MIN_DEVIATION: Final = 0.01

_LANGUAGE_CODES = {language: code for code, language in enumerate(LANGUAGES)}
_NO_RANK = np.iinfo(np.int64).max


@dataclass(frozen=True)
class SemanticIndex:
    """The stored vectors a product ranks against: one row, key and language per document.

    Build it once per store load (:meth:`build`) and reuse it for every query of a
    long-lived process.
    """

    keys: tuple[str, ...]
    matrix: Matrix
    languages: tuple[str, ...]
    positions: Mapping[str, int]
    language_codes: np.ndarray[Any, np.dtype[np.int8]]

    @classmethod
    def build(cls, keys: Sequence[str], matrix: Matrix, languages: Sequence[str]) -> SemanticIndex:
        if not (len(keys) == len(languages) == matrix.shape[0]):
            raise InvalidVectorError("keys, languages and vectors must have one entry per row")
        if matrix.ndim != 2:
            raise InvalidVectorError("the vectors must form a two-dimensional matrix")
        positions = {key: row for row, key in enumerate(keys)}
        if len(positions) != len(keys):
            raise InvalidVectorError("keys must be unique")
        codes = np.array([_language_code(language) for language in languages], dtype=np.int8)
        return cls(tuple(keys), matrix, tuple(languages), positions, codes)

    def __len__(self) -> int:
        return len(self.keys)

    def cosines(self, query_vector: Any) -> Matrix:
        """The cosine of the query with every row."""
        return cosine_scores(self.matrix, query_vector)


def _language_code(language: str) -> int:
    code = _LANGUAGE_CODES.get(language)
    if code is None:
        raise InvalidVectorError(f"unknown document language {language!r}")
    return code


@dataclass(frozen=True)
class LexicalPart:
    """The lexical channel's share of a hit: the product's score, its rank and the points."""

    score: float
    rank: int
    share: float  # score / the query's best lexical score
    points: float  # LEXICAL_WEIGHT * share


@dataclass(frozen=True)
class SemanticPart:
    """The semantic channel's share of a hit: cosine, language and the standardised points."""

    cosine: float
    language: str
    z: float  # points: the cosine standardised among documents of `language`


@dataclass(frozen=True)
class FusedHit:
    key: str
    score: float
    lexical: LexicalPart | None
    semantic: SemanticPart | None
    #: The channels that matched: "lexical" for a lexical hit, "semantic" when the cosine
    #: reached SEMANTIC_FLOOR. A lexical hit below the floor still carries its semantic part.
    channels: tuple[str, ...]

    def explain(self) -> dict[str, Any]:
        """A JSON-ready account of the hit (numbers rounded as the score is)."""
        out: dict[str, Any] = {"score": self.score, "channels": list(self.channels)}
        if self.lexical is not None:
            out["lexical"] = {
                "score": self.lexical.score,
                "rank": self.lexical.rank,
                "share": _round(self.lexical.share),
                "points": _round(self.lexical.points),
            }
        if self.semantic is not None:
            out["semantic"] = {
                "cosine": _round(self.semantic.cosine),
                "language": self.semantic.language,
                "points": _round(self.semantic.z),
            }
        return out


def _round(value: float) -> float:
    rounded = round(value, SCORE_DECIMALS)
    return 0.0 if rounded == 0 else rounded  # no "-0.0" in JSON


def language_z_scores(
    cosines: Matrix, codes: np.ndarray[Any, Any], *, prior: float = LANGUAGE_PRIOR
) -> np.ndarray[Any, np.dtype[np.float64]]:
    """Each cosine standardised among the documents of its language (see the docstring)."""
    values = cosines.astype(np.float64)
    z = np.zeros(values.shape[0], dtype=np.float64)
    if values.shape[0] == 0:
        return z
    mean = float(values.mean())
    second = float((values * values).mean())
    for code in range(len(LANGUAGES)):
        mask = codes == code
        count = int(mask.sum())
        if count == 0:
            continue
        group = values[mask]
        group_mean = (float(group.sum()) + prior * mean) / (count + prior)
        group_second = (float((group * group).sum()) + prior * second) / (count + prior)
        deviation = math.sqrt(max(group_second - group_mean * group_mean, 0.0))
        z[mask] = (group - group_mean) / max(deviation, MIN_DEVIATION)
    return z


def fuse(
    lexical: Sequence[tuple[str, float]],
    index: SemanticIndex | None = None,
    cosines: Matrix | None = None,
    *,
    eligible: np.ndarray[Any, np.dtype[np.bool_]] | None = None,
    limit: int | None = None,
    lexical_weight: float = LEXICAL_WEIGHT,
    semantic_floor: float = SEMANTIC_FLOOR,
) -> list[FusedHit]:
    """Fuse a lexical ranking with the query's cosines over ``index``; best first.

    ``lexical`` is the product's ranking, best first, as ``(key, score)`` pairs with
    positive scores; its order is kept among equal fused scores. ``cosines`` are
    ``index.cosines(query_vector)``. ``eligible`` (one flag per index row) restricts the
    documents a semantic-only hit may come from, and the statistics, to those the query may
    see (scope, status, visibility); lexical hits are taken as eligible. ``limit`` keeps
    the first hits only.
    """
    if index is None or cosines is None or len(index) == 0:
        best = max((score for _, score in lexical), default=0.0)
        hits = []
        for rank, (key, score) in enumerate(lexical, start=1):
            share = score / best if best > 0 else 0.0
            part = LexicalPart(score, rank, share, lexical_weight * share)
            hits.append(FusedHit(key, _round(part.points), part, None, ("lexical",)))
        return hits if limit is None else hits[:limit]
    if cosines.shape != (len(index),):
        raise InvalidVectorError("one cosine per index row is needed")
    visible = np.ones(len(index), dtype=bool) if eligible is None else eligible.astype(bool)
    if visible.shape != (len(index),):
        raise InvalidVectorError("one eligibility flag per index row is needed")
    best_lexical = max((score for _, score in lexical), default=0.0)
    lexical_points = np.zeros(len(index), dtype=np.float64)
    lexical_rank = np.full(len(index), _NO_RANK, dtype=np.int64)
    lexical_rows: list[int] = []
    loose: list[FusedHit] = []  # lexical hits without a stored vector
    for rank, (key, score) in enumerate(lexical, start=1):
        row = index.positions.get(key)
        share = score / best_lexical if best_lexical > 0 else 0.0
        if row is None:
            part = LexicalPart(score, rank, share, lexical_weight * share)
            loose.append(FusedHit(key, _round(part.points), part, None, ("lexical",)))
            continue
        if lexical_rank[row] != _NO_RANK:
            continue  # a key listed twice keeps its first (better) rank
        lexical_rank[row] = rank
        lexical_points[row] = lexical_weight * share
        lexical_rows.append(row)
    stats = visible.copy()
    stats[lexical_rows] = True
    z = np.zeros(len(index), dtype=np.float64)
    z[stats] = language_z_scores(cosines[stats], index.language_codes[stats])
    candidates = visible & (cosines >= semantic_floor)
    candidates[lexical_rows] = True
    rows = np.nonzero(candidates)[0]
    scores = np.round(z[rows] + lexical_points[rows], SCORE_DECIMALS)
    # Keys as an array only for the candidates: the tie-break needs no more.
    candidate_keys = np.array([index.keys[row] for row in rows], dtype=str)
    order = np.lexsort((candidate_keys, lexical_rank[rows], -scores))
    keep = len(order) if limit is None else min(len(order), limit)
    context = _Context(
        index, cosines, z, lexical_rank, lexical_points, lexical, best_lexical, semantic_floor
    )
    hits = [context.hit(int(rows[i]), float(scores[i])) for i in order[:keep]]
    if loose:
        hits = sorted(
            [*hits, *loose],
            key=lambda hit: (-hit.score, hit.lexical.rank if hit.lexical else _NO_RANK, hit.key),
        )
    return hits if limit is None else hits[:limit]


@dataclass(frozen=True)
class _Context:
    """What turning one ranked row into a :class:`FusedHit` needs."""

    index: SemanticIndex
    cosines: Matrix
    z: np.ndarray[Any, Any]
    lexical_rank: np.ndarray[Any, Any]
    lexical_points: np.ndarray[Any, Any]
    lexical: Sequence[tuple[str, float]]
    best_lexical: float
    semantic_floor: float

    def hit(self, row: int, score: float) -> FusedHit:
        cosine = float(self.cosines[row])
        z = float(self.z[row])
        semantic = SemanticPart(cosine, self.index.languages[row], z)
        channels: list[str] = []
        lexical_part = None
        rank = int(self.lexical_rank[row])
        if rank != _NO_RANK:
            raw = self.lexical[rank - 1][1]
            share = raw / self.best_lexical if self.best_lexical > 0 else 0.0
            lexical_part = LexicalPart(raw, rank, share, float(self.lexical_points[row]))
            channels.append("lexical")
        if cosine >= self.semantic_floor:
            channels.append("semantic")
        total = 0.0 if score == 0 else score
        return FusedHit(self.index.keys[row], total, lexical_part, semantic, tuple(channels))
