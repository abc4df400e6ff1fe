"""The earlier tool's bilingual retrieval evaluation: top-3 stays at or above 0.9."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))
from bench_eval import evaluate, supplement_cases, write_corpus  # noqa: E402


@pytest.fixture(scope="module")
def eval_data() -> dict[str, object]:
    data: dict[str, object] = json.loads(
        (BENCH / "memory-retrieval-eval.json").read_text(encoding="utf-8")
    )
    return data


@pytest.mark.parametrize("mode", ["index", "scan"])
def test_eval_top3_rate_is_at_least_ninety_percent(
    tmp_path: Path, eval_data: dict[str, object], mode: str
) -> None:
    root = tmp_path / "memory"
    write_corpus(root, eval_data)
    report = evaluate(root, eval_data["queries"], mode=mode)  # type: ignore[arg-type]
    assert report["total"] == 52
    assert report["top3"] >= 0.9


def test_non_contiguous_chinese_queries_find_their_record(
    tmp_path: Path, eval_data: dict[str, object]
) -> None:
    root = tmp_path / "memory"
    write_corpus(root, eval_data)
    assert evaluate(root, supplement_cases(), mode="index")["top1"] == 1.0
    assert evaluate(root, supplement_cases(), mode="earlier")["top3"] == 0.0
