"""Fusion of a lexical ranking with cosine similarity: properties and the bilingual case."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_common.embedding import fusion
from dsh_common.embedding.fusion import SemanticIndex, fuse, language_z_scores
from dsh_common.embedding.language import detect_language
from dsh_common.embedding.model import Encoder
from dsh_common.embedding.vectors import InvalidVectorError, normalize_rows
from dsh_common.text import query_terms


def _index(keys: list[str], languages: list[str] | None = None, seed: int = 0) -> SemanticIndex:
    rng = np.random.default_rng(seed)
    matrix = normalize_rows(rng.normal(size=(len(keys), 8)).astype(np.float32))
    return SemanticIndex.build(keys, matrix, languages or ["en"] * len(keys))


lexical_lists = st.lists(
    st.tuples(st.sampled_from([f"k{i}" for i in range(30)]), st.integers(1, 50)),
    max_size=20,
    unique_by=lambda pair: pair[0],
).map(lambda pairs: [(key, float(score)) for key, score in pairs])


@given(lexical_lists)
def test_without_a_semantic_channel_the_lexical_order_is_kept(
    lexical: list[tuple[str, float]],
) -> None:
    # Whatever order the product's lexical ranking has (its own tie-breaks included).
    hits = fuse(lexical)
    assert [h.key for h in hits] == [key for key, _ in lexical]
    assert all(h.channels == ("lexical",) and h.semantic is None for h in hits)
    assert [h.lexical.rank for h in hits if h.lexical] == list(range(1, len(lexical) + 1))
    assert [h.key for h in fuse(lexical, limit=3)] == [key for key, _ in lexical][:3]


@given(lexical_lists)
def test_uninformative_cosines_keep_the_lexical_order(lexical: list[tuple[str, float]]) -> None:
    # Every document equally similar: z is 0 everywhere, so only the lexical share and,
    # among equal shares, the lexical rank decide; documents no lexical hit names follow.
    keys = [f"k{i}" for i in range(30)]
    index = SemanticIndex.build(keys, normalize_rows(np.ones((30, 4), np.float32)), ["en"] * 30)
    cosines = np.full(30, 0.5, dtype=np.float32)
    hits = fuse(sorted(lexical, key=lambda p: -p[1]), index, cosines)
    expected = [key for key, _ in sorted(lexical, key=lambda p: -p[1])]
    assert [h.key for h in hits][: len(expected)] == expected
    assert {h.key for h in hits[len(expected) :]} == set(keys) - set(expected)
    assert [h.key for h in hits[len(expected) :]] == sorted(set(keys) - set(expected))


@settings(max_examples=50)
@given(st.lists(st.integers(0, 3), min_size=12, max_size=12), st.randoms(use_true_random=False))
def test_ties_are_broken_the_same_way_whatever_the_row_order(
    levels: list[int], rng: object
) -> None:
    keys = [f"doc-{i:02d}" for i in range(12)]
    cosines = np.array([0.2 + 0.1 * level for level in levels], dtype=np.float32)
    shuffled = list(range(12))
    rng.shuffle(shuffled)  # type: ignore[attr-defined]
    a = fuse([], _index(keys), cosines)
    b = fuse([], _index([keys[i] for i in shuffled]), cosines[shuffled])
    assert [(h.key, h.score) for h in a] == [(h.key, h.score) for h in b]
    scores = [h.score for h in a]
    assert scores == sorted(scores, reverse=True)
    for first, second in itertools.pairwise(a):
        if first.score == second.score:
            assert first.key < second.key


def test_same_language_bigram_noise_does_not_outrank_a_cross_lingual_answer(
    encoder: Encoder,
) -> None:
    # A Chinese question whose answer is an English note; Chinese notes share its everyday
    # two-character grams ("多少", "什么", "数据", "连接") and win every lexical ranking.
    notes = {
        "answer": "The production database pool allows at most 50 connections per cluster.",
        "noise-1": "这个月服务器的费用是多少？财务需要在周五前知道。",
        "noise-2": "我们用什么工具画架构图？大家投票决定用 draw.io。",
        "noise-3": "数据导出之前需要先在工单系统里申请审批。",
        "noise-4": "连接会议室的投影仪时先打开 HDMI 切换器。",
        "other-en": "Release notes are written in the changelog before tagging.",
    }
    query = "数据库连接池最多允许多少个连接"
    keys = list(notes)
    texts = list(notes.values())
    terms = set(query_terms(query))
    lexical_scores = {k: float(len(terms & set(query_terms(t)))) for k, t in notes.items()}
    lexical = sorted(
        ((k, s) for k, s in lexical_scores.items() if s > 0), key=lambda p: (-p[1], p[0])
    )
    assert lexical[0][0].startswith("noise") and "answer" not in dict(lexical)
    index = SemanticIndex.build(keys, encoder.encode(texts), [detect_language(t) for t in texts])
    cosines = index.cosines(encoder.encode([query])[0])
    hits = fuse(lexical, index, cosines)
    assert hits[0].key == "answer"
    assert hits[0].channels == ("semantic",) and hits[0].lexical is None
    explained = hits[0].explain()
    assert explained["semantic"]["language"] == "en" and "lexical" not in explained
    noisy = next(h for h in hits if h.key == lexical[0][0])
    assert "lexical" in noisy.channels and noisy.lexical is not None and noisy.lexical.rank == 1


def test_a_hit_explains_its_channels() -> None:
    keys = ["a", "b", "c"]
    index = _index(keys)
    cosines = np.array([0.9, 0.1, 0.5], dtype=np.float32)
    hits = {h.key: h for h in fuse([("b", 4.0), ("c", 2.0)], index, cosines)}
    assert set(hits) == {"a", "b", "c"}
    assert hits["a"].channels == ("semantic",)
    assert hits["b"].channels == ("lexical",)  # its cosine is below the floor
    assert hits["c"].channels == ("lexical", "semantic")
    c = hits["c"].explain()
    assert c["lexical"] == {"score": 2.0, "rank": 2, "share": 0.5, "points": 0.25}
    assert set(c["semantic"]) == {"cosine", "language", "points"}
    assert c["score"] == pytest.approx(c["semantic"]["points"] + 0.25, abs=2e-6)


def test_semantic_only_hits_need_the_floor_and_eligibility() -> None:
    keys = ["a", "b", "c", "d"]
    index = _index(keys)
    cosines = np.array([0.6, 0.19, 0.7, 0.05], dtype=np.float32)
    assert [h.key for h in fuse([], index, cosines)] == ["c", "a"]
    eligible = np.array([True, True, False, True])
    assert [h.key for h in fuse([], index, cosines, eligible=eligible)] == ["a"]
    # A lexical hit is shown even from an ineligible row (the product already filtered it).
    assert "c" in [h.key for h in fuse([("c", 1.0)], index, cosines, eligible=eligible)]


def test_lexical_hits_without_a_vector_are_kept() -> None:
    index = _index(["a", "b"])
    cosines = np.array([0.3, 0.3], dtype=np.float32)
    hits = fuse([("new", 10.0), ("a", 5.0)], index, cosines)
    assert [h.key for h in hits] == ["new", "a", "b"]
    assert hits[0].semantic is None and hits[0].channels == ("lexical",)
    assert [h.key for h in fuse([("new", 10.0), ("a", 5.0)], index, cosines, limit=1)] == ["new"]


def test_a_small_language_group_is_shrunk_towards_the_store() -> None:
    # Three Chinese notes among a hundred English ones: their own statistics alone would
    # give the best of three a z near 1.2 whatever its cosine.
    cosines = np.concatenate([np.linspace(0.1, 0.5, 100), [0.10, 0.15, 0.20]]).astype(np.float32)
    codes = np.array([1] * 100 + [0] * 3)
    z = language_z_scores(cosines, codes)
    assert z[-1] < 0  # still below the store's average
    unshrunk = language_z_scores(cosines, codes, prior=0)
    assert unshrunk[-1] > 1.0
    # A large group is barely moved by the prior.
    assert abs(z[50] - unshrunk[50]) < 0.05


def test_invalid_inputs_are_refused() -> None:
    with pytest.raises(InvalidVectorError):
        SemanticIndex.build(["a", "a"], np.zeros((2, 4), np.float32), ["en", "en"])
    with pytest.raises(InvalidVectorError):
        SemanticIndex.build(["a"], np.zeros((2, 4), np.float32), ["en"])
    with pytest.raises(InvalidVectorError):
        SemanticIndex.build(["a"], np.zeros((1, 4), np.float32), ["fr"])
    index = _index(["a", "b"])
    with pytest.raises(InvalidVectorError):
        fuse([], index, np.zeros(3, np.float32))
    with pytest.raises(InvalidVectorError):
        fuse([], index, np.zeros(2, np.float32), eligible=np.ones(3, bool))


def test_an_empty_index_falls_back_to_the_lexical_order() -> None:
    index = SemanticIndex.build([], np.zeros((0, 4), np.float32), [])
    hits = fuse([("x", 2.0), ("y", 3.0)], index, np.zeros(0, np.float32))
    assert [h.key for h in hits] == ["x", "y"]


def test_the_rule_is_the_documented_one() -> None:
    # score = z + LEXICAL_WEIGHT * share, rounded; checked against a direct computation.
    keys = [f"k{i}" for i in range(40)]
    index = _index(keys, ["en"] * 20 + ["zh"] * 20, seed=3)
    rng = np.random.default_rng(5)
    cosines = rng.uniform(0.0, 0.8, size=40).astype(np.float32)
    lexical = [("k3", 9.0), ("k25", 3.0), ("k7", 1.5)]
    z = language_z_scores(cosines, index.language_codes)
    hits = {h.key: h for h in fuse(lexical, index, cosines)}
    for key, score in lexical:
        row = index.positions[key]
        expected = z[row] + fusion.LEXICAL_WEIGHT * score / 9.0
        assert hits[key].score == pytest.approx(expected, abs=1e-6)
