"""Benchmark: segmentation and query-term extraction of realistic queries.

Prints a Markdown table: median and p95 over repeated runs, for queries of several sizes,
with plain ``str.split`` of the same text measured in the same run as the baseline.
"""

from __future__ import annotations

import statistics
import time

from dsh_common.text import query_terms, segment_words

_SENTENCES = [
    "数据库连接池耗尽导致超时",
    "connection pool exhausted under load",
    "登录请求在测试环境中超时，需要检查 Redis 配置。",
    "use jittered TTLs to avoid 缓存雪崩",
    "CI 失败: pytest fixture leaked a temp dir",
]


def _query(length: int) -> str:
    text = " ".join(_SENTENCES * (length // 20 + 1))
    return text[:length]


def _time(fn: object, arg: str, runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        fn(arg)  # type: ignore[operator]
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def main() -> None:
    query_terms("warm up the ICU iterator")
    print("| query chars | operation | median ms | p95 ms | baseline str.split median ms | ratio |")
    print("|---:|---|---:|---:|---:|---:|")
    for length in (50, 200, 500):
        query = _query(length)
        baseline = statistics.median(_time(str.split, query, 2000))
        for name, fn in (("segment_words", segment_words), ("query_terms", query_terms)):
            samples = _time(fn, query, 2000)
            median = statistics.median(samples)
            p95 = statistics.quantiles(samples, n=20)[-1]
            print(
                f"| {length} | {name} | {median:.4f} | {p95:.4f} | {baseline:.4f} "
                f"| {median / baseline:.0f}x |"
            )


if __name__ == "__main__":
    main()
