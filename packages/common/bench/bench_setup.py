"""What setup's locks and second read cost, on a ``~/.claude.json`` of realistic sizes.

``~/.claude.json`` grows with every project Claude Code has seen (history, per-project
state): a few hundred KB is common, tens of MB happen. Setup reads and plans every file,
then - under a lock beside each file - reads and plans again and writes by
compare-and-swap. For each size the table shows, as whole processes through the console
script, the median of several runs of:

- ``--dry-run`` (plan only, nothing locked or written): the baseline of the same run;
- ``setup`` that writes (both files updated: the server and the hooks are new);
- ``setup`` again (nothing to write: the second read is skipped too);
- three products' ``setup`` started at once (wall time until all three finished; each
  waits for the others' locks, so this is about three writes in a row).

    uv run python packages/common/bench/bench_setup.py [--runs 5]
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
RUNS = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 5
PRODUCTS = ("dsh-compound", "dsh-memory", "dsh-knowledge")
SIZES = (0, 200, 2000, 8000)  # projects in ~/.claude.json (~1.4 KB each)


def history(projects: int) -> str:
    entry = {"history": [{"display": "x" * 200, "pastedContents": {}}] * 5}
    document = {"numStartups": 1, "projects": {f"/work/p{i}": entry for i in range(projects)}}
    return json.dumps(document, indent=2)


def fresh_home(base: Path, text: str) -> dict[str, str]:
    home = Path(tempfile.mkdtemp(dir=base))
    (home / ".claude").mkdir()
    (home / ".claude.json").write_text(text)
    env = {**os.environ, "HOME": str(home), "CODEX_HOME": str(home / ".codex")}
    env.pop("DSH_HOME", None)
    return env


def timed(commands: list[list[str]], env: dict[str, str]) -> float:
    start = time.perf_counter()
    processes = [
        subprocess.Popen(c, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for c in commands
    ]
    for process in processes:
        _, err = process.communicate()
        if process.returncode != 0:
            raise SystemExit(f"{commands}: {err.decode()}")
    return (time.perf_counter() - start) * 1000


def setup(program: str, *args: str) -> list[str]:
    return [str(BIN / program), "setup", "claude-code", *args]


def main() -> int:
    load = os.getloadavg()[0]
    print(
        f"{RUNS} runs each (ms, median); load average before: {load:.1f} on {os.cpu_count()} cores"
    )
    print()
    print(
        "| ~/.claude.json | dry-run (baseline) | setup, writes | ratio | setup, unchanged "
        "| 3 products at once |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory(prefix="dsh-bench-setup-") as tmp:
        base = Path(tmp)
        for projects in SIZES:
            text = history(projects)
            dry, write, again, together = [], [], [], []
            for _ in range(RUNS):
                env = fresh_home(base, text)
                dry.append(timed([setup("dsh-compound", "--dry-run")], env))
                write.append(timed([setup("dsh-compound")], env))
                again.append(timed([setup("dsh-compound")], env))
                env = fresh_home(base, text)
                together.append(timed([setup(p) for p in PRODUCTS], env))
            row = [statistics.median(v) for v in (dry, write, again, together)]
            size = f"{len(text) / 1e6:.2f} MB" if len(text) > 1e5 else f"{len(text)} bytes"
            print(
                f"| {size} | {row[0]:.0f} | {row[1]:.0f} | {row[1] / row[0]:.2f} "
                f"| {row[2]:.0f} | {row[3]:.0f} |"
            )
    print()
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
