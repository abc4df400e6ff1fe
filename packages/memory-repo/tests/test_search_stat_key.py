"""The search index's stat key: large payloads stay exact without git or a directory walk."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from dsh_memory import search_index
from dsh_memory.search import search


def note(record_id: str, body: str) -> str:
    return f"---\nschema_version: 1\nid: {record_id}\n---\n{body}"


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """FAST_KEY_MIN_RECORDS records in a plain folder (no git repository at all)."""
    root = tmp_path_factory.mktemp("stat") / "memory"
    (root / "handbook/deep").mkdir(parents=True)
    (root / "rollouts").mkdir()
    (root / ".sync").mkdir()
    for index in range(search_index.FAST_KEY_MIN_RECORDS):
        (root / f"handbook/n{index}.md").write_text(note(f"n{index}", f"filler {index}\n"))
    (root / "handbook/deep/target.md").write_text(note("target", "alpha\n"))
    return root


def paths(root: Path, query: str) -> tuple[str, list[str]]:
    value = search(root, query)
    assert value["retrieval"]["mode"] == "index"
    return value["retrieval"]["indexState"], [result["path"] for result in value["results"]]


def test_large_payload_uses_the_stat_key_and_follows_every_change(large: Path) -> None:
    search(large, "alpha")
    meta = search_index._index_meta(search_index.index_path(large))
    assert meta is not None and meta.get("stat_key")
    assert paths(large, "alpha") == ("fresh", ["handbook/deep/target.md"])
    # Same size, in place: only the file's own mtime/ctime can tell.
    (large / "handbook/deep/target.md").write_text(note("target", "omega\n"))
    assert paths(large, "omega") == ("rebuilt", ["handbook/deep/target.md"])
    # A new record in a new nested folder: its parent's mtime changes.
    (large / "rollouts/new/deeper").mkdir(parents=True)
    (large / "rollouts/new/deeper/added.md").write_text(note("added", "sigma\n"))
    assert paths(large, "sigma") == ("rebuilt", ["rollouts/new/deeper/added.md"])
    # A record added inside that folder later: that folder's mtime changes.
    (large / "rollouts/new/deeper/second.md").write_text(note("second", "sigma\n"))
    assert paths(large, "sigma")[1] == [
        "rollouts/new/deeper/added.md",
        "rollouts/new/deeper/second.md",
    ]
    # Removed, and replaced by a symbolic link (links are never records).
    (large / "rollouts/new/deeper/second.md").unlink()
    assert paths(large, "sigma")[1] == ["rollouts/new/deeper/added.md"]
    os.symlink(large / "handbook/n1.md", large / "handbook/deep/link.md")
    (large / "handbook/deep/target.md").unlink()
    os.symlink(large / "handbook/n2.md", large / "handbook/deep/target.md")
    assert paths(large, "omega") == ("rebuilt", [])
    assert paths(large, "omega") == ("fresh", [])


def test_stat_key_changes_with_a_directory_and_is_stable_otherwise(large: Path) -> None:
    files = ["handbook/n0.md", "handbook/n1.md"]
    groups = search_index.stat_groups(["handbook", "handbook/deep"], files)
    assert groups == [["", ["handbook", "handbook/deep"]], ["handbook", ["n0.md", "n1.md"]]]
    before = search_index.stat_key(large, groups)
    assert search_index.stat_key(large, groups) == before
    (large / "handbook/deep/extra.txt").write_text("not a record, but the folder changed\n")
    assert search_index.stat_key(large, groups) != before
    (large / "handbook/deep/extra.txt").unlink()
    missing = search_index.stat_groups(["missing/folder"], files)
    assert search_index.stat_key(large, missing) != search_index.stat_key(large, missing[1:])
    # chmod changes only the ctime: still seen.
    between = search_index.stat_key(large, groups)
    os.chmod(large / "handbook/n0.md", 0o600)
    assert search_index.stat_key(large, groups) != between


def test_a_damaged_stat_key_row_rebuilds_the_index(large: Path) -> None:
    search(large, "filler")
    with sqlite3.connect(search_index.index_path(large)) as connection:
        connection.execute("UPDATE meta SET value = '[[1, 2]]' WHERE key = 'stat_groups'")
    connection.close()
    value = search(large, "filler")
    assert value["retrieval"] == {"mode": "index", "indexState": "rebuilt"}
    assert search(large, "filler")["retrieval"]["indexState"] == "fresh"
