from __future__ import annotations

import os
from pathlib import Path

import pytest
from dsh_test_support import gitcmd

from dsh_memory.errors import RepoUnavailableError, UnsafeLayoutError
from dsh_memory.store.root import inspect_layout, live_payload_files, resolve_memory_root


def test_root_option_wins_over_environment(tmp_path: Path) -> None:
    env = {"DSH_MEMORY_ROOT": "/elsewhere", "DSH_HOME": "/home"}
    assert resolve_memory_root(tmp_path / "x", env=env) == tmp_path / "x"


def test_memory_root_variable_wins_over_dsh_home() -> None:
    env = {"DSH_MEMORY_ROOT": "/m", "DSH_HOME": "/h"}
    assert resolve_memory_root(None, env=env) == Path("/m")


def test_dsh_home_gives_storages_memory() -> None:
    assert resolve_memory_root(None, env={"DSH_HOME": "/h"}) == Path("/h/storages/memory")


def test_home_fallback_is_dot_dsh() -> None:
    assert resolve_memory_root(None, env={"HOME": "/u"}) == Path("/u/.dsh/storages/memory")


def test_missing_root_is_repo_unavailable(tmp_path: Path) -> None:
    with pytest.raises(RepoUnavailableError):
        inspect_layout(tmp_path / "absent")


def test_directory_without_git_is_repo_unavailable(tmp_path: Path) -> None:
    with pytest.raises(RepoUnavailableError):
        inspect_layout(tmp_path)


def test_symlinked_root_is_unsafe(memory_root: Path, tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(memory_root)
    with pytest.raises(UnsafeLayoutError):
        inspect_layout(link)


def test_root_nested_in_another_repository_is_unsafe(tmp_path: Path) -> None:
    outer = tmp_path / "project"
    (outer / "memory").mkdir(parents=True)
    gitcmd.init(outer)
    with pytest.raises(UnsafeLayoutError):
        inspect_layout(outer / "memory")


def test_symlink_inside_archive_is_unsafe(memory_root: Path, tmp_path: Path) -> None:
    (memory_root / "archive" / "escape").symlink_to(tmp_path)
    with pytest.raises(UnsafeLayoutError):
        inspect_layout(memory_root)


def test_symlinked_sync_directory_is_unsafe(memory_root: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    os.rename(memory_root / ".sync", tmp_path / "old-sync")
    (memory_root / ".sync").symlink_to(target)
    with pytest.raises(UnsafeLayoutError):
        inspect_layout(memory_root)


def test_symlinked_summary_is_unsafe(memory_root: Path, tmp_path: Path) -> None:
    (memory_root / "summary.md").unlink()
    (memory_root / "summary.md").symlink_to(tmp_path / "secret")
    with pytest.raises(UnsafeLayoutError):
        inspect_layout(memory_root)


def test_live_payload_files_lists_nested_records(memory_root: Path) -> None:
    (memory_root / "handbook" / "a").mkdir()
    (memory_root / "handbook" / "a" / "b.md").write_text("x")
    assert live_payload_files(memory_root) == ["handbook/a/b.md", "summary.md"]
