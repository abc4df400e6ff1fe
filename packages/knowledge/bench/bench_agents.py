"""What an agent pays: the UserPromptSubmit hook per prompt, and an MCP search round trip.

One store of 10,000 items (the shared corpus, one workspace). Measured in the same run so the
numbers are comparable on a busy machine:

* ``python -c pass`` - the interpreter's own start-up, the floor of any Python hook;
* ``dsh-knowledge --help`` - the typer CLI start-up;
* ``dsh-knowledge hook user-prompt-submit`` - the whole hook process with a real Claude Code
  payload on stdin: start, open the store, retrieve, render, record the injection, print
  (a new session id per call, so every call injects and writes);
* MCP ``knowledge_search`` - the median round trip of 100 calls over one live stdio session
  with the real ``dsh-knowledge mcp`` process (mcp.client.stdio + ClientSession).

    uv run python packages/knowledge/bench/bench_agents.py [--runs 20] [--size 10000]
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import QUERIES, generate

from dsh_knowledge.repository import KnowledgeRepository
from dsh_knowledge.store import KnowledgeStore

WORKSPACE = "/work/shop"


def _command() -> str:
    return str(Path(sys.executable).parent / "dsh-knowledge")


def _time_process(argv: list[str], stdin: str | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(argv, input=stdin, capture_output=True, text=True, check=True)
    return (time.perf_counter() - start) * 1000


def _hook_runs(db: Path, runs: int) -> tuple[list[float], int]:
    times, injected = [], 0
    for n in range(runs):
        payload = {
            "session_id": f"bench-{n}",
            "transcript_path": WORKSPACE + "/transcript.jsonl",
            "cwd": WORKSPACE,
            "hook_event_name": "UserPromptSubmit",
            "prompt": QUERIES[n % len(QUERIES)],
            "prompt_id": f"p{n}",
            "permission_mode": "default",
        }
        start = time.perf_counter()
        done = subprocess.run(
            [_command(), "hook", "user-prompt-submit", "--db", str(db)],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            check=True,
        )
        times.append((time.perf_counter() - start) * 1000)
        injected += bool(done.stdout)
    return times, injected


def _mcp_round_trips(db: Path, calls: int) -> list[float]:
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=_command(),
        args=["mcp", "--db", str(db), "--workspace", WORKSPACE],
        env=dict(os.environ),
    )
    times: list[float] = []

    async def main() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            await client.call_tool("knowledge_search", {"query": "warm up"})
            for n in range(calls):
                start = time.perf_counter()
                result = await client.call_tool(
                    "knowledge_search", {"query": QUERIES[n % len(QUERIES)]}
                )
                times.append((time.perf_counter() - start) * 1000)
                assert not result.is_error

    anyio.run(main)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--mcp-calls", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        db = Path(directory) / "knowledge.sqlite"
        store = KnowledgeStore(db)
        KnowledgeRepository(store).create_many(generate(args.size, workspace=WORKSPACE))
        store.close()
        _hook_runs(db, 2)  # warm the page cache and build nothing later
        rows = []
        floor = [_time_process([sys.executable, "-c", "pass"]) for _ in range(args.runs)]
        rows.append(("`python -c pass`", floor, ""))
        helps = [_time_process([_command(), "--help"]) for _ in range(args.runs)]
        rows.append(("`dsh-knowledge --help`", helps, ""))
        hooks, injected = _hook_runs(db, args.runs)
        rows.append(
            (
                f"`dsh-knowledge hook user-prompt-submit` ({args.size:,} items)",
                hooks,
                f"{injected}/{args.runs} injected",
            )
        )
        mcp = _mcp_round_trips(db, args.mcp_calls)
        rows.append(
            (f"MCP `knowledge_search` round trip ({args.size:,} items)", mcp, f"{len(mcp)} calls")
        )
    print("| what | median ms | p90 ms | note |")
    print("|---|---:|---:|---|")
    for label, values, note in rows:
        ordered = sorted(values)
        p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
        print(f"| {label} | {statistics.median(values):.1f} | {p90:.1f} | {note} |")


if __name__ == "__main__":
    main()
