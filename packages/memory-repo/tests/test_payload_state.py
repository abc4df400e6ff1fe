"""The payload state the search index keys its freshness on, without git status."""

from __future__ import annotations

from pathlib import Path

import pytest
from dsh_test_support import gitcmd
from dsh_test_support.gitcmd import git

from dsh_memory.search import search_index
from dsh_memory.search.search import search
from dsh_memory.store import payload_state


def note(record_id: str, body: str) -> str:
    return f"---\nschema_version: 1\nid: {record_id}\n---\n{body}"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "memory"
    (root / "handbook/deep").mkdir(parents=True)
    (root / "rollouts").mkdir()
    (root / ".sync").mkdir()
    (root / "handbook/deep/tracked.md").write_text(note("tracked", "alpha\n"))
    gitcmd.init(root)
    gitcmd.commit_all(root, "init")
    (root / "rollouts/loose.md").write_text(note("loose", "beta\n"))
    return root


def test_payload_directories_lists_every_folder_below_the_record_folders(repo: Path) -> None:
    (repo / "archive").mkdir()
    assert payload_state.payload_directories(repo) == [
        "archive",
        "handbook",
        "handbook/deep",
        "rollouts",
    ]


def test_large_payload_index_follows_edits_through_the_fast_key(repo: Path) -> None:
    for index in range(search_index.FAST_KEY_MIN_RECORDS):
        (repo / f"handbook/n{index}.md").write_text(note(f"n{index}", f"filler {index}\n"))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "many")
    assert search(repo, "alpha")["retrieval"]["indexState"] == "rebuilt"
    assert search(repo, "alpha")["retrieval"]["indexState"] == "fresh"
    # Same size, in place: only the fast key (ctime, inode) can tell.
    (repo / "handbook/deep/tracked.md").write_text(note("tracked", "omega\n"))
    value = search(repo, "omega")
    assert value["retrieval"] == {"mode": "index", "indexState": "rebuilt"}
    assert [result["path"] for result in value["results"]] == ["handbook/deep/tracked.md"]
    (repo / "rollouts/loose.md").write_text(note("loose", "sigma\n"))
    assert search(repo, "sigma")["count"] == 1
