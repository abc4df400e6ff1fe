"""Index size and query time on dense Chinese memories up to 100,000 records.

Issue: an earlier index grew to ~10x the payload on dense Chinese text and a 1,000-character
Chinese query over 100k records took 25 s. For each size this writes records of dense
Chinese prose (characters drawn with a Zipf law from 3,000 ideographs, so common bigrams are
everywhere, as in real text), builds the index once (time and peak RSS of this process
reported), commits the records to git (a real memory root is a git repository, which
gives the index its cheap freshness key), then times a short query and a 1,000-character
Chinese query through ``search`` (median of RUNS, index fresh), and the freshness check
alone (part of every search, whatever the query).

    uv run python packages/memory-repo/bench/bench_index_scale.py [sizes ...]
"""

from __future__ import annotations

import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dsh_memory import search_index
from dsh_memory.search import search

RUNS = 3
CHARACTERS = [chr(0x4E00 + index * 7) for index in range(3000)]
WEIGHTS = [1 / (rank + 1) for rank in range(len(CHARACTERS))]
PUNCTUATION = "，。、；："


def chinese(rng: random.Random, length: int) -> str:
    chars = rng.choices(CHARACTERS, WEIGHTS, k=length)
    for position in range(12, length, rng.randint(9, 20)):
        chars[position] = rng.choice(PUNCTUATION)
    return "".join(chars)


def write_memory(root: Path, count: int, seed: int = 5) -> int:
    """``count`` records of ~150 Chinese characters; returns the payload bytes."""
    rng = random.Random(seed)
    (root / ".sync").mkdir(parents=True)
    total = 0
    for index in range(count):
        folder = ("handbook", "rollouts", "archive")[index % 3]
        directory = root / folder / f"d{index // 1000:03d}"
        directory.mkdir(parents=True, exist_ok=True)
        text = (
            f"---\nschema_version: 1\nid: zh/n{index}\ntype: fact\n---\n"
            f"{chinese(rng, rng.randint(100, 200))}\n"
        )
        data = text.encode("utf-8")
        (directory / f"n{index}.md").write_bytes(data)
        total += len(data)
    return total


GIT_IDENTITY = ["-c", "user.name=Bench", "-c", "user.email=bench@example.com"]


def commit(root: Path) -> None:
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        [*GIT_IDENTITY, "commit", "-qm", "corpus"],
    ):
        subprocess.run(["git", "-C", str(root), *args], check=True)


def freshness_ms(root: Path) -> float:
    samples = []
    for _ in range(RUNS):
        start = time.perf_counter()
        assert search_index.refresh_index(root) == "fresh"
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def median_ms(query: str, root: Path) -> float:
    samples = []
    for _ in range(RUNS):
        start = time.perf_counter()
        value = search(root, query, 20, "all")
        samples.append((time.perf_counter() - start) * 1000)
        assert value["retrieval"] == {"mode": "index", "indexState": "fresh"}, value["retrieval"]
    return statistics.median(samples)


def main() -> int:
    sizes = [int(arg) for arg in sys.argv[1:]] or [1000, 10000, 100000]
    print(
        "| records | payload MiB | index MiB | index/payload | build s | peak RSS MiB |"
        " freshness check ms | short query ms | 1,000-char zh query ms |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    rng = random.Random(99)
    long_query = chinese(rng, 1000)
    for count in sizes:
        with tempfile.TemporaryDirectory() as directory:
            root = Path(directory) / "memory"
            payload = write_memory(root, count)
            commit(root)
            start = time.perf_counter()
            search_index.update_index(root)
            build = time.perf_counter() - start
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            index_bytes = os.path.getsize(search_index.index_path(root))
            fresh = freshness_ms(root)
            short = median_ms(CHARACTERS[40] + CHARACTERS[41] + CHARACTERS[300], root)
            long = median_ms(long_query, root)
            print(
                f"| {count:,} | {payload / 2**20:.1f} | {index_bytes / 2**20:.1f} |"
                f" {index_bytes / payload:.2f}x | {build:.1f} | {rss:.0f} | {fresh:.1f} |"
                f" {short:.1f} | {long:.1f} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
