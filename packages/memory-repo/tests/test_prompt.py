from __future__ import annotations

from pathlib import Path

from dsh_memory.prompt import STATIC_INSTRUCTIONS, SUMMARY_BUDGET_BYTES, UNTRUSTED_MARKER
from dsh_memory.service import MemoryService


def test_prompt_includes_marked_summary_snapshot(memory_root: Path) -> None:
    (memory_root / "summary.md").write_text("# Prefers pnpm\n")
    section = MemoryService().prompt_section()
    assert section.startswith(STATIC_INSTRUCTIONS)
    assert UNTRUSTED_MARKER in section
    assert "<summary_snapshot>\n# Prefers pnpm\n</summary_snapshot>" in section


def test_prompt_snapshot_is_bounded_on_character_boundary(memory_root: Path) -> None:
    (memory_root / "summary.md").write_text("长" * 10000)
    section = MemoryService().prompt_section()
    snapshot = section.split("<summary_snapshot>\n", 1)[1].split("\n</summary_snapshot>")[0]
    assert len(snapshot.encode()) <= SUMMARY_BUDGET_BYTES
    assert snapshot == "长" * (SUMMARY_BUDGET_BYTES // 3)


def test_prompt_falls_back_to_static_text_when_summary_unreadable(memory_root: Path) -> None:
    (memory_root / "summary.md").write_bytes(b"\xff\xfe not utf-8")
    assert MemoryService().prompt_section() == STATIC_INSTRUCTIONS


def test_prompt_static_text_without_repository(tmp_path: Path) -> None:
    assert MemoryService(tmp_path / "absent").prompt_section() == STATIC_INSTRUCTIONS


def test_prompt_is_empty_when_memory_disabled(memory_root: Path) -> None:
    (memory_root / "summary.md").write_text("# s\n")
    MemoryService().set_enabled(False)
    assert MemoryService().prompt_section() == ""


def test_prompt_follows_setting_change_immediately(memory_root: Path) -> None:
    service = MemoryService()
    service.set_enabled(False)
    assert service.prompt_section() == ""
    service.set_enabled(True)
    assert service.prompt_section() == STATIC_INSTRUCTIONS
