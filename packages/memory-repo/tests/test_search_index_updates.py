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
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_memory.search import search_index
from dsh_memory.search.search import search

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
        del meta["generation"]  # a new random token with every write
        del meta["stale_rows"]  # bookkeeping of the updates since the last merge
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


def corpus(root: Path, count: int) -> None:
    (root / ".sync").mkdir(parents=True)
    rng = random.Random(count)
    for serial in range(count):
        apply(root, "add", rng, serial)


_CRASHING_WRITER = """
import os, sqlite3, sys
connection = sqlite3.connect(sys.argv[1], isolation_level=None)
connection.execute("PRAGMA cache_size = 1")  # every changed page goes to the file at once
connection.execute("BEGIN IMMEDIATE")
connection.execute("DELETE FROM records")
connection.execute("INSERT INTO terms(terms) VALUES ('delete-all')")
os._exit(0)  # killed half-way: the journal is left hot, the file half-changed
"""


def test_a_write_that_crashed_half_way_is_rolled_back(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    corpus(root, 120)
    expected = without_retrieval(search(root, "lock cache", 20, "all", use_index=False))
    search(root, "lock", 20, "all")
    path = search_index.index_path(root)
    subprocess.run([sys.executable, "-c", _CRASHING_WRITER, str(path)], check=True)
    assert path.with_name(path.name + "-journal").stat().st_size > 0
    value = search(root, "lock cache", 20, "all")
    assert value["retrieval"]["mode"] == "index"
    assert without_retrieval(value) == expected
    assert not path.with_name(path.name + "-journal").exists()
    rows = snapshot(path)["records"]
    assert len(rows) == 120


def test_a_damaged_file_is_replaced_without_playing_a_stale_journal_into_it(
    tmp_path: Path,
) -> None:
    root = tmp_path / "memory"
    corpus(root, 40)
    search(root, "lock", 20, "all")
    path = search_index.index_path(root)
    subprocess.run([sys.executable, "-c", _CRASHING_WRITER, str(path)], check=True)
    path.write_bytes(b"not a database" * 200)
    value = search(root, "lock cache", 20, "all")
    assert without_retrieval(value) == without_retrieval(
        search(root, "lock cache", 20, "all", use_index=False)
    )
    assert len(snapshot(path)["records"]) == 40
    assert sorted(p.name for p in (root / ".sync").iterdir()) == ["search-index.sqlite"]


def test_an_index_of_the_earlier_schema_is_built_anew_once(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    corpus(root, 10)
    path = search_index.index_path(root)
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    connection.execute("INSERT INTO meta VALUES ('schema_version', '10')")
    connection.commit()
    connection.close()
    assert search(root, "lock")["retrieval"]["indexState"] == "rebuilt"
    assert search(root, "lock")["retrieval"]["indexState"] == "fresh"
    assert snapshot(path)["meta"]["schema_version"] == "11"


_EDITOR = """
import random, sys
from pathlib import Path
from dsh_memory.search.search import search
root, worker = Path(sys.argv[1]), int(sys.argv[2])
rng = random.Random(worker)
for step in range(12):
    target = root / "handbook" / f"w{worker}-{rng.randrange(4)}.md"
    if step % 5 == 4 and target.exists():
        target.unlink()
    else:
        words = " ".join(rng.choices(["lock", "cache", "v2", "锁", "缓存"], k=4))
        target.write_text(f"---\\nschema_version: 1\\nid: w{worker}\\n---\\n{words} {step}\\n")
    value = search(root, "lock 缓存", 20, "all")
    assert value["retrieval"]["mode"] == "index", value["retrieval"]
"""


@pytest.mark.parametrize("key_mode", ["walk", "listing"], indirect=True)
def test_processes_updating_at_once_leave_the_index_of_the_files(
    tmp_path: Path, key_mode: str
) -> None:
    root = tmp_path / "memory"
    corpus(root, 30)
    search(root, "lock", 20, "all")
    # The children read the bound from their own import: a listing key from the start.
    script = _EDITOR
    if key_mode == "listing":
        script = (
            "from dsh_memory.search import index_key\nindex_key.FAST_KEY_MIN_RECORDS = 0\n" + script
        )
    workers = [
        subprocess.Popen([sys.executable, "-c", script, str(root), str(worker)])
        for worker in range(3)
    ]
    assert [worker.wait(timeout=300) for worker in workers] == [0, 0, 0]
    value = search(root, "lock 缓存 cache", 20, "all")
    assert without_retrieval(value) == without_retrieval(
        search(root, "lock 缓存 cache", 20, "all", use_index=False)
    )
    path = search_index.index_path(root)
    updated = snapshot(path)
    os.rename(path, path.with_name("updated.sqlite"))
    assert search_index.update_index(root) == "built"
    assert snapshot(path) == updated
