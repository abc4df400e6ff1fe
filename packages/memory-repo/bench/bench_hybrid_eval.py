"""Hybrid ranking on a bilingual memory at scale, beside lexical ranking and BM25, and what it
costs.

Quality (always): the bilingual evaluation (:mod:`hybrid_eval`: 180 items, 220 labelled
queries) among ``--distractors`` realistic memory notes (default 2,000: 2,180 records),
every query through dsh-memory's lexical ranking, its hybrid ranking and a textbook BM25 in
pure Python over the same records, in the same run; top-1 / top-3 / MRR per group. Then
memory's own evaluation at scale (``bench_eval_scale``: the public 52 queries and our 33
paraphrases among 2,000 realistic distractors, all in one language each) in both rankings
beside BM25: the monolingual queries hybrid ranking must not spoil.

Cost (``--cost N``, default off; 10,000 is the goal's size): a memory of the 180 items and
N - 180 distractors; the vectors built by ``dsh-memory vectors`` in a process pinned to one
core (time, peak RSS, store size); then, at rest and with one core busy, a long-lived
process's search in both rankings (the hybrid one's extra per query), and whole processes:
``dsh-memory search`` in both rankings, the session-start hook with and without
``DSH_RANKING=hybrid``, beside ``python -c pass``.

    uv run python packages/memory-repo/bench/bench_hybrid_eval.py [--distractors 2000]
    uv run python packages/memory-repo/bench/bench_hybrid_eval.py --cost 10000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import hybrid_eval
from baselines import CONDITIONS, Bm25Index, cell, condition, load, median, python_pass, timed
from bench_eval_scale import _score, build
from eval_corpus import PARAPHRASES

from dsh_memory.search.search import search
from dsh_memory.store.records import load_record, walk_payload

BIN = Path(sys.executable).parent
RANKINGS = ("dsh-memory lexical", "dsh-memory hybrid", "BM25 (pure Python)")


def _bm25(root: Path) -> Bm25Index:
    loaded = (load_record(root, entry) for entry in walk_payload(root))
    records = [record for record in loaded if record is not None and record.valid]
    return Bm25Index([r.path for r in records], (r.searchable() for r in records))


def _paths(root: Path, query: str, scope: str, ranking: str) -> list[str]:
    value = search(root, query, 10, scope, ranking=ranking)
    return [result["path"] for result in value["results"]]


def bilingual(distractors: int) -> None:
    data = hybrid_eval.load_data()
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory) / "memory"
        count = hybrid_eval.write_memory(root, data, distractors)
        start = time.perf_counter()
        assert search(root, "warm", ranking="hybrid")["retrieval"]["ranking"] == "hybrid"
        built = time.perf_counter() - start
        bm25 = _bm25(root)
        rankers = {
            RANKINGS[0]: lambda q: _paths(root, q, "all", "lexical"),
            RANKINGS[1]: lambda q: _paths(root, q, "all", "hybrid"),
            RANKINGS[2]: lambda q: bm25.top(q, 10),
        }
        reports = {name: hybrid_eval.score(data["queries"], rank) for name, rank in rankers.items()}
        none = {
            name: hybrid_eval.unanswered(data["queries"], rank) for name, rank in rankers.items()
        }
    print(f"\nBilingual evaluation, {count:,} records (vectors built in {built:.1f} s).")
    print("Top-1 / top-3 / MRR:\n")
    groups = [*hybrid_eval.GROUPS, "cross-lingual + paraphrase", "keyword"]
    print("| ranking | " + " | ".join(groups) + " | no answer: results |")
    print("|---|" + "---:|" * (len(groups) + 1))
    for name, report in reports.items():
        cells = " | ".join(
            f"{report[g]['top1']:.2f} / {report[g]['top3']:.2f} / {report[g]['mrr']:.2f}"
            for g in groups
        )
        print(f"| {name} | {cells} | {none[name][1]} of {none[name][0]} |")


def memory_scale(distractors: int) -> None:
    """The public 52 queries and our paraphrases, realistic distractors: both rankings."""
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory) / "memory"
        data = build(root, distractors, seed=2026, shared_rate=0.1, variant="realistic")
        bm25 = {scope: _scoped_bm25(root, scope) for scope in ("active", "archive", "all")}
        print(
            f"\nMemory's own evaluation at scale ({distractors:,} realistic distractors,"
            " shared-word rate 0.1, seed 2026):"
        )
        for title, cases in (
            ("public 52 queries", data["queries"]),
            ("our 33 paraphrases", PARAPHRASES),
        ):
            rankings = {
                RANKINGS[0]: [_paths(root, c["query"], c["scope"], "lexical") for c in cases],
                RANKINGS[1]: [_paths(root, c["query"], c["scope"], "hybrid") for c in cases],
                RANKINGS[2]: [bm25[c["scope"]].top(c["query"], 10) for c in cases],
            }
            print(f"\n{title}:\n")
            print("| ranking | top-1 | top-3 | MRR | en top-3 | en MRR | zh top-3 | zh MRR |")
            print("|---|---:|---:|---:|---:|---:|---:|---:|")
            for name, ranked in rankings.items():
                report = _score(cases, ranked)
                a, en, zh = report["all"], report["en"], report["zh"]
                print(
                    f"| {name} | {a['top1']:.3f} | {a['top3']:.3f} | {a['mrr']:.3f} |"
                    f" {en['top3']:.3f} | {en['mrr']:.3f} | {zh['top3']:.3f} | {zh['mrr']:.3f} |"
                )


def _scoped_bm25(root: Path, scope: str) -> Bm25Index:
    from dsh_memory.store.records import SCOPES

    loaded = (load_record(root, entry) for entry in walk_payload(root, SCOPES[scope]))
    records = [record for record in loaded if record is not None and record.valid]
    return Bm25Index([r.path for r in records], (r.searchable() for r in records))


_ONE_CORE_BUILD = """
import json, os, resource, sys, time
from pathlib import Path
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
from dsh_memory.search import index_update
from dsh_memory.search.hybrid import build_vectors
root = Path(sys.argv[1])
index_update.refresh_index(root)
start = time.perf_counter()
value = build_vectors(root)
elapsed = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({**value, "seconds": elapsed, "peak_mib": peak}))
"""


def cost(records: int, runs: int) -> None:
    data = hybrid_eval.load_data()
    queries = [q["text"] for q in data["queries"] if q["group"] != "none"][::4]
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory) / "memory"
        hybrid_eval.write_memory(root, data, records - len(data["items"]))
        # A real memory root: a git repository with its records committed (the command
        # line inspects its layout before it searches).
        identity = ["-c", "user.name=Bench", "-c", "user.email=bench@example.com"]
        for args in (
            ["init", "-q", "-b", "main"],
            ["add", "-A"],
            [*identity, "commit", "-qm", "corpus"],
        ):
            subprocess.run(["git", "-C", str(root), *args], check=True)
        done = subprocess.run(
            [sys.executable, "-c", _ONE_CORE_BUILD, str(root)],
            check=True,
            capture_output=True,
            text=True,
        )
        built = json.loads(done.stdout)
        print(
            f"\nVectors for {records:,} records on one core: {built['encoded']:,} encoded in"
            f" {built['seconds']:.1f} s ({built['encoded'] / built['seconds']:.0f}/s),"
            f" peak RSS {built['peak_mib']:.0f} MiB; store {built['bytes'] / 2**20:.1f} MiB"
            f" ({built['path']}, apart from the search index)."
        )
        for query in queries[:2]:  # warm: the index, the loaded vectors, the model
            search(root, query, 20, "all", ranking="hybrid")
        results: dict[str, dict[str, list[float]]] = {}
        for name in CONDITIONS:
            with condition(name):
                print(f"<!-- {records:,} records, {name}: {load()} -->", flush=True)
                for operation, samples in _cost_samples(root, queries, runs).items():
                    results.setdefault(operation, {})[name] = samples
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\nA long-lived process after these queries: peak RSS {rss:.0f} MiB.\n")
    print("| operation | at rest ms, median (p90) | one core busy ms, median (p90) |")
    print("|---|---:|---:|")
    for operation, found in results.items():
        print(f"| {operation} | {cell(found['at rest'])} | {cell(found['one core busy'])} |")
    for name in CONDITIONS:
        lexical = median(results["library search, lexical"][name])
        hybrid = median(results["library search, hybrid"][name])
        print(
            f"\nHybrid's extra per query in a long-lived process, {name}: {hybrid - lexical:.1f} ms"
        )


def _process(argv: list[str], env: dict[str, str], stdin: str | None = None) -> None:
    subprocess.run(argv, check=True, capture_output=True, env=env, input=stdin, text=True)


def _cost_samples(root: Path, queries: list[str], runs: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {"library search, lexical": [], "library search, hybrid": []}
    for query in queries:
        for ranking in ("lexical", "hybrid"):
            samples[f"library search, {ranking}"] += timed(
                lambda q=query, r=ranking: search(root, q, 20, "all", ranking=r), runs
            )
    cli = [str(BIN / "dsh-memory"), "--root", str(root), "search"]
    env = {**os.environ, "DSH_MEMORY_ROOT": str(root)}
    for ranking in ("lexical", "hybrid"):
        samples[f"process: dsh-memory search --ranking {ranking}"] = [
            sample
            for query in queries[:5]
            for sample in timed(
                lambda q=query, r=ranking: _process([*cli, q, "--ranking", r], env), runs
            )
        ]
    hook = [str(BIN / "dsh-memory"), "hook", "session-start"]
    for label, extra in (("", {}), (", DSH_RANKING=hybrid", {"DSH_RANKING": "hybrid"})):
        samples[f"process: session-start hook{label}"] = timed(
            lambda e=extra: _process(hook, {**env, **e}, "{}"), runs * 2
        )
    samples["baseline: python -c pass"] = python_pass(runs * 2)
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--distractors", type=int, default=2000)
    parser.add_argument("--cost", type=int, default=0, help="records for the cost run (0: none)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--skip-quality", action="store_true")
    options = parser.parse_args()
    print(f"<!-- {load()}, {os.cpu_count()} CPUs -->")
    if not options.skip_quality:
        bilingual(options.distractors)
        memory_scale(options.distractors)
    if options.cost:
        cost(options.cost, options.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
