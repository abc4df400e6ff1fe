"""A repository shaped by the earlier Node tool works with ours."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from dsh_test_support.gitcmd import git

from dsh_memory.service import MemoryService

RUN_ID = "20260819T120000Z-a1b2c3d4"


def _earlier_tool_sync_run(root: Path, write_file: Callable[..., Path]) -> str:
    """A sync run as the earlier tool journals it: apply commit, then a journal commit."""
    write_file(root, "scripts/filter_session.py", "#!/usr/bin/env python3\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "Refresh managed memory templates")
    recovery = git(root, "rev-parse", "HEAD").strip()
    record_text = "---\nschema_version: 1\nid: user/preferences\ntype: preference\n---\npnpm\n"
    write_file(root, "handbook/preferences.md", record_text)
    git(root, "add", "handbook")
    git(root, "commit", "-q", "-m", f"DPSK memory sync applied: {RUN_ID}")
    apply = git(root, "rev-parse", "HEAD").strip()
    record = {
        "schema_version": 1,
        "run_id": RUN_ID,
        "operation": "sync",
        "status": "applied",
        "started_at": "2026-08-19T12:00:00Z",
        "finished_at": "2026-08-19T12:00:01Z",
        "candidate_sessions": 1,
        "processed_sessions": 1,
        "skipped_sessions": 0,
        "changed_paths": ["handbook/preferences.md"],
        "recovery_commit": recovery,
        "apply_commit": apply,
        "error_code": None,
        "phase": "complete",
        "staging_digest": "sha256:abc",
        "duration_ms": 1234,
        "rejected_file_count": 0,
        "changed_path_count": 1,
    }
    write_file(root, f".sync/runs/{RUN_ID}.json", json.dumps(record, separators=(",", ":")))
    write_file(root, ".sync/last-run.json", json.dumps(record, separators=(",", ":")))
    git(root, "add", ".sync")
    git(root, "commit", "-q", "-m", f"DPSK memory journal: {RUN_ID}")
    return apply


def test_earlier_tools_run_is_listed_and_reported(
    memory_root: Path, write_file: Callable[..., Path]
) -> None:
    apply = _earlier_tool_sync_run(memory_root, write_file)
    runs = MemoryService().runs()["value"]["runs"]
    assert [r["run_id"] for r in runs] == [RUN_ID]
    assert MemoryService().status()["value"]["lastRun"] == {
        "runId": RUN_ID,
        "status": "applied",
        "changedFileCount": 1,
        "applyCommit": apply,
    }


def test_earlier_tools_sync_run_rolls_back(
    memory_root: Path, write_file: Callable[..., Path]
) -> None:
    _earlier_tool_sync_run(memory_root, write_file)
    result = MemoryService().rollback(RUN_ID, "ROLLBACK_MEMORY")
    assert result["ok"] is True
    assert not (memory_root / "handbook" / "preferences.md").exists()
    assert (memory_root / "scripts" / "filter_session.py").exists()


def test_clear_keeps_earlier_tools_scripts(
    memory_root: Path, write_file: Callable[..., Path]
) -> None:
    _earlier_tool_sync_run(memory_root, write_file)
    assert MemoryService().clear("DELETE_MEMORY")["value"]["clearedFileCount"] == 1
    assert git(memory_root, "show", "HEAD:scripts/filter_session.py").startswith("#!")


def test_our_journal_is_what_the_earlier_tool_reads(memory_root: Path) -> None:
    (memory_root / "handbook" / "x.md").write_text("x\n")
    MemoryService().migrate_legacy(False)
    run = MemoryService().runs()["value"]["runs"][0]
    text = (memory_root / ".sync" / "runs" / f"{run['run_id']}.json").read_text()
    assert json.loads(text) == run
    assert text == json.dumps(run, separators=(",", ":"), ensure_ascii=False) + "\n"
