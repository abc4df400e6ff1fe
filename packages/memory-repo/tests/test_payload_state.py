"""The git-based freshness key: it changes for every kind of record change it promises."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from dsh_memory import payload_state, search_index
from dsh_memory.search import search

IDENTITY = ["-c", "user.name=Test", "-c", "user.email=test@example.com"]


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *IDENTITY, *args], cwd=root, check=True, capture_output=True)


def note(record_id: str, body: str) -> str:
    return f"---\nschema_version: 1\nid: {record_id}\n---\n{body}"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "memory"
    (root / "handbook/deep").mkdir(parents=True)
    (root / "rollouts").mkdir()
    (root / ".sync").mkdir()
    (root / "handbook/deep/tracked.md").write_text(note("tracked", "alpha\n"))
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    (root / "rollouts/loose.md").write_text(note("loose", "beta\n"))
    return root


def key(root: Path) -> str | None:
    directories = payload_state.payload_directories(root)
    tracked = payload_state.tracked_records(root)
    assert tracked is not None
    untracked = ["rollouts/loose.md"] if (root / "rollouts/loose.md").exists() else []
    return payload_state.fast_key(root, directories, untracked)


def test_key_is_stable_without_changes(repo: Path) -> None:
    assert key(repo) is not None
    assert key(repo) == key(repo)


def test_key_changes_when_a_tracked_record_is_edited_in_place(repo: Path) -> None:
    before = key(repo)
    (repo / "handbook/deep/tracked.md").write_text(note("tracked", "gamma\n"))
    assert key(repo) != before


def test_key_changes_when_an_untracked_record_is_edited_in_place(repo: Path) -> None:
    before = key(repo)
    (repo / "rollouts/loose.md").write_text(note("loose", "delta\n"))
    assert key(repo) != before


def test_key_changes_when_a_record_is_added_in_a_subfolder(repo: Path) -> None:
    before = key(repo)
    (repo / "handbook/deep/new.md").write_text(note("new", "epsilon\n"))
    assert key(repo) != before


def test_key_changes_when_a_change_is_committed(repo: Path) -> None:
    (repo / "handbook/deep/tracked.md").write_text(note("tracked", "zeta\n"))
    git(repo, "add", "-A")
    before = key(repo)
    git(repo, "commit", "-qm", "edit")
    assert key(repo) != before


def test_root_without_git_has_no_key(tmp_path: Path) -> None:
    (tmp_path / "handbook").mkdir()
    assert payload_state.fast_key(tmp_path, ["handbook"], []) is None
    assert payload_state.tracked_records(tmp_path) is None


def test_large_payload_index_follows_edits_through_the_fast_key(repo: Path) -> None:
    for index in range(search_index.FAST_KEY_MIN_RECORDS):
        (repo / f"handbook/n{index}.md").write_text(note(f"n{index}", f"filler {index}\n"))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "many")
    assert search(repo, "alpha")["retrieval"]["indexState"] == "rebuilt"
    assert search(repo, "alpha")["retrieval"]["indexState"] == "fresh"
    # Same size, in place: only git's status (and the key) can tell.
    (repo / "handbook/deep/tracked.md").write_text(note("tracked", "omega\n"))
    value = search(repo, "omega")
    assert value["retrieval"] == {"mode": "index", "indexState": "rebuilt"}
    assert [result["path"] for result in value["results"]] == ["handbook/deep/tracked.md"]
    (repo / "rollouts/loose.md").write_text(note("loose", "sigma\n"))
    assert search(repo, "sigma")["count"] == 1
