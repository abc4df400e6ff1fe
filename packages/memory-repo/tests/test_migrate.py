from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from dsh_test_support import in_process
from dsh_test_support.gitcmd import git

from dsh_memory.service import MemoryService

Write = Callable[..., Path]


def test_legacy_records_lists_metadata_only(memory_root: Path, write_file: Write) -> None:
    write_file(memory_root, "handbook/old-note.md", "secret body text\n")
    write_file(memory_root, "handbook/ok.md", "---\nschema_version: 1\nid: ok\n---\nbody\n")
    os.utime(memory_root / "handbook/old-note.md", (1755648000, 1755648000))  # 2025-08-20
    value = MemoryService().legacy_records()["value"]
    assert value["count"] == 1
    record = value["records"][0]
    assert record == {
        "path": "handbook/old-note.md",
        "id": record["id"],
        "frontMatter": f"---\nschema_version: 1\nid: {record['id']}\n"
        "created_at: 2025-08-20\nupdated_at: 2025-08-20\n---\n",
        "createdAt": "2025-08-20",
        "updatedAt": "2025-08-20",
        "bytes": 17,
    }
    assert record["id"].startswith("legacy-") and len(record["id"]) == 23
    assert "secret" not in str(value)


def test_summary_is_never_legacy(memory_root: Path, write_file: Write) -> None:
    write_file(memory_root, "summary.md", "plain summary\n")
    assert MemoryService().legacy_records()["value"]["count"] == 0


def test_migrate_requires_boolean_dry_run(memory_root: Path) -> None:
    for value in (None, "true", 1):
        result = MemoryService().migrate_legacy(value)
        assert result == {"ok": False, "error": {"code": "migration-invalid-request"}}


def test_migrate_dry_run_changes_nothing(memory_root: Path, write_file: Write) -> None:
    write_file(memory_root, "handbook/old.md", "body\n")
    head = git(memory_root, "rev-parse", "HEAD")
    value = MemoryService().migrate_legacy(True)["value"]
    assert value == {
        "dryRun": True,
        "status": "pending",
        "legacyCount": 1,
        "migratedCount": 0,
        "changedPaths": ["handbook/old.md"],
        "recoveryCommit": None,
        "applyCommit": None,
        "journalCommit": None,
    }
    assert git(memory_root, "rev-parse", "HEAD") == head
    assert (memory_root / "handbook/old.md").read_text() == "body\n"


def test_migrate_apply_prepends_front_matter_and_keeps_body(
    memory_root: Path, write_file: Write, commit: Callable[..., str]
) -> None:
    write_file(memory_root, "handbook/old.md", "body\n")
    head = commit(memory_root)
    expected = MemoryService().legacy_records()["value"]["records"][0]["frontMatter"] + "body\n"
    value = MemoryService().migrate_legacy(False)["value"]
    assert value["status"] == "applied"
    assert value["migratedCount"] == 1
    assert value["recoveryCommit"] == head
    assert (memory_root / "handbook/old.md").read_text() == expected
    assert git(memory_root, "show", f"{value['applyCommit']}:handbook/old.md") == expected
    assert git(memory_root, "status", "--porcelain").strip() == ""
    assert MemoryService().status()["value"]["lastRun"] == {
        "runId": MemoryService().runs()["value"]["runs"][0]["run_id"],
        "status": "applied",
        "changedFileCount": 1,
        "applyCommit": value["applyCommit"],
    }


def test_migrate_again_is_no_change_without_payload_commit(
    memory_root: Path, write_file: Write
) -> None:
    write_file(memory_root, "handbook/old.md", "body\n")
    first = MemoryService().migrate_legacy(False)["value"]
    second = MemoryService().migrate_legacy(False)["value"]
    assert second["status"] == "no_change"
    assert second["applyCommit"] is None
    changed = git(memory_root, "diff", "--name-only", first["applyCommit"], "HEAD").split()
    assert all(path.startswith(".sync/") for path in changed)


def test_migrate_is_deterministic(memory_root: Path, write_file: Write, tmp_path: Path) -> None:
    write_file(memory_root, "rollouts/x.md", "same\n")
    os.utime(memory_root / "rollouts/x.md", (1755648000, 1755648000))
    MemoryService().migrate_legacy(False)
    first = (memory_root / "rollouts/x.md").read_text()
    other = tmp_path / "other"
    MemoryService(other).init()
    write_file(other, "rollouts/x.md", "same\n")
    os.utime(other / "rollouts/x.md", (1755648000, 1755648000))
    MemoryService(other).migrate_legacy(False)
    assert (other / "rollouts/x.md").read_text() == first


CHILD = """
import sys, time
from pathlib import Path
from dsh_memory.store.oplock import operation_lock
with operation_lock(Path(sys.argv[1]), "migrate", "20260820T100000Z-migrate-1") as run:
    run.set_phase("applying")
    print("ready", flush=True)
    time.sleep(60)
"""


def _kill_mid_run(root: Path) -> None:
    with subprocess.Popen(
        [sys.executable, "-c", CHILD, str(root)], stdout=subprocess.PIPE, text=True
    ) as child:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        child.send_signal(signal.SIGKILL)
        child.wait()  # reaped: its pid is really gone


