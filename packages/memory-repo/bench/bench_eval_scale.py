"""Retrieval quality at scale: the public 52 queries and our paraphrases among distractors.

Writes the 26 public records plus ``N`` generated distractors (``eval_corpus``) into one
memory root, then runs every query of the public set and of :data:`eval_corpus.PARAPHRASES`
through

- ``dsh-memory`` (the library search, with its index; the scan fallback is checked to give
  the very same paths),
- a **grep ranking**: records ordered by how many of the query's whitespace-separated words
  occur (case-insensitively) in the file, ties by path,
- a **textbook BM25** (k1 1.2, b 0.75) over the same records' searchable text, tokenised into
  lowercase words and Han bigrams, ties by path,

and prints top-1, top-3 and MRR (over the first 10 results) by language (a query with a
Han character is ``zh``). The hit rules are the public file's.

Each size runs both generator variants (``eval_corpus``: ``realistic`` and ``hard``) at the
shared-word rates 0.1 and 0.05, with seed 2026; ``--seeds N`` adds seeds 1..N-1 and prints
the mean over seeds as well.

    uv run python packages/memory-repo/bench/bench_eval_scale.py [--seeds N] [distractors ...]
"""

from __future__ import annotations

import json
import math
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from bench_eval import DEFAULT_EVAL, earlier_score, write_corpus
from eval_corpus import PARAPHRASES, SHARED_RATE, VARIANTS, distractor_records

from dsh_memory.search.search import search
from dsh_memory.store.records import SCOPES, Record, load_record, walk_payload

_HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_WORD = re.compile(r"[^\W_]+")


def language(query: str) -> str:
    return "zh" if _HAN.search(query) else "en"


def build(
    root: Path,
    distractors: int,
    seed: int = 2026,
    shared_rate: float = SHARED_RATE,
    variant: str = "hard",
) -> dict[str, Any]:
    data = json.loads(DEFAULT_EVAL.read_text(encoding="utf-8"))
    corpus = dict(data)
    generated = distractor_records(distractors, seed, shared_rate, variant)
    corpus["records"] = [*data["records"], *generated]
    write_corpus(root, corpus)
    return data


def _records(root: Path, scope: str) -> list[Record]:
    loaded = (load_record(root, entry) for entry in walk_payload(root, SCOPES[scope]))
    return [record for record in loaded if record is not None and record.valid]


def grep_ranking(records: list[Record], query: str) -> list[str]:
    words = [word for word in query.lower().split() if word]
    scored = []
    for record in records:
        text = record.searchable().lower()
        hits = sum(1 for word in words if word in text)
        if hits:
            scored.append((-hits, record.path))
    return [path for _hits, path in sorted(scored)]


def bm25_tokens(text: str) -> list[str]:
    tokens: list[str] = []
    for run in _WORD.findall(text.lower()):
        if _HAN.search(run):
            han = "".join(char for char in run if _HAN.match(char))
            tokens.extend(han[i : i + 2] for i in range(len(han) - 1))
            if len(han) == 1:
                tokens.append(han)
            latin = _HAN.sub(" ", run).split()
            tokens.extend(latin)
        else:
            tokens.append(run)
    return tokens


class TextbookBM25:
    def __init__(self, records: list[Record]) -> None:
        self.records = records
        self.tokens = [Counter(bm25_tokens(record.searchable())) for record in records]
        self.lengths = [sum(counter.values()) for counter in self.tokens]
        self.average = sum(self.lengths) / max(1, len(self.lengths))
        self.df: Counter[str] = Counter()
        for counter in self.tokens:
            self.df.update(counter.keys())

    def ranking(self, query: str) -> list[str]:
        terms = list(dict.fromkeys(bm25_tokens(query)))
        total = len(self.records)
        scored = []
        for record, counter, length in zip(self.records, self.tokens, self.lengths, strict=True):
            score = 0.0
            for term in terms:
                tf = counter.get(term, 0)
                if not tf:
                    continue
                df = self.df[term]
                idf = math.log(1 + (total - df + 0.5) / (df + 0.5))
                score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / self.average))
            if score > 0:
                scored.append((-score, record.path))
        return [path for _score, path in sorted(scored)]


def previous_terms(query: str) -> list[str]:
    """dsh-memory 0.1's terms: v0.8 tokens, a Han token expanded to ICU words and bigrams."""
    from dsh_common import text

    terms: list[str] = []
    for token in re.split(r"[\W_]+", query.lower()):
        if not token:
            continue
        if not _HAN.search(token):
            terms.append(token)
            continue
        expansion = [token, *(s.lower() for s in text.segment_words(token) if len(s) >= 2)]
        terms.extend(dict.fromkeys([*expansion, *text.han_bigrams(token)]))
    return terms


def previous_ranking(records: list[Record], query: str) -> list[str]:
    """The ranking this package shipped before (the earlier tool's rules, bigram terms)."""
    terms = previous_terms(query)
    scored = [(-earlier_score(record, terms), record.path) for record in records]
    return [path for score, path in sorted(scored) if score < 0]


def ours(root: Path, query: str, scope: str, *, use_index: bool = True) -> list[str]:
    value = search(root, query, 10, scope, use_index=use_index)
    return [result["path"] for result in value["results"]]


