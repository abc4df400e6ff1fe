from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from dsh_memory.service import MemoryService


def test_status_of_fresh_repository_is_empty(memory_root: Path) -> None:
    value = MemoryService().status()["value"]
    assert value["empty"] is True
    assert value["dataFileCount"] == 0
    assert value["targetDirty"] is False
    assert value["recoverable"] is True
    assert value["schemaVersion"] == 1
    assert value["lastRun"] is None
    assert value["pendingPreview"] is None


def test_status_counts_data_and_legacy_files(
    memory_root: Path, write_file: Callable[..., Path], commit: Callable[..., str]
) -> None:
    write_file(memory_root, "summary.md", "# s\n")
    write_file(memory_root, "handbook/old.md", "plain\n")
    write_file(memory_root, "handbook/new.md", "---\nschema_version: 1\nid: a/b\n---\nbody\n")
    commit(memory_root)
    value = MemoryService().status()["value"]
    assert value["dataFileCount"] == 3
    assert value["legacyFileCount"] == 1
    assert value["pendingMigration"] is True
    assert value["targetDirty"] is False
    assert value["validMetadataCount"] == 1


def test_status_reports_dirty_payload(memory_root: Path, write_file: Callable[..., Path]) -> None:
    write_file(memory_root, "rollouts/r.md", "x")
    assert MemoryService().status()["value"]["targetDirty"] is True


def test_status_reports_invalid_metadata(
    memory_root: Path, write_file: Callable[..., Path]
) -> None:
    write_file(memory_root, "handbook/bad.md", "---\nschema_version: 2\nid: x\n---\n")
    value = MemoryService().status()["value"]
    assert value["metadataValid"] is False
    assert value["invalidMetadata"] == [
        {"path": "handbook/bad.md", "code": "invalid-schema-version"}
    ]


def _earlier_preview(root: Path, preview_id: str, created: str, expires: str) -> None:
    """A preview exactly as the earlier tool writes it (sync-apply.py prepare/write-preview;
    docs/compatibility/memory.md, Previews)."""
    directory = root / ".sync" / "previews" / preview_id
    (directory / "staging").mkdir(parents=True)
    manifest = {
        "schema_version": 1,
        "created_at": "2099-01-02T00:00:00Z",
        "head_sha": "0" * 40,
        "entries": [],
    }
    (directory / "manifest.json").write_text(json.dumps(manifest, separators=(",", ":")) + "\n")
    record = {
        "preview_id": preview_id,
        "created_at": created,
        "expires_at": expires,
        "candidate_sessions": 2,
        "changed_paths": ["handbook/p.md"],
        "status": "pending",
    }
    (directory / "preview.json").write_text(json.dumps(record, separators=(",", ":")) + "\n")


def test_status_reports_newest_unexpired_preview_from_preview_json(memory_root: Path) -> None:
    _earlier_preview(
        memory_root, "20990101T000000Z-aaaaaaaa", "2099-01-01T00:00:00Z", "2099-01-08T00:00:00Z"
    )
    _earlier_preview(
        memory_root, "20990102T000000Z-bbbbbbbb", "2099-01-02T00:00:01Z", "2099-01-09T00:00:01Z"
    )
    _earlier_preview(
        memory_root, "20000101T000000Z-cccccccc", "2000-01-01T00:00:00Z", "2000-01-08T00:00:00Z"
    )
    preview = MemoryService().status()["value"]["pendingPreview"]
    # preview.json, not manifest.json: 2 sessions, the paths, created one second later.
    assert preview == {
        "preview_id": "20990102T000000Z-bbbbbbbb",
        "created_at": "2099-01-02T00:00:01Z",
        "expires_at": "2099-01-09T00:00:01Z",
        "candidate_sessions": 2,
        "changed_paths": ["handbook/p.md"],
        "status": "pending",
    }
    health = MemoryService().health()["value"]
    assert health["pendingPreviewCount"] == 2
    assert health["pendingPreview"] == preview


def test_a_folder_without_preview_json_is_not_a_preview(memory_root: Path) -> None:
    directory = memory_root / ".sync" / "previews" / "20990101T000000Z-aaaaaaaa"
    directory.mkdir(parents=True)
    (directory / "manifest.json").write_text('{"schema_version":1,"entries":[]}')
    assert MemoryService().status()["value"]["pendingPreview"] is None


def test_status_of_non_repository_is_repo_unavailable(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    result = MemoryService(tmp_path / "plain").status()
    assert result == {"ok": False, "error": {"code": "repo-unavailable"}}


def test_status_of_symlinked_payload_is_unsafe_layout(memory_root: Path, tmp_path: Path) -> None:
    (memory_root / "handbook" / "link.md").symlink_to(tmp_path / "outside.md")
    assert MemoryService().status()["error"] == {"code": "unsafe-layout"}


def test_health_of_clean_repository(memory_root: Path) -> None:
    value = MemoryService().health()["value"]
    assert value["memoryRoot"] == str(memory_root)
    assert value["rootSafe"] is True
    assert value["gitAvailable"] is True
    assert value["operationLock"] is None
    assert value["activeRun"] is None
    assert value["journalReadable"] is True
    assert value["needsManualRecovery"] is False


def test_health_needs_recovery_when_payload_dirty(
    memory_root: Path, write_file: Callable[..., Path]
) -> None:
    write_file(memory_root, "handbook/x.md", "x")
    value = MemoryService().health()["value"]
    assert value["payloadDirty"] is True
    assert value["needsManualRecovery"] is True


def test_health_reports_unreadable_journal(memory_root: Path) -> None:
    (memory_root / ".sync" / "last-run.json").write_text("{not json")
    value = MemoryService().health()["value"]
    assert value["journalReadable"] is False
    assert value["needsManualRecovery"] is True


def test_health_of_missing_root_is_repo_unavailable(tmp_path: Path) -> None:
    assert MemoryService(tmp_path / "none").health()["error"] == {"code": "repo-unavailable"}


def test_health_reports_live_lock_as_active(memory_root: Path) -> None:
    from dsh_memory.store.oplock import operation_lock

    with operation_lock(memory_root, "clear", "20260101T000000Z-clear-1"):
        value = MemoryService().health()["value"]
    assert value["operationLock"]["active"] is True
    assert value["operationLock"]["operation"] == "clear"
    assert value["activeRun"]["state"] == "running"
    assert value["needsManualRecovery"] is False


def test_service_call_dispatches_spec_names(memory_root: Path) -> None:
    service = MemoryService()
    assert service.call("getSettings") == {"ok": True, "value": {"enabled": True}}
    assert service.call("migrateLegacy", {"dryRun": True})["value"]["status"] == "no_change"
    assert service.call("nope")["error"] == {"code": "unknown-method"}
