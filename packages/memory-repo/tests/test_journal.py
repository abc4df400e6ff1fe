from __future__ import annotations

import json
import stat
from pathlib import Path

from dsh_test_support.gitcmd import git

from dsh_memory.service import MemoryService
from dsh_memory.write import journal


def test_two_runs_in_one_second_get_distinct_ids(memory_root: Path) -> None:
    (memory_root / "handbook" / "a.md").write_text("a\n")
    MemoryService().migrate_legacy(False)
    MemoryService().migrate_legacy(False)
    ids = [r["run_id"] for r in MemoryService().runs()["value"]["runs"]]
    assert len(set(ids)) == 2
    assert [r["status"] for r in MemoryService().runs()["value"]["runs"]] == [
        "no_change",
        "applied",
    ]


def test_run_record_is_compact_owner_only_json_with_all_fields(memory_root: Path) -> None:
    MemoryService().migrate_legacy(False)
    run_id = MemoryService().runs()["value"]["runs"][0]["run_id"]
    path = memory_root / ".sync" / "runs" / f"{run_id}.json"
    text = path.read_text()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert ", " not in text and ": " not in text
    assert list(json.loads(text)) == [
        "schema_version",
        "run_id",
        "operation",
        "status",
        "started_at",
        "finished_at",
        "candidate_sessions",
        "processed_sessions",
        "skipped_sessions",
        "changed_paths",
        "recovery_commit",
        "apply_commit",
        "error_code",
        "phase",
        "staging_digest",
        "duration_ms",
        "rejected_file_count",
        "changed_path_count",
    ]


def test_last_run_is_subset_of_newest_record(memory_root: Path) -> None:
    MemoryService().migrate_legacy(False)
    last = json.loads((memory_root / ".sync" / "last-run.json").read_text())
    assert "candidate_sessions" not in last
    assert last["operation"] == "migrate"


def test_journal_commit_touches_only_sync(memory_root: Path) -> None:
    MemoryService().migrate_legacy(False)
    changed = git(memory_root, "show", "--name-only", "--format=%s", "HEAD").split()
    assert changed[:3] == ["DPSK", "memory", "journal:"]
    assert all(p.startswith(".sync/") for p in changed[4:])


def test_valid_run_ids() -> None:
    assert journal.is_valid_run_id("20260819T120000Z-a1b2c3d4")
    assert journal.is_valid_run_id("20260819T120000Z-clear-123")
    assert not journal.is_valid_run_id("../20260819T120000Z-x")
    assert not journal.is_valid_run_id("20260819T120000Z-a/b")
