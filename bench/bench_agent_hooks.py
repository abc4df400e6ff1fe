"""Every agent hook as a whole process, beside ``--help`` of its command and bare Python.

A host runs a hook command at every session start and every prompt, so what counts is the
wall time of the whole process: interpreter start, imports, the work, exit. Target: each
hook under 80 ms median with 500 lessons, 10,000 memory records and 10,000 knowledge items.

    uv run --frozen python bench/bench_agent_hooks.py [--runs 21]

Corpora come from the packages' own generators (packages/*/bench/corpus.py): the lessons
fill the 4 MiB scan bound, some of their sources are changed (so session-start has stale
lessons to report), memory has a 16 KiB summary, knowledge lives in the default database.

Two hostile rows follow: the prompt hook on a prompt of 499 emoji (998 UTF-16 units, cut
to 500), and with ``--evidence-attack`` the session-start hook on 500 records naming the
same 32 files of 8 MiB under different digests (sparse files; bounded by the hook's
hashing budget).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
TARGET_MS = 80.0


def _load(package: str, module: str) -> object:
    sys.path.insert(0, str(ROOT / "packages" / package / "bench"))
    try:
        return __import__(module)
    finally:
        sys.path.pop(0)
        sys.modules.pop(module, None)


def build(
    base: Path, lessons: int, memories: int, items: int, corpus_bytes: int
) -> tuple[Path, dict[str, str]]:
    env = {**os.environ, "HOME": str(base / "home"), "DSH_HOME": str(base / "home" / ".dsh")}
    # An installed package has its bytecode compiled at install time; a shell that sets
    # PYTHONDONTWRITEBYTECODE would make every start compile every module from source.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ.update(env)
    (base / "home").mkdir()
    (base / "home" / ".gitconfig").write_text(
        "[user]\n\tname = Bench\n\temail = bench@example.com\n"
    )
    workspace = base / "ws"
    compound_corpus = _load("compound", "corpus")
    compound_corpus.generate(workspace, lessons, corpus_bytes)  # type: ignore[attr-defined]
    for index, source in enumerate(sorted((workspace / "src").rglob("*"))):
        if source.is_file() and index % 7 == 0:
            source.write_text(source.read_text() + "\n// changed after capture\n")

    memory_root = base / "home" / ".dsh" / "storages" / "memory"
    subprocess.run(
        [str(BIN / "dsh-memory"), "init"], env=env, capture_output=True, check=True, timeout=120
    )
    memory_corpus = _load("memory-repo", "corpus")
    memory_corpus.write_corpus(memory_root, memories)  # type: ignore[attr-defined]
    (memory_root / "summary.md").write_text("# Summary\n" + "- a remembered preference\n" * 700)

    knowledge_corpus = _load("knowledge", "corpus")
    from dsh_knowledge.agent_config import default_database_path
    from dsh_knowledge.repository import KnowledgeRepository
    from dsh_knowledge.store import KnowledgeStore

    database = default_database_path()
    database.parent.mkdir(parents=True, exist_ok=True)
    store = KnowledgeStore(database)
    try:
        rows = knowledge_corpus.generate(items, workspace=str(workspace))  # type: ignore[attr-defined]
        KnowledgeRepository(store).create_many(rows)
    finally:
        store.close()
    return workspace, env


def evidence_attack(root: Path) -> Path:
    """500 records naming the same 32 sparse 8 MiB files, each under different digests."""
    from dsh_compound.limits import CORPUS_DIRECTORY, LIMITS
    from dsh_compound.record import build_metadata, render_record

    (root / ".git").mkdir(parents=True)
    files = []
    for index in range(LIMITS.files_max):
        relative = f"big/file-{index:02d}.bin"
        (root / "big").mkdir(exist_ok=True)
        with open(root / relative, "wb") as handle:
            handle.truncate(LIMITS.source_bytes)
        files.append(relative)
    corpus = root.joinpath(*CORPUS_DIRECTORY.split("/"))
    corpus.mkdir(parents=True)
    for record in range(500):
        draft = {
            "id": f"lesson-{record:03d}", "title": f"Lesson {record}", "tags": ["big"],
            "problem": "p", "rootCause": "r", "resolution": "s", "whenToUse": "w",
            "verification": {"command": "c", "result": "r"}, "files": files,
        }  # fmt: skip
        digests = [f"{record:032x}{position:032x}" for position in range(len(files))]
        stamp = "2026-01-02T03:04:05.006Z"
        metadata = build_metadata(draft, digests, created_at=stamp, updated_at=stamp)
        (corpus / f"{draft['id']}.md").write_bytes(render_record(metadata))
    return root


def measure(
    argv: list[str], payload: str, env: dict[str, str], runs: int
) -> tuple[list[float], list[float]]:
    """Wall-clock and CPU (user + system) milliseconds of each run of ``argv``.

    CPU time says what the process itself costs even when other work competes for the
    cores; on a loaded machine wall time also counts waiting for a core.
    """
    wall: list[float] = []
    cpu: list[float] = []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, input=payload, env=env, capture_output=True, text=True, check=False)
        wall.append((time.perf_counter() - start) * 1000)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        cpu.append(used * 1000)
    return wall, cpu


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--lessons", type=int, default=500)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument(
        "--corpus-bytes",
        type=int,
        default=4_000_000,
        help="total size of the lessons (default: the scan's 4 MiB bound, the worst case)",
    )
    parser.add_argument(
        "--evidence-attack",
        action="store_true",
        help="also time session-start on 500 records x the same 32 x 8 MiB files",
    )
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        workspace, env = build(
            Path(directory), options.lessons, options.memories, options.items, options.corpus_bytes
        )
        start = {"cwd": str(workspace), "hook_event_name": "SessionStart", "source": "startup"}
        prompt = {
            "cwd": str(workspace),
            "hook_event_name": "UserPromptSubmit",
            "session_id": "bench",
            "prompt": "Why does the login request time out with a database connection pool?",
        }
        cases: list[tuple[str, list[str], dict[str, str], bool]] = [
            ("python -c pass", [sys.executable, "-c", "pass"], {}, False),
            ("dsh-compound --help", [str(BIN / "dsh-compound"), "--help"], {}, False),
            (
                "dsh-compound hook session-start",
                [str(BIN / "dsh-compound"), "hook", "session-start"],
                start,
                True,
            ),
            (
                "dsh-compound hook user-prompt-submit",
                [str(BIN / "dsh-compound"), "hook", "user-prompt-submit"],
                prompt,
                True,
            ),
            (
                "dsh-compound hook user-prompt-submit, 499 emoji",
                [str(BIN / "dsh-compound"), "hook", "user-prompt-submit"],
                {**prompt, "prompt": "login " + "\U0001f600" * 499},
                True,
            ),
            ("dsh-memory --help", [str(BIN / "dsh-memory"), "--help"], {}, False),
            (
                "dsh-memory hook session-start",
                [str(BIN / "dsh-memory"), "hook", "session-start", "--mcp-server", "dsh-memory"],
                start,
                True,
            ),
            ("dsh-knowledge --help", [str(BIN / "dsh-knowledge"), "--help"], {}, False),
            (
                "dsh-knowledge hook user-prompt-submit",
                [str(BIN / "dsh-knowledge"), "hook", "user-prompt-submit"],
                prompt,
                True,
            ),
        ]
        if options.evidence_attack:
            attack = evidence_attack(Path(directory) / "attack")
            cases.append(
                (
                    "dsh-compound hook session-start, evidence attack",
                    [str(BIN / "dsh-compound"), "hook", "session-start"],
                    {**start, "cwd": str(attack)},
                    True,
                )
            )
        print(
            f"{options.lessons} lessons ({options.corpus_bytes:,} bytes), "
            f"{options.memories} memory records, "
            f"{options.items} knowledge items; {options.runs} runs each (ms)\n"
        )
        print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n")
        print("| command | median | p95 | CPU median | hook target < 80 ms (median) |")
        print("|---|---:|---:|---:|---|")
        for label, argv, payload, is_hook in cases:
            # One unmeasured run warms the page cache and any lazily built index.
            measure(argv, json.dumps(payload), env, 1)
            times, cpu = measure(argv, json.dumps(payload), env, options.runs)
            median = statistics.median(times)
            verdict = ("yes" if median < TARGET_MS else "NO") if is_hook else ""
            print(
                f"| `{label}` | {median:.0f} | {p95(times):.0f} | "
                f"{statistics.median(cpu):.0f} | {verdict} |"
            )
        print(f"\nload average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
