"""The hybrid ranking goals, asserted on the bilingual evaluation so CI keeps them.

180 labelled engineering notes (90 English, 90 Chinese) as dsh-compound records, plus 100
distractors from compound's bench generator, ranked through the library with the real
bundled model (``bench/bench_hybrid_eval.py`` measures the full 500-record corpus and prints
every group). Goals: cross-lingual and paraphrased queries together top-3 >= 0.60, keyword
queries top-3 >= 0.90 with an MRR at least BM25's; lexical ranking stays what it was.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from dsh_compound import corpus_index

BENCH = Path(__file__).resolve().parents[1] / "bench" / "bench_hybrid_eval.py"


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location("compound_hybrid_eval", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_hybrid_meets_the_goals_on_the_bilingual_set(
    tmp_path: Path, home_with_weights: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench = _bench()
    data = bench.load_data()
    root = tmp_path / "eval"
    bench.build_workspace(root, data["items"], 100)
    monkeypatch.setattr(corpus_index, "SETTLED_NS", -(10**12))  # cache the fresh records
    result = bench.evaluate(root, data)
    assert result["records"] == 280
    measured = bench.goals(result["ranks"])
    assert measured["hybrid_xl_para_top3"] >= 0.60, measured
    assert measured["hybrid_mono_top3"] >= 0.90, measured
    assert measured["hybrid_mono_mrr"] >= measured["bm25_mono_mrr"], measured
    # Lexical ranking cannot cross languages: what hybrid adds is real.
    assert measured["lexical_xl_para_top3"] < 0.5, measured
