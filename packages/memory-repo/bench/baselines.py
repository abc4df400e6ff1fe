"""The baselines every timing of this folder is printed beside, measured in the same run.

A millisecond figure alone says little on a shared machine: the same search took 25 ms at
rest and 36 ms while other work ran. So each benchmark measures, in the same process and
under the same conditions as its own figures:

- ``python -c pass``: what any Python process costs before it does anything;
- a **cold scan**: the same search without the index, reading and ranking every record file
  (what search costs when the index cannot be used);
- **BM25 in pure Python**: a textbook BM25 (k1 1.2, b 0.75) over the same records' words
  and Han bigrams, from an inverted index already in memory - what a straightforward
  in-process ranking costs per query;

and runs everything twice: **at rest** and with **one core busy** (a process spinning on a
core of its own for the duration: on a 2-core machine the freshness listing then shares a
core with the query). Figures are medians of several runs; the load average is printed
with each condition.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from typing import Any

_HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_WORD = re.compile(r"[^\W_]+")

CONDITIONS = ("at rest", "one core busy")


def bm25_tokens(text: str) -> list[str]:
    """Lowercase words and Han bigrams (a lone Han character as itself)."""
    tokens: list[str] = []
    for run in _WORD.findall(text.lower()):
        if _HAN.search(run):
            han = "".join(char for char in run if _HAN.match(char))
            tokens.extend(han[i : i + 2] for i in range(len(han) - 1))
            if len(han) == 1:
                tokens.append(han)
            tokens.extend(_HAN.sub(" ", run).split())
        else:
            tokens.append(run)
    return tokens


class Bm25Index:
    """A textbook BM25 over an inverted index held in memory: the pure-Python baseline."""

    def __init__(self, keys: list[str], texts: Iterable[str]) -> None:
        self.keys = keys
        self.postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        self.lengths: list[int] = []
        for document, text in enumerate(texts):
            counts = Counter(bm25_tokens(text))
            self.lengths.append(sum(counts.values()))
            for term, tf in counts.items():
                self.postings[term].append((document, tf))
        self.average = sum(self.lengths) / max(1, len(self.lengths))

    def top(self, query: str, limit: int = 20) -> list[str]:
        total = len(self.lengths)
        scores: dict[int, float] = defaultdict(float)
        for term in dict.fromkeys(bm25_tokens(query)):
            postings = self.postings.get(term, [])
            df = len(postings)
            idf = math.log(1 + (total - df + 0.5) / (df + 0.5))
            for document, tf in postings:
                norm = 1.2 * (0.25 + 0.75 * self.lengths[document] / self.average)
                scores[document] += idf * tf * 2.2 / (tf + norm)
        best = sorted(scores.items(), key=lambda item: (-item[1], self.keys[item[0]]))[:limit]
        return [self.keys[document] for document, _score in best]


def timed(call: Callable[[], Any], runs: int) -> list[float]:
    """Milliseconds of ``runs`` calls."""
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def median(samples: list[float]) -> float:
    return statistics.median(samples)


def p90(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]


def python_pass(runs: int = 11) -> list[float]:
    """Wall-clock milliseconds of ``python -c pass`` processes."""
    return timed(lambda: subprocess.run([sys.executable, "-c", "pass"], check=True), runs)


@contextlib.contextmanager
def one_core_busy() -> Iterator[None]:
    """A process spinning on one core for as long as the block runs."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.2)  # let it reach the scheduler before anything is timed
        yield
    finally:
        spinner.kill()
        spinner.wait()


def condition(name: str) -> contextlib.AbstractContextManager[None]:
    return one_core_busy() if name == "one core busy" else contextlib.nullcontext()


def load() -> str:
    one, five, _fifteen = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min)"


def cell(samples: list[float]) -> str:
    """``median (p90)`` in milliseconds, as the tables print them."""
    return f"{median(samples):.1f} ({p90(samples):.1f})"
