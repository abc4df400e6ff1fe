"""Hybrid ranking of dsh-compound on the bilingual evaluation, beside lexical and BM25.

Data: ``packages/common/bench/data/bilingual-retrieval-eval.json`` - 180 engineering notes
(90 English, 90 Chinese, distinct topics) and 220 labelled queries: cross-lingual en->zh and
zh->en, paraphrases in each language, keyword queries in each language, and 20 questions
nothing answers. Each note becomes a real dsh-compound record (title; the note as the
problem; its kind as the tag; "-" for root cause, resolution and when to use), and
``--distractors N`` adds N records from compound's own bench generator (``bench/corpus.py``:
English and Chinese word salad over the same engineering vocabulary the queries use). A
workspace holds at most 500 records (the scan bound), so 320 distractors is the largest
corpus compound can rank; that is the default.

Rankings, all in one run, each through the library exactly as a user gets it:

- ``hybrid``: ``recall(..., ranking="hybrid")`` (vectors built first, as ``dsh-compound
  index`` does);
- ``lexical``: ``recall(...)``, the contract's ranking;
- ``bm25``: BM25 in pure Python over :func:`dsh_common.text.query_terms` of the same text
  the model encodes (:func:`dsh_compound.semantic.embedding_text`).

Each cell is top-1 / top-3 / MRR (reciprocal rank of the answer, 0 past rank 10).

    uv run python packages/compound/bench/bench_hybrid_eval.py [--distractors 320]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE.parents[1] / "common" / "bench" / "data" / "bilingual-retrieval-eval.json"
GROUPS = ("xl_en2zh", "xl_zh2en", "para_en", "para_zh", "mono_en", "mono_zh")
HYBRID_GROUPS = ("xl_en2zh", "xl_zh2en", "para_en", "para_zh")
MONO_GROUPS = ("mono_en", "mono_zh")
DEPTH = 10
CORPUS_BOUND = 500
STAMP = "2026-11-30T12:00:00.000Z"


def _bench_corpus() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("compound_bench_corpus", HERE / "corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_data() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))
    return data


def build_workspace(root: Path, items: list[dict[str, Any]], distractors: int) -> None:
    """A workspace whose corpus holds ``items`` as records and ``distractors`` more."""
    from dsh_compound.limits import CORPUS_DIRECTORY
    from dsh_compound.record import build_metadata, render_record, sha256

    corpus = _bench_corpus()
    rng = random.Random(17)
    sources = corpus.write_sources(root, rng)
    directory = root.joinpath(*CORPUS_DIRECTORY.split("/"))
    directory.mkdir(parents=True, exist_ok=True)
    drafts = []
    for item in items:
        drafts.append(
            {
                "id": f"eval-{item['id']}",
                "title": item["title"],
                "tags": [item["kind"]],
                "problem": item["text"],
                "rootCause": "-",
                "resolution": "-",
                "whenToUse": "-",
                "verification": {"command": "-", "result": "-"},
                "files": [sources[0]],
            }
        )
    for index in range(distractors):
        draft = corpus.make_draft(random.Random(1000 + index), index, sources, rng.randint(1, 3))
        draft["id"] = f"noise-{index:04d}-{draft['id'].rsplit('-', 1)[-1]}"
        drafts.append(draft)
    for draft in drafts:
        digests = [sha256((root / path).read_bytes()) for path in draft["files"]]
        metadata = build_metadata(draft, digests, created_at=STAMP, updated_at=STAMP)
        (directory / f"{draft['id']}.md").write_bytes(render_record(metadata))


class Bm25:
    """BM25 (k1 1.2, b 0.75) over :func:`dsh_common.text.query_terms`, in pure Python."""

    def __init__(self, texts: dict[str, str], k1: float = 1.2, b: float = 0.75) -> None:
        from dsh_common.text import query_terms

        self.terms = query_terms
        self.docs = {key: Counter(query_terms(text, dedupe=False)) for key, text in texts.items()}
        self.lengths = {key: sum(doc.values()) for key, doc in self.docs.items()}
        self.average = sum(self.lengths.values()) / max(1, len(self.docs))
        self.postings: dict[str, list[tuple[str, int]]] = {}
        for key, doc in self.docs.items():
            for term, count in doc.items():
                self.postings.setdefault(term, []).append((key, count))
        self.k1, self.b = k1, b

    def ranking(self, query: str) -> list[str]:
        scores: dict[str, float] = {}
        total = len(self.docs)
        for term in self.terms(query):
            postings = self.postings.get(term, [])
            if not postings:
                continue
            idf = math.log(1 + (total - len(postings) + 0.5) / (len(postings) + 0.5))
            for key, count in postings:
                norm = self.k1 * (1 - self.b + self.b * self.lengths[key] / self.average)
                scores[key] = scores.get(key, 0.0) + idf * count * (self.k1 + 1) / (count + norm)
        return sorted(scores, key=lambda key: (-round(scores[key], 9), key))[:DEPTH]


def rank_of(ranking: list[str], relevant: set[str]) -> int | None:
    return next((p for p, key in enumerate(ranking[:DEPTH], 1) if key in relevant), None)


def summarise(ranks: list[int | None]) -> tuple[float, float, float]:
    n = max(1, len(ranks))
    top1 = sum(1 for r in ranks if r == 1) / n
    top3 = sum(1 for r in ranks if r is not None and r <= 3) / n
    mrr = sum(1 / r for r in ranks if r is not None) / n
    return top1, top3, mrr


def evaluate(root: Path, data: dict[str, Any]) -> dict[str, Any]:
    """Every ranking's rank of each answerable query's answer, by group, plus timings."""
    from dsh_common.paths import resolve_workspace
    from dsh_compound import recall
    from dsh_compound.corpus_index import read_corpus
    from dsh_compound.indexing import build_index
    from dsh_compound.semantic import embedding_text

    started = time.perf_counter()
    built = build_index(root)
    build_seconds = time.perf_counter() - started
    view = read_corpus(resolve_workspace(root))
    bm25 = Bm25({record.id: embedding_text(record.metadata) for record in view.records})
    ranks: dict[str, dict[str, list[int | None]]] = {
        name: {group: [] for group in GROUPS} for name in ("hybrid", "lexical", "bm25")
    }
    semantic_only_none = 0
    cpu = {"hybrid": 0.0, "lexical": 0.0}
    for query in data["queries"]:
        results = {}
        for name in ("hybrid", "lexical"):
            started = time.process_time()
            found = recall(root, query["text"][:500], 10, ranking=name)
            cpu[name] += time.process_time() - started
            results[name] = found
        if not query["relevant"]:
            top = results["hybrid"]["results"][:3]
            semantic_only_none += any(hit["hybrid"]["channels"] == ["semantic"] for hit in top)
            continue
        relevant = {f"eval-{key}" for key in query["relevant"]}
        for name in ("hybrid", "lexical"):
            ids = [hit["id"] for hit in results[name]["results"]]
            ranks[name][query["group"]].append(rank_of(ids, relevant))
        ranks["bm25"][query["group"]].append(rank_of(bm25.ranking(query["text"]), relevant))
    answered = sum(1 for query in data["queries"] if query["relevant"])
    return {
        "records": len(view.records),
        "ranks": ranks,
        "semantic_only_none": semantic_only_none,
        "none": len(data["queries"]) - answered,
        "vectors": built["vectors"],
        "build_seconds": build_seconds,
        "cpu_ms_per_query": {name: 1000 * cpu[name] / len(data["queries"]) for name in cpu},
    }


def goals(ranks: dict[str, dict[str, list[int | None]]]) -> dict[str, float]:
    """The measures the goals are stated in."""

    def pooled(name: str, groups: tuple[str, ...]) -> list[int | None]:
        return [r for g in groups for r in ranks[name][g]]

    return {
        "hybrid_xl_para_top3": summarise(pooled("hybrid", HYBRID_GROUPS))[1],
        "hybrid_mono_top3": summarise(pooled("hybrid", MONO_GROUPS))[1],
        "hybrid_mono_mrr": summarise(pooled("hybrid", MONO_GROUPS))[2],
        "bm25_mono_mrr": summarise(pooled("bm25", MONO_GROUPS))[2],
        "lexical_xl_para_top3": summarise(pooled("lexical", HYBRID_GROUPS))[1],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--distractors", type=int, default=CORPUS_BOUND - 180)
    options = parser.parse_args()
    data = load_data()
    items = list(data["items"])
    if len(items) + options.distractors > CORPUS_BOUND:
        raise SystemExit(f"a workspace ranks at most {CORPUS_BOUND} records (the scan bound)")
    with tempfile.TemporaryDirectory(prefix="dsh-compound-eval-") as temp:
        base = Path(temp)
        os.environ["DSH_HOME"] = str(base / "home")
        root = base / "ws"
        build_workspace(root, items, options.distractors)
        time.sleep(3.5)  # records are cached once their change time has settled
        result = evaluate(root, data)
    ranks = result["ranks"]
    answerable = sum(len(v) for v in ranks["hybrid"].values())
    encoded = result["vectors"]["encoded"]
    print(
        f"\n{len(items)} labelled items + {options.distractors} distractors = "
        f"{result['records']} records (the scan bound is {CORPUS_BOUND}); {answerable} "
        f"answerable queries; vectors: {encoded} encoded in "
        f"{result['build_seconds']:.1f} s\n"
    )
    print(
        f"| ranking | {' | '.join(GROUPS)} | cross-lingual + paraphrase top-3 | "
        "keyword top-3 / MRR |"
    )
    print("|---|" + "---:|" * (len(GROUPS) + 2))
    for name in ("bm25", "lexical", "hybrid"):
        cells = []
        for group in GROUPS:
            top1, top3, mrr = summarise(ranks[name][group])
            cells.append(f"{top1:.2f} / {top3:.2f} / {mrr:.2f}")
        pooled = [r for g in HYBRID_GROUPS for r in ranks[name][g]]
        mono = [r for g in MONO_GROUPS for r in ranks[name][g]]
        print(
            f"| {name} | {' | '.join(cells)} | {summarise(pooled)[1]:.2f} | "
            f"{summarise(mono)[1]:.2f} / {summarise(mono)[2]:.2f} |"
        )
    measured = goals(ranks)
    print(
        f"\nno-answer questions whose hybrid top 3 holds a semantic-only hit: "
        f"{result['semantic_only_none']} of {result['none']}"
    )
    per_query = result["cpu_ms_per_query"]
    print(
        f"library recall, CPU per query (all 220, this process): hybrid "
        f"{per_query['hybrid']:.1f} ms, lexical {per_query['lexical']:.1f} ms"
    )
    print()
    checks = [
        ("hybrid cross-lingual + paraphrase top-3", measured["hybrid_xl_para_top3"], 0.60),
        ("hybrid keyword top-3", measured["hybrid_mono_top3"], 0.90),
        ("hybrid keyword MRR vs BM25's", measured["hybrid_mono_mrr"], measured["bm25_mono_mrr"]),
    ]
    for label, value, target in checks:
        print(
            f"- {label}: {value:.3f} (target >= {target:.3f}): "
            f"{'PASS' if value >= target else 'FAIL'}"
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
