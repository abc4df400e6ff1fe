"""The search index's fast keys: large payloads stay exact without git or a Python walk.

At FAST_KEY_MIN_RECORDS records and more a search compares the *listing key* (a ``find``
listing of inodes and ctimes, run beside the query) or, where no trustworthy ``find`` is
installed, the *stat key*. Every kind of change a record can go through is replayed with
each key, and each answer is compared with a full scan of the files. The stat-key runs
search in a child process whose PATH has no ``find`` (or a wrong one): a real boundary.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from dsh_memory.search import index_key, index_listing, search_index
from dsh_memory.search.search import search

Searcher = Callable[[Path, str], tuple[str, list[str]]]
TARGET = "handbook/deep/target.md"


def note(record_id: str, body: str) -> str:
    return f"---\nschema_version: 1\nid: {record_id}\n---\n{body}"


def gnu_find() -> str | None:
    program = shutil.which("find")
    if program is None:
        return None
    version = subprocess.run([program, "--version"], capture_output=True, text=True, check=False)
    return program if "GNU findutils" in version.stdout else None


needs_gnu_find = pytest.mark.skipif(
    gnu_find() is None or index_key.usable_cores() < 2,
    reason="the listing key needs GNU find (-printf) and a second CPU; this host lacks one",
)


def make_large(base: Path) -> Path:
    """FAST_KEY_MIN_RECORDS records in a plain folder (no git repository at all)."""
    root = base / "memory"
    (root / "handbook/deep").mkdir(parents=True)
    (root / "rollouts").mkdir()
    (root / ".sync").mkdir()
    for index in range(index_key.FAST_KEY_MIN_RECORDS):
        (root / f"handbook/n{index}.md").write_text(note(f"n{index}", f"filler {index}\n"))
    (root / TARGET).write_text(note("target", "alpha\n"))
    (root / "handbook/deep/source.md").write_text(note("source", "zeta\n"))
    return root


@pytest.fixture
def large(tmp_path: Path) -> Path:
    return make_large(tmp_path)


def in_process(root: Path, query: str) -> tuple[str, list[str]]:
    value = search(root, query)
    assert value["retrieval"]["mode"] == "index"
    scanned = search(root, query, use_index=False)
    assert value["results"] == scanned["results"] and value["count"] == scanned["count"]
    return value["retrieval"]["indexState"], [result["path"] for result in value["results"]]


_CHILD = """
import json, os, sys
from pathlib import Path
from dsh_memory.search.search import search
root, query = Path(sys.argv[1]), sys.argv[2]
if len(sys.argv) > 3:
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
value = search(root, query)
scanned = search(root, query, use_index=False)
same = value["results"] == scanned["results"] and value["count"] == scanned["count"]
print(json.dumps([value["retrieval"], [r["path"] for r in value["results"]], same]))
"""


def child_process(path_directory: Path) -> Searcher:
    """Search from a fresh Python process whose PATH is only ``path_directory``."""

    def run(root: Path, query: str) -> tuple[str, list[str]]:
        environment = {**os.environ, "PATH": str(path_directory)}
        completed = subprocess.run(
            [sys.executable, "-c", _CHILD, str(root), query],
            capture_output=True,
            text=True,
            env=environment,
            check=True,
        )
        retrieval, paths, same = json.loads(completed.stdout)
        assert retrieval["mode"] == "index" and same, completed.stdout
        return retrieval["indexState"], paths

    return run


def meta_of(root: Path) -> dict[str, str]:
    meta = search_index._index_meta(search_index.index_path(root))
    assert meta is not None
    return meta


def replay_every_change(root: Path, find: Searcher) -> None:
    assert find(root, "alpha") == ("fresh", [TARGET])
    # Edited in place with the same size (truncate and write, as editors save): only the
    # file's own ctime and mtime change, not its directory's.
    (root / TARGET).write_text(note("target", "omega\n"))
    assert find(root, "omega") == ("rebuilt", [TARGET])
    assert find(root, "alpha") == ("fresh", [])
    # A new record in a new nested folder, then a second one beside it.
    (root / "rollouts/new/deeper").mkdir(parents=True)
    (root / "rollouts/new/deeper/added.md").write_text(note("added", "sigma\n"))
    assert find(root, "sigma") == ("rebuilt", ["rollouts/new/deeper/added.md"])
    (root / "rollouts/new/deeper/second.md").write_text(note("second", "sigma\n"))
    assert find(root, "sigma")[1] == [
        "rollouts/new/deeper/added.md",
        "rollouts/new/deeper/second.md",
    ]
    # Removed; renamed.
    (root / "rollouts/new/deeper/second.md").unlink()
    assert find(root, "sigma") == ("rebuilt", ["rollouts/new/deeper/added.md"])
    os.rename(root / "rollouts/new/deeper/added.md", root / "rollouts/new/deeper/moved.md")
    assert find(root, "sigma") == ("rebuilt", ["rollouts/new/deeper/moved.md"])
    # Replaced by a hard link to another record: same size and name, other inode.
    os.link(root / "handbook/deep/source.md", root / "rollouts/new/deeper/link.tmp")
    os.replace(root / "rollouts/new/deeper/link.tmp", root / "rollouts/new/deeper/moved.md")
    assert find(root, "sigma") == ("rebuilt", [])
    assert find(root, "zeta")[1] == ["handbook/deep/source.md", "rollouts/new/deeper/moved.md"]
    # Replaced by a symbolic link, and a new link beside it (links are never records).
    os.symlink(root / "handbook/n1.md", root / "handbook/deep/link.md")
    (root / TARGET).unlink()
    os.symlink(root / "handbook/n2.md", root / TARGET)
    assert find(root, "omega") == ("rebuilt", [])
    assert find(root, "omega") == ("fresh", [])


@needs_gnu_find
def test_large_payload_uses_the_listing_key_and_follows_every_change(large: Path) -> None:
    assert in_process(large, "alpha") == ("rebuilt", [TARGET])
    meta = meta_of(large)
    assert meta.get("listing_key") and "stat_key" not in meta
    replay_every_change(large, in_process)
    assert meta_of(large).get("listing_key")


def test_without_find_the_stat_key_follows_every_change(large: Path, tmp_path: Path) -> None:
    empty = tmp_path / "no-find"
    empty.mkdir()
    find = child_process(empty)
    assert find(large, "alpha") == ("rebuilt", [TARGET])
    meta = meta_of(large)
    assert meta.get("stat_key") and "listing_key" not in meta
    replay_every_change(large, find)


@needs_gnu_find
def test_a_find_that_rounds_ctimes_is_not_trusted(large: Path, tmp_path: Path) -> None:
    """A listing that disagrees with the build's own walk is never stored as a key."""
    fakes = tmp_path / "fake-find"
    fakes.mkdir()
    fake = fakes / "find"
    fake.write_text(
        f"#!{sys.executable}\n"
        "import re, subprocess, sys\n"
        f"out = subprocess.run([{gnu_find()!r}, *sys.argv[1:]], capture_output=True).stdout\n"
        r"sys.stdout.buffer.write(re.sub(rb' (\d+)\.\d+ ', rb' \1.0000000000 ', out))"
        "\n"
    )
    fake.chmod(0o755)
    find = child_process(fakes)
    assert find(large, "alpha") == ("rebuilt", [TARGET])
    meta = meta_of(large)
    assert meta.get("stat_key") and "listing_key" not in meta
    (large / TARGET).write_text(note("target", "omega\n"))
    assert find(large, "omega") == ("rebuilt", [TARGET])


