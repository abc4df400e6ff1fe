"""The search index updated in place for what changed equals one built from scratch.

Random sequences of record additions, edits (same size and not), removals, renames across
folders and records turning invalid run against each freshness key (the walk of a small
payload, the ``find`` listing, the stat key). After every step the indexed search must
equal a scan of the files; at the end the incrementally updated index must hold exactly what
a fresh build of the same files holds - every row, every meta value and every term's
document count.
"""

from __future__ import annotations

import os
import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_memory import search_index
from dsh_memory.search import search

_WORDS = [
    "cache",
    "lock",
    "rename",
    "v2",
    "缓存",
    "雪崩",
    "目录锁",
    "原子替换",
    "的",
    "锁",
    "policy",
]
_FOLDERS = ["handbook", "rollouts", "archive", "handbook/deep", "rollouts/a/b"]


def note(record_id: str, body: str) -> str:
    return f"---\nschema_version: 1\nid: {record_id}\ntype: fact\n---\n{body}\n"


def snapshot(path: Path) -> dict[str, Any]:
    """Everything the index holds, independent of rowids."""
    connection = sqlite3.connect(path)
    try:
        records = connection.execute(
            "SELECT folder, path, signature, valid, record_id, expires_at, expires_on, length,"
            " head, body FROM records ORDER BY folder, path"
        ).fetchall()
        meta = dict(connection.execute("SELECT key, value FROM meta"))
        connection.execute("INSERT INTO terms(terms) VALUES ('integrity-check')")
        connection.execute("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, terms, row)")
        vocabulary = connection.execute("SELECT term, doc FROM vocab ORDER BY term").fetchall()
        listing: list[Any] = []
        if "listing_chunks" in meta:
            listing = connection.execute("SELECT digest, data FROM listing").fetchall()
    finally:
        connection.close()
    return {"records": records, "meta": meta, "terms": vocabulary, "listing": listing}


def records_of(root: Path) -> list[str]:
    return sorted(
        str(path.relative_to(root))
        for folder in ("handbook", "rollouts", "archive")
        for path in (root / folder).rglob("*.md")
    )


def apply(root: Path, operation: str, rng: random.Random, serial: int) -> None:
    existing = records_of(root)
    if operation == "add" or not existing:
        folder = rng.choice(_FOLDERS)
        (root / folder).mkdir(parents=True, exist_ok=True)
        words = " ".join(rng.choices(_WORDS, k=rng.randint(1, 6)))
        (root / folder / f"n{serial}.md").write_text(note(f"n{serial}", words))
        return
    target = root / rng.choice(existing)
    if operation == "edit":
        target.write_text(note(f"e{serial}", " ".join(rng.choices(_WORDS, k=rng.randint(1, 6)))))
    elif operation == "edit_same_size":
        data = target.read_bytes()
        # Same size, other bytes (a word of the body becomes another): only the ctime and
        # mtime tell.
        swapped = data.replace(b"lock", b"loch") if b"lock" in data else data.replace(b"v2", b"v3")
        target.write_bytes(swapped)
    elif operation == "remove":
        target.unlink()
    elif operation == "rename":
        folder = rng.choice(_FOLDERS)
        (root / folder).mkdir(parents=True, exist_ok=True)
        os.rename(target, root / folder / f"r{serial}.md")
    elif operation == "invalid":
        target.write_text("---\nschema_version: 2\nid: broken\n---\nlock cache\n")


def without_retrieval(value: dict[str, object]) -> dict[str, object]:
    return {key: item for key, item in value.items() if key != "retrieval"}


_OPERATIONS = ["add", "add", "edit", "edit_same_size", "remove", "rename", "invalid"]


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    seed=st.integers(min_value=0, max_value=10_000),
    start=st.integers(min_value=0, max_value=8),
    operations=st.lists(st.sampled_from(_OPERATIONS), min_size=1, max_size=10),
    query=st.lists(st.sampled_from(_WORDS), min_size=1, max_size=3).map(" ".join),
    scope=st.sampled_from(["active", "archive", "all"]),
)
def test_incremental_updates_equal_a_fresh_build_and_the_scan(
    tmp_path_factory: pytest.TempPathFactory,
    key_mode: str,
    *,
    seed: int,
    start: int,
    operations: list[str],
    query: str,
    scope: str,
) -> None:
    root = tmp_path_factory.mktemp("updates")
    (root / ".sync").mkdir()
    rng = random.Random(seed)
    for serial in range(start):
        apply(root, "add", rng, serial)
    search(root, query, 20, scope)
    for serial, operation in enumerate(operations, start=start):
        apply(root, operation, rng, serial)
        indexed = search(root, query, 20, scope)
        assert indexed["retrieval"]["mode"] == "index"
        assert indexed["retrieval"]["indexState"] in ("fresh", "rebuilt")
        assert without_retrieval(indexed) == without_retrieval(
            search(root, query, 20, scope, use_index=False)
        )
    path = search_index.index_path(root)
    updated = snapshot(path)
    if key_mode == "listing":
        assert "listing_key" in updated["meta"]
    os.rename(path, path.with_name("updated.sqlite"))
    assert search_index.update_index(root) == "built"
    assert snapshot(path) == updated