def test_migrate_after_killed_run_is_interrupted_run(memory_root: Path, write_file: Write) -> None:
    write_file(memory_root, "handbook/old.md", "body\n")
    _kill_mid_run(memory_root)
    result = MemoryService().migrate_legacy(False)
    assert result == {"ok": False, "error": {"code": "interrupted-run"}}
    assert (memory_root / "handbook/old.md").read_text() == "body\n"
    runs = MemoryService().runs(status="interrupted")["value"]["runs"]
    assert [r["run_id"] for r in runs] == ["20260820T100000Z-migrate-1"]


def test_health_reports_killed_run_as_interrupted(memory_root: Path) -> None:
    _kill_mid_run(memory_root)
    value = MemoryService().health()["value"]
    assert value["activeRun"]["state"] == "interrupted"
    assert value["activeRun"]["phase"] == "applying"
    assert value["operationLock"]["active"] is False
    assert value["operationLock"]["runId"] == "20260820T100000Z-migrate-1"
    assert value["needsManualRecovery"] is True


def test_interrupted_run_is_journaled_once(memory_root: Path, write_file: Write) -> None:
    write_file(memory_root, "handbook/old.md", "body\n")
    _kill_mid_run(memory_root)
    MemoryService().migrate_legacy(False)
    MemoryService().migrate_legacy(False)
    assert len(MemoryService().runs()["value"]["runs"]) == 1
    assert MemoryService().health()["value"]["interruptedRun"]["status"] == "interrupted"


def test_migrate_with_index_lock_is_commit_failed(memory_root: Path, write_file: Write) -> None:
    write_file(memory_root, "handbook/old.md", "body\n")
    head = git(memory_root, "rev-parse", "HEAD")
    (memory_root / ".git" / "index.lock").write_text("")
    assert MemoryService().migrate_legacy(False)["error"] == {"code": "commit-failed"}
    assert git(memory_root, "rev-parse", "HEAD") == head
    assert (memory_root / "handbook/old.md").read_text() == "body\n"


def test_migrate_while_lock_held_is_operation_in_progress(
    memory_root: Path, write_file: Write
) -> None:
    write_file(memory_root, "handbook/old.md", "body\n")
    (memory_root / ".sync" / "operation.lock").write_text(
        f'{{"operation":"sync","pid":{os.getpid()},"runId":"r","startedAt":"t"}}'
    )
    assert MemoryService().migrate_legacy(False)["error"] == {"code": "operation-in-progress"}
    assert (memory_root / "handbook/old.md").read_text() == "body\n"


def test_migrate_on_unsafe_layout_is_refused(memory_root: Path, tmp_path: Path) -> None:
    (memory_root / "rollouts" / "x.md").symlink_to(tmp_path / "elsewhere.md")
    assert MemoryService().migrate_legacy(True)["error"] == {"code": "unsafe-layout"}


def test_documented_manual_recovery_after_interrupted_run(
    memory_root: Path, write_file: Write
) -> None:
    write_file(memory_root, "handbook/old.md", "body\n")
    _kill_mid_run(memory_root)
    assert MemoryService().migrate_legacy(False)["error"] == {"code": "interrupted-run"}
    # Recovery by hand (docs/memory/design.md, "One writer at a time"): inspect health, then
    # remove the dead run's two files.
    (memory_root / ".sync" / "active-run.json").unlink()
    (memory_root / ".sync" / "operation.lock").unlink()
    assert MemoryService().migrate_legacy(False)["value"]["status"] == "applied"
    health = MemoryService().health()["value"]
    assert health["needsManualRecovery"] is False
    assert health["interruptedRun"] is None


#: The earlier tool's migrateLegacy on these legacy records (mtime 2025-08-20), run on a
#: memory repository: the blob of each migrated file (front matter, then the body with no
#: blank line between - legacy-migration.js migrationFrontMatter).
EARLIER_MIGRATED_BLOBS = {
    "handbook/old.md": ("old note\n", "2761d612c74b64ab5a256e1164e6272551027439"),
    "archive/deep/x.md": ("中文 旧笔记\r\nline2", "3aa887bf04d5c189ef6c1d5bf6c01643d3625b66"),
}


def test_migration_writes_the_earlier_tools_blobs(
    memory_root: Path, commit: Callable[..., str]
) -> None:
    for path, (body, _) in EARLIER_MIGRATED_BLOBS.items():
        (memory_root / path).parent.mkdir(parents=True, exist_ok=True)
        (memory_root / path).write_bytes(body.encode("utf-8"))
    commit(memory_root)
    for path in EARLIER_MIGRATED_BLOBS:
        os.utime(memory_root / path, (1755691200, 1755691200))  # 2025-08-20T12:00:00Z
    listed = in_process.run("dsh-memory", "legacy-records").stdout
    for record in json.loads(listed)["value"]["records"]:
        assert record["frontMatter"] == (
            f"---\nschema_version: 1\nid: {record['id']}\n"
            "created_at: 2025-08-20\nupdated_at: 2025-08-20\n---\n"
        )
    assert in_process.run("dsh-memory", "migrate-legacy", "--apply").returncode == 0
    for path, (_, blob) in EARLIER_MIGRATED_BLOBS.items():
        assert git(memory_root, "rev-parse", f"HEAD:{path}").strip() == blob, path