@needs_gnu_find
def test_an_index_keyed_by_find_is_rebuilt_when_find_is_gone(large: Path, tmp_path: Path) -> None:
    assert in_process(large, "alpha") == ("rebuilt", [TARGET])
    assert meta_of(large).get("listing_key")
    empty = tmp_path / "no-find"
    empty.mkdir()
    find = child_process(empty)
    assert find(large, "alpha") == ("rebuilt", [TARGET])
    assert meta_of(large).get("stat_key")
    assert find(large, "alpha") == ("fresh", [TARGET])


def test_a_linked_record_folder_is_walked_every_time(large: Path, tmp_path: Path) -> None:
    """A fast key would stat the link, not the records behind it: the walk is used."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "linked.md").write_text(note("linked", "kappa\n"))
    (large / "rollouts").rmdir()
    (large / "rollouts").symlink_to(outside, target_is_directory=True)
    assert in_process(large, "kappa") == ("rebuilt", ["rollouts/linked.md"])
    meta = meta_of(large)
    assert "listing_key" not in meta and "stat_key" not in meta
    (outside / "linked.md").write_text(note("linked", "gamma\n"))
    assert in_process(large, "gamma") == ("rebuilt", ["rollouts/linked.md"])
    assert in_process(large, "gamma") == ("fresh", ["rollouts/linked.md"])


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


def test_listing_check_rejects_other_formats_and_missing_records(large: Path) -> None:
    from dsh_memory.store.records import walk_payload

    entries = walk_payload(large)
    first = entries[0]
    _size, _mtime, ctime, inode = first.signature.split(":")
    seconds, nanoseconds = divmod(int(ctime), 1_000_000_000)
    line = f"f {inode} {seconds}.{nanoseconds:09d}0 {first.path}\0".encode()
    assert index_listing.listing_agrees(line, entries[:1])
    assert index_listing.listing_agrees(b"d 1 2.0 handbook\0" + line, entries[:1])
    assert not index_listing.listing_agrees(line[:-1], entries[:1])  # not NUL-terminated
    assert not index_listing.listing_agrees(line, entries[:2])  # a record not listed
    rounded = f"f {inode} {seconds}.0000000000 {first.path}\0".encode()
    assert nanoseconds == 0 or not index_listing.listing_agrees(rounded, entries[:1])
    assert not index_listing.listing_agrees(b"garbage\0", entries[:1])


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("stat_groups", "[[1, 2]]"),
        ("listing_key", "0" * 64),
        ("folder_stats", '{"handbook": "many"}'),
        ("folder_stats", "not json"),
        ("record_count", "many"),
    ],
)
def test_a_damaged_meta_row_rebuilds_the_index(
    large: Path, tmp_path: Path, key: str, value: str
) -> None:
    empty = tmp_path / "no-find"
    empty.mkdir()
    # The stat key rows exist only where the index was built without find.
    find = child_process(empty) if key == "stat_groups" else in_process
    find(large, "alpha")
    with sqlite3.connect(search_index.index_path(large)) as connection:
        connection.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))
    connection.close()
    assert find(large, "alpha") == ("rebuilt", [TARGET])
    assert find(large, "alpha") == ("fresh", [TARGET])


def test_a_find_on_a_relative_path_entry_is_never_run(large: Path, tmp_path: Path) -> None:
    """PATH=bin would resolve bin/find again inside the root the listing runs in."""
    marker = tmp_path / "ran"
    for base in (tmp_path, large):
        (base / "bin").mkdir()
        fake = base / "bin/find"
        fake.write_text(f"#!/bin/sh\necho ran > {marker}\n")
        fake.chmod(0o755)
    environment = {**os.environ, "PATH": "bin"}
    completed = subprocess.run(
        [sys.executable, "-c", _CHILD, str(large), "alpha"],
        capture_output=True,
        text=True,
        env=environment,
        cwd=tmp_path,
        check=True,
    )
    retrieval, paths, same = json.loads(completed.stdout)
    assert (retrieval["indexState"], paths, same) == ("rebuilt", [TARGET], True)
    assert not marker.exists()
    assert meta_of(large).get("stat_key")


@needs_gnu_find
def test_a_process_on_one_cpu_stores_the_stat_key(large: Path) -> None:
    """The listing only pays off on a second core: on one it would add work, not hide it."""
    completed = subprocess.run(
        [sys.executable, "-c", _CHILD, str(large), "alpha", "one-cpu"],
        capture_output=True,
        text=True,
        check=True,
    )
    retrieval, paths, same = json.loads(completed.stdout)
    assert (retrieval["indexState"], paths, same) == ("rebuilt", [TARGET], True)
    meta = meta_of(large)
    assert meta.get("stat_key") and "listing_key" not in meta
