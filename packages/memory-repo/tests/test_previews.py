"""Sync previews: created by --preview, listed, applied (operation preview), discarded."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from dsh_test_support import in_process
from dsh_test_support.gitcmd import git

from dsh_memory.errors import MemoryRepoError
from dsh_memory.service import MemoryService
from dsh_memory.sync.sessions import SessionSources
from dsh_memory.sync.syncrun import SyncOptions, run_sync

PREVIEW_ID = "20261201T100000Z-0123abcd"


def _preview(root: Path, logs: Any, command: str, preview_id: str = PREVIEW_ID) -> dict[str, Any]:
    return run_sync(
        SyncOptions(
            root=root,
            sources=SessionSources(logs.dsh_sessions, logs.claude_projects, logs.codex_sessions),
            env=dict(os.environ),
            agent="command",
            agent_command=command,
            mode="preview",
            preview_id=preview_id,
        )
    )


def test_a_preview_is_stored_without_touching_live_memory(
    sync_root: Path,
    session_logs: Any,
    agent_command: Callable[[str], str],
) -> None:
    session_logs.dsh("d1", "hello")
    head = git(sync_root, "rev-parse", "HEAD").strip()
    mark = (sync_root / ".last-sync").stat().st_mtime_ns
    result = _preview(sync_root, session_logs, agent_command("add"))
    assert result["status"] == "pending"
    assert git(sync_root, "rev-parse", "HEAD").strip() == head
    assert not (sync_root / "handbook" / "new-fact.md").exists()
    assert (sync_root / ".last-sync").stat().st_mtime_ns == mark
    directory = sync_root / ".sync" / "previews" / PREVIEW_ID
    record = json.loads((directory / "preview.json").read_text())
    assert list(record) == [
        "preview_id",
        "created_at",
        "expires_at",
        "candidate_sessions",
        "changed_paths",
        "status",
    ]
    assert record["changed_paths"] == ["handbook/new-fact.md"]
    manifest = json.loads((directory / "manifest.json").read_text())
    assert manifest["head_sha"] == head and manifest["schema_version"] == 1
    assert (directory / "staging" / "handbook" / "new-fact.md").is_file()
    assert (directory.stat().st_mode & 0o777) == 0o700
    assert git(sync_root, "status", "--porcelain").strip() == ""  # Git-ignored
    listed = MemoryService().previews()["value"]["previews"]
    assert [p["preview_id"] for p in listed] == [PREVIEW_ID]
    assert MemoryService().status()["value"]["pendingPreview"]["preview_id"] == PREVIEW_ID


def test_apply_preview_is_one_journaled_preview_transaction(
    sync_root: Path,
    session_logs: Any,
    agent_command: Callable[[str], str],
) -> None:
    session_logs.dsh("d1", "hello")
    _preview(sync_root, session_logs, agent_command("add"))
    applied = MemoryService().call("applyPreview", {"previewId": PREVIEW_ID})
    assert applied["ok"], applied
    value = applied["value"]
    assert value["status"] == "applied" and value["journaled"] is True
    assert value["changed_paths"] == ["handbook/new-fact.md"]
    assert (sync_root / "handbook" / "new-fact.md").is_file()
    record = json.loads((sync_root / ".sync" / "last-run.json").read_text())
    assert (record["operation"], record["run_id"]) == ("preview", PREVIEW_ID)
    assert not (sync_root / ".sync" / "previews" / PREVIEW_ID).exists()  # consumed
    assert MemoryService().rollback(PREVIEW_ID, "ROLLBACK_MEMORY")["ok"]
    assert not (sync_root / "handbook" / "new-fact.md").exists()
    git(sync_root, "fsck", "--strict")


def test_apply_preview_refuses_when_live_memory_moved(
    sync_root: Path,
    session_logs: Any,
    agent_command: Callable[[str], str],
    write_file: Callable[..., Path],
    commit: Callable[..., str],
) -> None:
    session_logs.dsh("d1", "hello")
    _preview(sync_root, session_logs, agent_command("add"))
    write_file(sync_root, "handbook/other.md", "a person's note\n")
    commit(sync_root, "by hand")
    result = MemoryService().apply_preview(PREVIEW_ID)
    assert result == {"ok": False, "error": {"code": "live-memory-changed"}}
    assert not (sync_root / "handbook" / "new-fact.md").exists()
    assert (sync_root / ".sync" / "previews" / PREVIEW_ID).is_dir()  # kept for review


def test_expired_previews_are_never_listed_or_applied_and_are_cleaned(
    sync_root: Path, session_logs: Any, agent_command: Callable[[str], str]
) -> None:
    session_logs.dsh("d1", "hello")
    _preview(sync_root, session_logs, agent_command("add"))
    path = sync_root / ".sync" / "previews" / PREVIEW_ID / "preview.json"
    record = json.loads(path.read_text())
    record["expires_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 1))
    path.write_text(json.dumps(record))
    assert MemoryService().status()["value"]["pendingPreview"] is None
    assert MemoryService().apply_preview(PREVIEW_ID)["error"]["code"] == "preview-expired"
    assert not path.parent.exists()  # removed lazily


def test_discard_preview_removes_it(
    sync_root: Path, session_logs: Any, agent_command: Callable[[str], str]
) -> None:
    session_logs.dsh("d1", "hello")
    _preview(sync_root, session_logs, agent_command("add"))
    assert MemoryService().call("discardPreview", {"previewId": PREVIEW_ID}) == {
        "ok": True,
        "value": {"removed": True, "previewId": PREVIEW_ID},
    }
    again = MemoryService().discard_preview(PREVIEW_ID)
    assert again == {"ok": False, "error": {"code": "preview-not-found"}}


@pytest.mark.parametrize("bad", [None, "", "20261201T100000Z-XYZ", "../x", 42])
def test_preview_ids_are_checked_first(memory_root: Path, bad: object) -> None:
    for method in ("applyPreview", "discardPreview"):
        result = MemoryService().call(method, {"previewId": bad})
        assert result == {"ok": False, "error": {"code": "preview-invalid-request"}}


def test_a_second_preview_with_the_same_id_is_refused(
    sync_root: Path, session_logs: Any, agent_command: Callable[[str], str]
) -> None:
    session_logs.dsh("d1", "hello")
    _preview(sync_root, session_logs, agent_command("add"))
    with pytest.raises(MemoryRepoError) as caught:
        _preview(sync_root, session_logs, agent_command("add"))
    assert caught.value.code == "preview-exists"


def test_an_earlier_tool_preview_applies(
    memory_root: Path, write_file: Callable[..., Path]
) -> None:
    """A preview exactly as the earlier tool's sync-apply.py writes one
    (docs/compatibility/memory.md, Previews)."""
    import hashlib

    head = git(memory_root, "rev-parse", "HEAD").strip()
    directory = memory_root / ".sync" / "previews" / PREVIEW_ID
    staging = directory / "staging"
    readme = (memory_root / "README.md").read_bytes()
    entries = [
        {
            "path": "summary.md",
            "mode": "100644",
            "size": 0,
            "sha256": hashlib.sha256(b"").hexdigest(),
        },
        {
            "path": "README.md",
            "mode": "100644",
            "size": len(readme),
            "sha256": hashlib.sha256(readme).hexdigest(),
        },
    ]
    manifest = {
        "schema_version": 1,
        "created_at": "2026-12-01T10:00:00Z",
        "head_sha": head,
        "entries": entries,
    }
    write_file(directory, "manifest.json", json.dumps(manifest, separators=(",", ":")) + "\n")
    write_file(staging, "summary.md", "")
    (staging / "README.md").write_bytes(readme)
    write_file(
        staging,
        "handbook/pref.md",
        "---\nschema_version: 1\nid: user/pref\ntype: preference\n---\npnpm\n",
    )
    for name in ("rollouts", "archive"):
        (staging / name).mkdir()
    expires = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 86400))
    preview = (
        f'{{"preview_id":"{PREVIEW_ID}","created_at":"2026-12-01T10:00:00Z",'
        f'"expires_at":"{expires}","candidate_sessions":1,'
        '"changed_paths":["handbook/pref.md"],"status":"pending"}\n'
    )
    (directory / "preview.json").write_text(preview)
    listed = MemoryService().previews()["value"]["previews"][0]
    assert listed["candidate_sessions"] == 1 and listed["created_at"] == "2026-12-01T10:00:00Z"
    result = MemoryService().apply_preview(PREVIEW_ID)
    assert result["ok"], result
    assert (memory_root / "handbook" / "pref.md").read_text().endswith("pnpm\n")


def test_cli_previews_commands(
    sync_root: Path,
    session_logs: Any,
    agent_command: Callable[[str], str],
    cli_env: dict[str, str],
) -> None:
    session_logs.dsh("d1", "hello")
    _preview(sync_root, session_logs, agent_command("add"))

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return in_process.run("dsh-memory", *args, env=cli_env)

    listed = cli("previews")
    assert listed.returncode == 0
    assert json.loads(listed.stdout)["value"]["previews"][0]["preview_id"] == PREVIEW_ID
    bad = cli("apply-preview", "--preview-id", "nope")
    assert bad.returncode == 1
    assert json.loads(bad.stderr)["error"]["code"] == "preview-invalid-request"
    applied = cli("apply-preview", "--preview-id", PREVIEW_ID)
    assert applied.returncode == 0, applied.stderr
    assert json.loads(applied.stdout)["value"]["status"] == "applied"
    gone = cli("discard-preview", "--preview-id", PREVIEW_ID)
    assert json.loads(gone.stderr)["error"]["code"] == "preview-not-found"
