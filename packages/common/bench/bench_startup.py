"""Whole-process start-up of the commands an agent calls most, beside `python -c pass`.

A small store: a 32-record memory, 100 lessons, 1,000 knowledge items.
Each command runs as a real process through its console script (the launcher's fast path)
and through `python -m dsh_<pkg>.cli` (the Typer parser), interleaved, and the median of
the runs is printed with its ratio to `python -c pass` of the same run, after one warm-up
run that writes the bytecode an installed package would have. Numbers depend on the
machine and its load (the 1-minute load average is printed before and after); compare the
rows with the `python -c pass` row of the same run.

    uv run python packages/common/bench/bench_startup.py [--runs 15]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
RUNS = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 15
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]


def build(base: Path, env: dict[str, str]) -> Path:
    repo = base / "repo"
    (repo / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    for n in range(20):
        (repo / "src" / f"m{n}.py").write_text(f"VALUE_{n} = {n}\n")
    sys.path[:0] = []
    from dsh_compound.writing import capture

    for n in range(100):
        capture(
            repo,
            {
                "id": f"lesson-{n}",
                "title": f"Lesson {n}: pool timeout 连接池 {n}",
                "tags": ["db", f"t{n % 7}"],
                "problem": f"Problem {n} with the connection pool.",
                "rootCause": "The pool is too small.",
                "resolution": "Raise it.",
                "whenToUse": "A test hangs.",
                "verification": {"command": "make", "result": "ok"},
                "files": [f"src/m{n % 20}.py"],
            },
        )
    from dsh_knowledge.repository import KnowledgeRepository
    from dsh_knowledge.store import KnowledgeStore

    store = KnowledgeStore(base / "home" / "knowledge" / "knowledge.sqlite")
    KnowledgeRepository(store).create_many(
        [
            {
                "type": ("fact", "decision", "lesson")[n % 3],
                "content": (
                    f"Item {n}: the service {n % 40} uses port {8000 + n} and pool size {n % 9}"
                ),
                "scope": {"workspace": str(repo.resolve()), "project": None},
            }
            for n in range(1000)
        ]
    )
    store.close()
    subprocess.run([str(BIN / "dsh-memory"), "init"], check=True, env=env, capture_output=True)
    memory = base / "home" / "storages" / "memory"
    for n in range(32):
        (memory / "handbook" / f"r{n}.md").write_text(
            f"---\nschema_version: 1\nid: team/r{n}\ntype: fact\n---\n"
            f"Record {n}: the release checklist step {n} and deploy notes.\n"
        )
    subprocess.run([*GIT, "-C", str(memory), "add", "-A"], check=True)
    subprocess.run([*GIT, "-C", str(memory), "commit", "-q", "-m", "records"], check=True)
    return repo


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="dsh-bench-") as tmp:
        base = Path(tmp)
        (base / ".gitconfig").write_text("[user]\n\tname = b\n\temail = b@example.invalid\n")
        env = {
            **os.environ,
            "DSH_HOME": str(base / "home"),
            "HOME": str(base),
            "GIT_CONFIG_GLOBAL": str(base / ".gitconfig"),
        }
        env.pop("DSH_MEMORY_ROOT", None)
        # An installed package has its bytecode compiled at install time; a checkout run
        # with PYTHONDONTWRITEBYTECODE would compile every module at every start instead.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        os.environ.update(env)
        repo = build(base, env)
        rows = [
            ("dsh-compound", "dsh_compound", ["recall", "connection pool timeout"]),
            ("dsh-knowledge", "dsh_knowledge", ["retrieve", "which port does service 7 use"]),
            ("dsh-knowledge", "dsh_knowledge", ["search", "port 8042"]),
            ("dsh-memory", "dsh_memory", ["search", "release checklist"]),
            ("dsh-memory", "dsh_memory", ["context", "deploy"]),
            ("dsh-memory", "dsh_memory", ["status"]),
        ]
        variants: dict[str, list[str]] = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "python -c 'import typer'": [sys.executable, "-c", "import typer"],
        }
        for tool, module, argv in rows:
            name = f"{tool} {' '.join(argv)}"
            variants[f"{name}  [fast path]"] = [str(BIN / tool), *argv]
            variants[f"{name}  [typer]"] = [sys.executable, "-m", f"{module}.cli", *argv]
        times: dict[str, list[float]] = {name: [] for name in variants}
        before = os.getloadavg()
        for argv in variants.values():  # warm-up: bytecode, page cache, search indexes
            subprocess.run(argv, cwd=repo, env=env, capture_output=True, check=True)
        for _ in range(RUNS):  # interleaved, so load changes hit every row alike
            for name, argv in variants.items():
                start = time.perf_counter()
                subprocess.run(argv, cwd=repo, env=env, capture_output=True, check=True)
                times[name].append((time.perf_counter() - start) * 1000)
        after = os.getloadavg()
        medians = {name: statistics.median(values) for name, values in times.items()}
        base = medians["python -c pass"]
        print(
            f"median of {RUNS} runs, ms (machine: {os.cpu_count()} cores, shared; load average"
            f" {before[0]:.2f} before, {after[0]:.2f} after; target: fast path < 70 ms)"
        )
        print(f"{'ms':>8}  {'x pass':>6}  command")
        for name, median in medians.items():
            print(f"{median:8.1f}  {median / base:6.1f}  {name}")
        print(json.dumps({n: round(m, 1) for n, m in medians.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
