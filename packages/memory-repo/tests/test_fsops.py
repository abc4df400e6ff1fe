from __future__ import annotations

import os
from pathlib import Path

import pytest

from dsh_memory.errors import UnsafeLayoutError
from dsh_memory.store import fsops


def test_remove_refuses_directory_swapped_for_symlink(memory_root: Path, tmp_path: Path) -> None:
    # The race: inspection saw a real handbook/, then it was swapped for a link outside.
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.md").write_text("precious")
    os.rename(memory_root / "handbook", tmp_path / "real-handbook")
    (memory_root / "handbook").symlink_to(outside)
    with pytest.raises(UnsafeLayoutError):
        fsops.remove_file(memory_root, "handbook/a.md")
    assert (outside / "a.md").read_text() == "precious"


def test_replace_refuses_parent_swapped_for_symlink(memory_root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    os.rename(memory_root / "rollouts", tmp_path / "real")
    (memory_root / "rollouts").symlink_to(outside)
    with pytest.raises(UnsafeLayoutError):
        fsops.replace_file(memory_root, "rollouts/x.md", b"data")
    assert list(outside.iterdir()) == []


def test_replace_does_not_write_through_hard_link(memory_root: Path, tmp_path: Path) -> None:
    target = memory_root / "handbook" / "a.md"
    target.write_text("old")
    other = tmp_path / "other"
    os.link(target, other)
    fsops.replace_file(memory_root, "handbook/a.md", b"new")
    assert target.read_text() == "new"
    assert other.read_text() == "old"


def test_replace_replaces_final_symlink_without_following(
    memory_root: Path, tmp_path: Path
) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep")
    (memory_root / "handbook" / "l.md").symlink_to(victim)
    fsops.replace_file(memory_root, "handbook/l.md", b"new")
    assert victim.read_text() == "keep"
    assert not (memory_root / "handbook" / "l.md").is_symlink()


def test_prune_removes_only_empty_subdirectories(memory_root: Path) -> None:
    (memory_root / "archive" / "a" / "b").mkdir(parents=True)
    (memory_root / "archive" / "keep").mkdir()
    (memory_root / "archive" / "keep" / "f.md").write_text("x")
    fsops.prune_empty_directories(memory_root, "archive")
    assert sorted(p.name for p in (memory_root / "archive").iterdir()) == ["keep"]
