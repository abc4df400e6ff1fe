"""Clear holds its record folders open, so a folder renamed away mid-clear is never a
success.

test_clear_race.py races a real renamer against clear; under load a clear could report
success when every path listing happened while ``handbook/`` was renamed away. These tests
replay that interleaving step by step on the mechanism that closes it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dsh_memory.errors import UnsafeLayoutError
from dsh_memory.store.held_folders import files_left, hold_record_folders
from dsh_memory.store.root import live_payload_files


def _payload(tmp_path: Path) -> Path:
    root = tmp_path / "memory"
    (root / "handbook" / "deep").mkdir(parents=True)
    (root / "handbook" / "a.md").write_text("a\n")
    (root / "handbook" / "deep" / "b.md").write_text("b\n")
    (root / "rollouts").mkdir()
    return root


def test_a_folder_renamed_away_still_shows_what_stayed_in_it(tmp_path: Path) -> None:
    root = _payload(tmp_path)
    with hold_record_folders(root, ["handbook/a.md"]) as held:
        os.rename(root / "handbook", tmp_path / "away")
        # What the path-based listing sees at this instant: no records at all.
        assert live_payload_files(root) == []
        assert files_left(held) == ["handbook/a.md", "handbook/deep/b.md"]
        os.rename(tmp_path / "away", root / "handbook")
        assert files_left(held) == ["handbook/a.md", "handbook/deep/b.md"]


def test_emptied_or_deleted_folders_hold_nothing(tmp_path: Path) -> None:
    root = _payload(tmp_path)
    with hold_record_folders(root, []) as held:
        assert set(held) == {"handbook", "rollouts"}
        (root / "handbook" / "a.md").unlink()
        (root / "handbook" / "deep" / "b.md").unlink()
        assert files_left(held) == []  # empty sub-folders are not records
        (root / "handbook" / "deep").rmdir()
        (root / "handbook").rmdir()  # pruned by clear: the held folder is gone
        assert files_left(held) == []


def test_names_clear_leaves_alone_are_not_counted(tmp_path: Path) -> None:
    root = _payload(tmp_path)
    (root / "handbook" / "a.md").unlink()
    (root / "handbook" / "deep" / "b.md").unlink()
    os.close(os.open(os.fsencode(root / "handbook") + b"/bad-\xff.md", os.O_CREAT | os.O_WRONLY))
    with hold_record_folders(root, []) as held:
        assert files_left(held) == []


def test_a_missing_folder_head_has_records_in_is_refused(tmp_path: Path) -> None:
    root = _payload(tmp_path)
    (root / "rollouts").rmdir()
    # archive/ is missing too, but HEAD has nothing in it: only rollouts/ is refused.
    head = ["rollouts/r.md", "handbook/a.md", "summary.md"]
    with (
        pytest.raises(UnsafeLayoutError, match="rollouts/ is missing"),
        hold_record_folders(root, head),
    ):
        pass
    with hold_record_folders(root, ["handbook/a.md"]) as held:
        assert set(held) == {"handbook"}
    os.rename(root / "handbook", tmp_path / "away")
    with (
        pytest.raises(UnsafeLayoutError, match="handbook/ is missing"),
        hold_record_folders(root, ["handbook/a.md"]),
    ):
        pass


def test_a_link_in_a_folders_place_is_not_held(tmp_path: Path) -> None:
    root = _payload(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "x.md").write_text("x\n")
    (root / "archive").symlink_to(tmp_path / "elsewhere")
    with hold_record_folders(root, ["archive/x.md"]) as held:
        # Left to the payload walk, which refuses links; never followed from here.
        assert "archive" not in held
        assert files_left(held) == ["handbook/a.md", "handbook/deep/b.md"]
