"""The program resolver: absolute PATH entries only, never inside the repository."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from dsh_common.errors import GitUnavailableError
from dsh_common.git import GitRunner, hardened_env
from dsh_common.programs import resolve_program, safe_search_path


def program(directory: Path, name: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_relative_and_empty_entries_are_never_searched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    program(tmp_path / "bin", "tool")
    program(tmp_path, "tool")
    program(tmp_path / "node_modules" / ".bin", "tool")
    assert resolve_program("tool", path="./bin:bin::node_modules/.bin:.") is None
    safe = program(tmp_path / "safe", "tool")
    found = resolve_program("tool", path=f"bin::{tmp_path / 'safe'}")
    assert found == str(safe) and os.path.isabs(found)


def test_names_with_a_directory_part_are_refused_and_absolute_ones_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    tool = program(tmp_path / "bin", "tool")
    assert resolve_program("bin/tool", path="/usr/bin") is None
    assert resolve_program("./tool", path="/usr/bin") is None
    assert resolve_program(str(tool)) == str(tool)
    assert resolve_program(str(tmp_path / "bin" / "absent")) is None
    (tmp_path / "dir").mkdir()
    assert resolve_program(str(tmp_path / "dir")) is None
    assert resolve_program("", path="/usr/bin") is None
    assert resolve_program("a\0b", path="/usr/bin") is None


def test_an_absolute_entry_inside_the_repository_is_skipped(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    planted = program(repo / "bin", "tool")
    outside = program(tmp_path / "system", "tool")
    path = f"{planted.parent}{os.pathsep}{outside.parent}"  # direnv's PATH_add bin
    assert resolve_program("tool", path=path) == str(planted)
    assert resolve_program("tool", path=path, outside=repo) == str(outside)


def test_not_executable_files_are_passed_over(tmp_path: Path) -> None:
    plain = tmp_path / "a" / "tool"
    plain.parent.mkdir()
    plain.write_text("not a program")
    good = program(tmp_path / "b", "tool")
    assert resolve_program("tool", path=f"{plain.parent}:{good.parent}") == str(good)


def test_safe_search_path_keeps_only_absolute_entries() -> None:
    assert safe_search_path("./bin:bin::/usr/bin:node_modules/.bin:/bin:") == "/usr/bin:/bin"


def test_safe_search_path_outside_a_repository_drops_its_entries(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "bin").mkdir(parents=True)
    (tmp_path / "link").symlink_to(repo / "bin")  # a spelling of the same folder
    path = f"{repo / 'bin'}:{tmp_path / 'link'}:{repo}:/usr/bin:{tmp_path / 'repo-other'}"
    assert safe_search_path(path, outside=repo) == f"/usr/bin:{tmp_path / 'repo-other'}"
    assert hardened_env(transport="file", outside=repo)["PATH"] == safe_search_path(
        os.environ["PATH"], outside=repo
    )


def test_git_gets_a_safe_path_and_a_runner_refuses_git_inside_its_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", f"./bin::{os.environ['PATH']}")
    assert hardened_env()["PATH"] == safe_search_path(os.environ["PATH"])
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "sub").mkdir()
    program(repo / "tools", "git-only-here")
    monkeypatch.setenv("PATH", str(repo / "tools"))
    # Run from a sub-directory: the whole work tree, not just the directory, is fenced off.
    with pytest.raises(GitUnavailableError, match="relative and empty PATH entries"):
        GitRunner(repo / "sub", git="git-only-here").run(["--version"])
