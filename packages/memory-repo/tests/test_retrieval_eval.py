"""The bilingual retrieval evaluation: the public set, and at scale beside grep and BM25."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))
from bench_eval import evaluate, supplement_cases, write_corpus  # noqa: E402
from bench_eval_scale import build, evaluate_scale  # noqa: E402
from eval_corpus import PARAPHRASES  # noqa: E402

#: A smaller memory than the 2,000-record run of docs/benchmarks.md ("Retrieval at scale"),
#: so the test stays fast; the thresholds are the goals that run meets too
#: (bench/bench_eval_scale.py).
SCALE_DISTRACTORS = 800
#: The issue's targets, on the realistic variant: top-3 overall and for English alone
#: (measured 0.942 and 0.914 at 800 and at 2,000 records), and MRR at least BM25's.
REALISTIC_TOP3 = 0.90
REALISTIC_EN_TOP3 = 0.90
#: The hard variant (the labelled topics are also distractor topics; measured 0.885 at 800).
HARD_TOP3 = 0.85
#: The issue's target for queries worded differently from their record.
PARAPHRASED_TOP3 = 0.40
#: The evaluation's queries written in the other language than their record's text: the
#: public ``cache eviction policy`` (an English query for a Chinese note) and our
#: paraphrases H7 (Chinese, for the English release checklist) and H8 (Chinese, for the
#: English note on the deprecated lock).
CROSS_LANGUAGE = ("37", "H7", "H8")


@pytest.fixture(scope="module")
def eval_data() -> dict[str, object]:
    data: dict[str, object] = json.loads(
        (BENCH / "memory-retrieval-eval.json").read_text(encoding="utf-8")
    )
    return data


@pytest.mark.parametrize("mode", ["index", "scan"])
def test_eval_top3_rate_is_perfect(tmp_path: Path, eval_data: dict[str, object], mode: str) -> None:
    root = tmp_path / "memory"
    write_corpus(root, eval_data)
    report = evaluate(root, eval_data["queries"], mode=mode)  # type: ignore[arg-type]
    assert report["total"] == 52
    assert report["top3"] == 1.0


def test_non_contiguous_chinese_queries_find_their_record(
    tmp_path: Path, eval_data: dict[str, object]
) -> None:
    root = tmp_path / "memory"
    write_corpus(root, eval_data)
    assert evaluate(root, supplement_cases(), mode="index")["top1"] == 1.0
    assert evaluate(root, supplement_cases(), mode="earlier")["top3"] == 0.0


@pytest.fixture(scope="module", params=["realistic", "hard"])
def memory_at_scale(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[str, Any], str]:
    """The public records among SCALE_DISTRACTORS generated ones (bench/eval_corpus.py)."""
    variant: str = request.param
    root = tmp_path_factory.mktemp(f"scale-{variant}") / "memory"
    data = build(root, SCALE_DISTRACTORS, variant=variant)
    return root, data, variant


def test_ranking_at_scale_beats_bm25_and_grep_on_the_public_queries(
    memory_at_scale: tuple[Path, dict[str, Any], str],
) -> None:
    root, data, variant = memory_at_scale
    report = evaluate_scale(root, data["queries"])
    ours, bm25, grep = report["dsh-memory"], report["bm25"], report["grep"]
    assert report["mismatches"] == []  # index and scan rank identically
    # MRR at least BM25's, overall and in each language, on both variants.
    for group in ("all", "en", "zh"):
        assert ours[group]["mrr"] >= bm25[group]["mrr"], group
    if variant == "realistic":
        assert ours["all"]["top3"] >= REALISTIC_TOP3
        assert ours["en"]["top3"] >= REALISTIC_EN_TOP3
    else:
        assert ours["all"]["top3"] >= HARD_TOP3
        assert ours["en"]["top3"] >= HARD_TOP3
    assert ours["all"]["top3"] >= bm25["all"]["top3"]
    assert ours["all"]["mrr"] > grep["all"]["mrr"]


def test_paraphrased_queries_at_scale_find_their_record(
    memory_at_scale: tuple[Path, dict[str, Any], str],
) -> None:
    root, _data, _variant = memory_at_scale
    report = evaluate_scale(root, PARAPHRASES)
    assert report["mismatches"] == []
    ours = report["dsh-memory"]["all"]
    assert ours["top3"] >= PARAPHRASED_TOP3
    assert ours["mrr"] >= report["bm25"]["all"]["mrr"]
    assert ours["mrr"] >= report["grep"]["all"]["mrr"]


def test_cross_language_queries_find_their_record_at_scale(
    memory_at_scale: tuple[Path, dict[str, Any], str],
) -> None:
    """Queries in the other language than their record's text: only a translation links them."""
    root, data, _variant = memory_at_scale
    cases = [case for case in [*data["queries"], *PARAPHRASES] if str(case["n"]) in CROSS_LANGUAGE]
    assert len(cases) == len(CROSS_LANGUAGE)
    report = evaluate_scale(root, cases)
    assert report["mismatches"] == []
    # Each is found among the first three (the English one by its Chinese body), where
    # neither BM25 nor grep finds any of them there.
    assert report["dsh-memory"]["all"]["top3"] == 1.0
    assert report["bm25"]["all"]["top3"] == 0.0


def test_generator_variants_differ_only_in_what_distractors_are_about() -> None:
    from eval_corpus import (
        GENERIC_EN,
        GENERIC_ZH,
        LABELLED_TOPICS,
        SHARED_EN,
        SHARED_ZH,
        SUBSYSTEMS_EN,
        SUBSYSTEMS_ZH,
        distractor_records,
    )

    labelled = {SUBSYSTEMS_EN[i].split()[0] for i in LABELLED_TOPICS}
    labelled |= {SUBSYSTEMS_ZH[i] for i in LABELLED_TOPICS}
    # Words only the queries' vocabulary has (a few, like restart or 配置, are everyday too).
    shared = set(SHARED_EN) | set(SHARED_ZH)
    shared -= set(GENERIC_EN) | set(GENERIC_ZH)
    realistic = distractor_records(400, 7, variant="realistic")
    hard = distractor_records(400, 7, variant="hard")
    # Tags are [subsystem, topic word]: the realistic notes are about other subsystems and
    # are not named by a query word, yet still say the queries' words in their text.
    assert not any(record["tags"][0] in labelled for record in realistic)
    assert not any(tag in shared for record in realistic for tag in record["tags"][1:])
    assert any(word in record["body"] for record in realistic for word in shared)
    assert any(record["tags"][0] in labelled for record in hard)
    with pytest.raises(ValueError, match="variant"):
        distractor_records(1, variant="easy")