def _score(cases: list[dict[str, Any]], rankings: list[list[str]]) -> dict[str, dict[str, float]]:
    groups: dict[str, list[tuple[bool, bool, float]]] = {"all": [], "en": [], "zh": []}
    for case, paths in zip(cases, rankings, strict=True):
        expected = case["expect_in_top3"]
        first = paths[0] if paths else None
        hit1 = first == case["top1"] if case["top1"] else first in expected
        hit3 = all(path in paths[:3] for path in expected)
        wanted = case["top1"] or expected[0]
        top10 = paths[:10]
        reciprocal = 1 / (top10.index(wanted) + 1) if wanted in top10 else 0.0
        for group in ("all", language(case["query"])):
            groups[group].append((hit1, hit3, reciprocal))
    report = {}
    for group, rows in groups.items():
        count = len(rows) or 1
        report[group] = {
            "n": len(rows),
            "top1": sum(row[0] for row in rows) / count,
            "top3": sum(row[1] for row in rows) / count,
            "mrr": sum(row[2] for row in rows) / count,
        }
    return report


def evaluate_scale(root: Path, cases: list[dict[str, Any]]) -> dict[str, Any]:
    """Rankings of every case by each method, scored; also checks index == scan."""
    by_scope = {scope: _records(root, scope) for scope in {case["scope"] for case in cases}}
    bm25 = {scope: TextbookBM25(records) for scope, records in by_scope.items()}
    methods: dict[str, list[list[str]]] = {
        "dsh-memory": [],
        "previous": [],
        "grep": [],
        "bm25": [],
    }
    mismatches = []
    for case in cases:
        indexed = ours(root, case["query"], case["scope"])
        scanned = ours(root, case["query"], case["scope"], use_index=False)
        if indexed != scanned:
            mismatches.append(case["n"])
        methods["dsh-memory"].append(indexed)
        methods["previous"].append(previous_ranking(by_scope[case["scope"]], case["query"]))
        methods["grep"].append(grep_ranking(by_scope[case["scope"]], case["query"]))
        methods["bm25"].append(bm25[case["scope"]].ranking(case["query"]))
    report: dict[str, Any] = {name: _score(cases, ranks) for name, ranks in methods.items()}
    report["mismatches"] = mismatches
    report["misses"] = [
        f"{case['n']} {case['query']!r}: {paths[:3]}"
        for case, paths in zip(cases, methods["dsh-memory"], strict=True)
        if (case["top1"] or case["expect_in_top3"][0]) not in paths[:3]
    ]
    return report


def print_table(title: str, report: dict[str, Any]) -> None:
    print(f"\n{title}\n")
    print("| ranking | queries | top-1 | top-3 | MRR | en top-3 | en MRR | zh top-3 | zh MRR |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in ("dsh-memory", "previous", "grep", "bm25"):
        row = report[name]
        print(
            f"| {name} | {row['all']['n']} | {row['all']['top1']:.3f} | {row['all']['top3']:.3f}"
            f" | {row['all']['mrr']:.3f} | {row['en']['top3']:.3f} | {row['en']['mrr']:.3f}"
            f" | {row['zh']['top3']:.3f} | {row['zh']['mrr']:.3f} |"
        )


def _run(size: int, variant: str, rate: float, seed: int) -> tuple[dict[str, Any], ...]:
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory) / "memory"
        data = build(root, size, seed=seed, shared_rate=rate, variant=variant)
        return data, evaluate_scale(root, data["queries"]), evaluate_scale(root, PARAPHRASES)


def _mean(reports: list[dict[str, Any]]) -> dict[str, Any]:
    mean: dict[str, Any] = {}
    for name in ("dsh-memory", "previous", "grep", "bm25"):
        mean[name] = {
            group: {
                "n": reports[0][name][group]["n"],
                **{
                    key: sum(report[name][group][key] for report in reports) / len(reports)
                    for key in ("top1", "top3", "mrr")
                },
            }
            for group in ("all", "en", "zh")
        }
    return mean


def main() -> int:
    arguments = sys.argv[1:]
    seeds = [2026]
    if arguments[:1] == ["--seeds"]:
        seeds += list(range(1, int(arguments[1])))
        arguments = arguments[2:]
    sizes = [int(arg) for arg in arguments] or [2000]
    for size in sizes:
        for variant in VARIANTS[::-1]:
            for rate in (SHARED_RATE, SHARED_RATE / 2):
                public_runs, paraphrased_runs = [], []
                for seed in seeds:
                    data, public, paraphrased = _run(size, variant, rate, seed)
                    public_runs.append(public)
                    paraphrased_runs.append(paraphrased)
                    setting = (
                        f"{len(data['records']) + size:,} records ({size:,} {variant}"
                        f" distractors, shared-word rate {rate}, seed {seed})"
                    )
                    print_table(f"Public 52 queries, {setting}", public)
                    print_table(
                        f"Paraphrased queries ({len(PARAPHRASES)}), same memory", paraphrased
                    )
                    for label, report in (("public", public), ("paraphrased", paraphrased)):
                        if report["mismatches"]:
                            print(f"index/scan mismatch ({label}): {report['mismatches']}")
                        if report["misses"]:
                            print(f"\nmisses outside top-3 ({label}):")
                            print("\n".join(f"  {miss}" for miss in report["misses"]))
                if len(seeds) > 1:
                    setting = f"{variant}, rate {rate}, mean over seeds {seeds}"
                    print_table(f"Public 52 queries, {setting}", _mean(public_runs))
                    print_table(f"Paraphrased queries, {setting}", _mean(paraphrased_runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
