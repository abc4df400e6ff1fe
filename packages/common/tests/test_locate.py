"""Where a command's data is by default: real directories, a real git repository."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh_common.locate import ancestor_with, canonical_directory, default_workspace, git_top_level


def test_git_top_level_from_a_subdirectory(repo: Path) -> None:
    (repo / "a" / "b").mkdir(parents=True)
    assert git_top_level(repo / "a" / "b") == repo.resolve()
    assert default_workspace(repo / "a" / "b") == str(repo.resolve())


def test_a_worktree_git_file_counts(tmp_path: Path) -> None:
    (tmp_path / "wt" / "src").mkdir(parents=True)
    (tmp_path / "wt" / ".git").write_text("gitdir: /elsewhere\n")
    assert git_top_level(tmp_path / "wt" / "src") == (tmp_path / "wt").resolve()


def test_outside_git_the_directory_itself(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    if git_top_level(plain) is None:  # tmp is not inside a repository on this machine
        assert default_workspace(plain) == str(plain.resolve())
    # a .git that is a symlink is not taken as a repository
    (plain / "inner").mkdir()
    (plain / "inner" / ".git").symlink_to(tmp_path)
    assert git_top_level(plain / "inner") != (plain / "inner").resolve()


def test_default_workspace_uses_the_current_directory(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo / ".git")  # inside the repository's own folder: still its top
    assert default_workspace() == str(repo.resolve())


def test_canonical_directory(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "x")
    real = str((tmp_path / "x").resolve())
    for spelling in (f"{tmp_path}/x/", f"{tmp_path}/x/../x", f"{tmp_path}/link"):
        assert canonical_directory(spelling) == real
    assert canonical_directory("not-a-directory-name") == "not-a-directory-name"
    assert canonical_directory("") == ""


def test_ancestor_with(tmp_path: Path) -> None:
    (tmp_path / "top" / "docs" / "notes").mkdir(parents=True)
    (tmp_path / "top" / "sub" / "deeper").mkdir(parents=True)
    found = ancestor_with(tmp_path / "top" / "sub" / "deeper", "docs/notes")
    assert found == (tmp_path / "top").resolve()
    assert ancestor_with(tmp_path / "top", "docs/notes") is None  # proper ancestors only
