from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from dsh_test_support.gitcmd import git

from dsh_memory.service import MemoryService

Write = Callable[..., Path]


def _migrated(root: Path, write_file: Write) -> dict[str, object]:
    write_file(root, "handbook/old.md", "body\n")
    write_file(root, "handbook/second.md", "two\n")
    value: dict[str, object] = MemoryService().migrate_legacy(False)["value"]
    return value


def _run_id(operation: str) -> str:
    runs = MemoryService().runs(operation=operation)["value"]["runs"]
    run_id: str = runs[0]["run_id"]
    return run_id


def test_rollback_checks_confirmation_first() -> None:
    result = MemoryService().rollback("nope", "yes")
    assert result == {"ok": False, "error": {"code": "rollback-invalid-confirmation"}}


def test_rollback_unknown_run_is_not_found(memory_root: Path) -> None:
    result = MemoryService().rollback("20260101T000000Z-migrate-1", "ROLLBACK_MEMORY")
    assert result["error"] == {"code": "rollback-run-not-found"}


def test_rollback_malformed_run_id_is_not_found(memory_root: Path) -> None:
    result = MemoryService().rollback("../../etc/passwd", "ROLLBACK_MEMORY")
    assert result["error"] == {"code": "rollback-run-not-found"}


def test_rollback_restores_recovery_tree_with_new_commit(
    memory_root: Path, write_file: Write
) -> None:
    applied = _migrated(memory_root, write_file)
    head_before = git(memory_root, "rev-parse", "HEAD").strip()
    value = MemoryService().rollback(_run_id("migrate"), "ROLLBACK_MEMORY")["value"]
    assert value["status"] == "rolled_back"
    assert value["recoveryCommit"] == head_before
    assert (memory_root / "handbook/old.md").read_text() == "body\n"
    log = git(memory_root, "log", "--format=%s", "-2").splitlines()
    assert log[1] == f"DPSK memory rollback: {_run_id('migrate')}"
    # history is only appended to
    assert str(applied["applyCommit"]) in git(memory_root, "rev-list", "HEAD").split()
    assert git(memory_root, "status", "--porcelain").strip() == ""


def test_rollback_is_journaled(memory_root: Path, write_file: Write) -> None:
    _migrated(memory_root, write_file)
    value = MemoryService().rollback(_run_id("migrate"), "ROLLBACK_MEMORY")["value"]
    record = MemoryService().runs(operation="rollback")["value"]["runs"][0]
    assert record["run_id"] == value["rollbackRunId"]
    assert record["run_id"].endswith("-rollback")
    assert record["status"] == "rolled_back"
    assert record["apply_commit"] == value["rollbackCommit"]


def test_journal_commits_after_run_do_not_block_rollback(
    memory_root: Path, write_file: Write
) -> None:
    _migrated(memory_root, write_file)
    run_id = _run_id("migrate")
    assert MemoryService().migrate_legacy(False)["value"]["status"] == "no_change"
    assert MemoryService().rollback(run_id, "ROLLBACK_MEMORY")["ok"] is True


def test_rollback_conflicts_with_later_payload_write(
    memory_root: Path, write_file: Write, commit: Callable[..., str]
) -> None:
    _migrated(memory_root, write_file)
    write_file(memory_root, "handbook/later.md", "---\nschema_version: 1\nid: later\n---\n")
    commit(memory_root)
    result = MemoryService().rollback(_run_id("migrate"), "ROLLBACK_MEMORY")
    assert result["error"] == {"code": "rollback-conflict"}
    assert (memory_root / "handbook/later.md").exists()


def test_rollback_conflicts_with_dirty_payload(memory_root: Path, write_file: Write) -> None:
    _migrated(memory_root, write_file)
    write_file(memory_root, "handbook/old.md", "hand edit\n")
    result = MemoryService().rollback(_run_id("migrate"), "ROLLBACK_MEMORY")
    assert result["error"] == {"code": "rollback-conflict"}
    assert (memory_root / "handbook/old.md").read_text() == "hand edit\n"


def test_rollback_of_no_change_run_is_not_applicable(memory_root: Path) -> None:
    MemoryService().migrate_legacy(False)
    result = MemoryService().rollback(_run_id("migrate"), "ROLLBACK_MEMORY")
    assert result["error"] == {"code": "rollback-not-applicable"}


def test_rollback_after_clear_restores_records(
    memory_root: Path, write_file: Write, commit: Callable[..., str]
) -> None:
    write_file(memory_root, "summary.md", "# s\n")
    write_file(memory_root, "rollouts/deep/r.md", "r\n")
    commit(memory_root)
    MemoryService().clear("DELETE_MEMORY")
    assert not (memory_root / "rollouts/deep").exists()
    value = MemoryService().rollback(_run_id("clear"), "ROLLBACK_MEMORY")["value"]
    assert value["changedPaths"] == ["rollouts/deep/r.md", "summary.md"]
    assert (memory_root / "rollouts/deep/r.md").read_text() == "r\n"
    assert (memory_root / "summary.md").read_text() == "# s\n"


def test_second_rollback_of_same_run_conflicts(memory_root: Path, write_file: Write) -> None:
    _migrated(memory_root, write_file)
    run_id = _run_id("migrate")
    MemoryService().rollback(run_id, "ROLLBACK_MEMORY")
    assert MemoryService().rollback(run_id, "ROLLBACK_MEMORY")["error"] == {
        "code": "rollback-conflict"
    }


def test_rollback_with_index_lock_is_rollback_failed(memory_root: Path, write_file: Write) -> None:
    _migrated(memory_root, write_file)
    head = git(memory_root, "rev-parse", "HEAD")
    (memory_root / ".git" / "index.lock").write_text("")
    result = MemoryService().rollback(_run_id("migrate"), "ROLLBACK_MEMORY")
    assert result["error"] == {"code": "rollback-failed"}
    assert git(memory_root, "rev-parse", "HEAD") == head


def test_runs_lists_newest_first_with_filters(memory_root: Path, write_file: Write) -> None:
    _migrated(memory_root, write_file)
    MemoryService().clear("DELETE_MEMORY")
    runs = MemoryService().runs()["value"]["runs"]
    assert [r["operation"] for r in runs] == ["clear", "migrate"]
    assert MemoryService().runs(status="applied", operation="migrate")["value"]["runs"][0][
        "changed_paths"
    ] == ["handbook/old.md", "handbook/second.md"]
    assert len(MemoryService().runs(limit=1)["value"]["runs"]) == 1


def test_runs_rejects_bad_limit(memory_root: Path) -> None:
    for limit in (0, "21x", True, 1001):
        assert MemoryService().runs(limit)["error"] == {"code": "runs-invalid-request"}
