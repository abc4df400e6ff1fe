"""The bilingual evaluation of hybrid ranking, written as a memory: helpers for the bench and
the test that keeps its goals.

The data is dsh-common's ``bench/data/bilingual-retrieval-eval.json``: 180 engineering
lessons, facts, decisions and memories (90 English, 90 Chinese, distinct topics) and 220
labelled queries in seven groups - cross-lingual both ways (``xl_en2zh``, ``xl_zh2en``),
paraphrases in each language (``para_en``, ``para_zh``), keyword queries in each language
(``mono_en``, ``mono_zh``) and questions nothing answers (``none``). Each item becomes a
record ``handbook/bilingual/<id>.md`` with the id ``<kind>/<id>``, its title as the body's
first line; memory's own realistic distractors (``eval_corpus``, half of them Chinese,
sharing the queries' words) fill the rest of the memory.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from eval_corpus import distractor_records

DATA = (
    Path(__file__).resolve().parents[2]
    / "common"
    / "bench"
    / "data"
    / "bilingual-retrieval-eval.json"
)
GROUPS = ("xl_en2zh", "xl_zh2en", "para_en", "para_zh", "mono_en", "mono_zh")
#: The groups hybrid ranking is for: across languages and in other words.
HYBRID_GROUPS = ("xl_en2zh", "xl_zh2en", "para_en", "para_zh")
MONO_GROUPS = ("mono_en", "mono_zh")
DEPTH = 10
_TYPES = {"lesson": "procedure", "fact": "fact", "decision": "decision", "memory": "observation"}


def load_data() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))
    return data


def item_path(item_id: str) -> str:
    return f"handbook/bilingual/{item_id}.md"


def write_memory(root: Path, data: dict[str, Any], distractors: int, seed: int = 12) -> int:
    """The evaluation's items and ``distractors`` realistic notes; returns the record count."""
    (root / ".sync").mkdir(parents=True, exist_ok=True)
    for item in data["items"]:
        target = root / item_path(item["id"])
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(
            f"---\nschema_version: 1\nid: {item['kind']}/{item['id']}\n"
            f"type: {_TYPES.get(item['kind'], 'observation')}\n---\n"
            f"# {item['title']}\n\n{item['text']}\n",
            encoding="utf-8",
        )
    for note in distractor_records(distractors, seed=seed, variant="realistic"):
        lines = ["---", "schema_version: 1", f"id: {note['id']}", f"type: {note['type']}"]
        if note["tags"]:
            lines += ["tags:", *(f"  - {tag}" for tag in note["tags"])]
        target = root / note["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("\n".join([*lines, "---"]) + "\n" + note["body"], encoding="utf-8")
    return len(data["items"]) + distractors


Ranker = Callable[[str], list[str]]


def score(queries: list[dict[str, Any]], ranker: Ranker) -> dict[str, dict[str, float]]:
    """Top-1, top-3 and MRR (0 past rank 10) per group, and for the hybrid and keyword
    groups together."""
    rows: dict[str, list[tuple[float, float, float]]] = {}
    for query in queries:
        if query["group"] not in GROUPS:
            continue
        wanted = {item_path(item) for item in query["relevant"]}
        paths = ranker(query["text"])[:DEPTH]
        rank = next((n for n, path in enumerate(paths, start=1) if path in wanted), None)
        row = (float(rank == 1), float(rank is not None and rank <= 3), 1 / rank if rank else 0.0)
        rows.setdefault(query["group"], []).append(row)
    report: dict[str, dict[str, float]] = {}
    combined = {"cross-lingual + paraphrase": HYBRID_GROUPS, "keyword": MONO_GROUPS}
    for name, members in [*((group, (group,)) for group in GROUPS), *combined.items()]:
        found = [row for group in members for row in rows.get(group, [])]
        count = len(found) or 1
        report[name] = {
            "n": len(found),
            "top1": sum(row[0] for row in found) / count,
            "top3": sum(row[1] for row in found) / count,
            "mrr": sum(row[2] for row in found) / count,
        }
    return report


def unanswered(queries: list[dict[str, Any]], ranker: Ranker) -> tuple[int, int]:
    """Of the questions nothing answers: how many, and how many still get a result."""
    none = [query for query in queries if query["group"] == "none"]
    return len(none), sum(1 for query in none if ranker(query["text"]))
