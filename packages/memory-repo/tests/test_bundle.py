"""export --bundle / import --bundle --root: a whole-history backup that never overwrites."""

from __future__ import annotations

import json
from pathlib import Path

from dsh_test_support import in_process

from dsh_memory.service import MemoryService

RECORD = "---\nschema_version: 1\nid: user/editor\ntype: preference\n---\nUses vim.\n"


def test_export_and_import_keep_history_runs_and_rollback(
    memory_root: Path, tmp_path: Path
) -> None:
    written = MemoryService().write("handbook/editor.md", RECORD)["value"]
    bundle = tmp_path / "backup" / "memory.bundle"
    bundle.parent.mkdir()
    exported = MemoryService().export_bundle(str(bundle))
    assert exported["ok"], (exported, MemoryService().last_error_message)
    manifest = json.loads(Path(f"{bundle}.manifest.json").read_text())
    assert manifest["format"] == "dsh-memory-bundle" and manifest["run_count"] == 1
    new_root = tmp_path / "restored"
    imported = MemoryService().import_bundle(str(bundle), str(new_root))
    assert imported["ok"], (imported, MemoryService().last_error_message)
    assert (new_root / "handbook" / "editor.md").read_text() == RECORD
    restored = MemoryService(new_root)
    assert restored.health()["value"]["needsManualRecovery"] is False
    assert [r["run_id"] for r in restored.runs()["value"]["runs"]] == [written["runId"]]
    assert restored.rollback(written["runId"], "ROLLBACK_MEMORY")["ok"]
    assert not (new_root / "handbook" / "editor.md").exists()
    assert (memory_root / "handbook" / "editor.md").exists()  # the original is untouched


def test_export_and_import_refuse_to_overwrite(memory_root: Path, tmp_path: Path) -> None:
    existing = tmp_path / "taken.bundle"
    existing.write_text("keep me")
    assert MemoryService().export_bundle(str(existing))["error"]["code"] == "bundle-invalid-request"
    assert existing.read_text() == "keep me"
    bundle = tmp_path / "ok.bundle"
    assert MemoryService().export_bundle(str(bundle))["ok"]
    target = tmp_path / "occupied"
    target.mkdir()
    refused = MemoryService().import_bundle(str(bundle), str(target))
    assert refused == {"ok": False, "error": {"code": "bundle-invalid-request"}}
    assert list(target.iterdir()) == []


def test_import_refuses_a_bundle_that_does_not_match_its_manifest(
    memory_root: Path, tmp_path: Path
) -> None:
    bundle = tmp_path / "m.bundle"
    assert MemoryService().export_bundle(str(bundle))["ok"]
    bundle.write_bytes(bundle.read_bytes() + b"tampered")
    refused = MemoryService().import_bundle(str(bundle), str(tmp_path / "new"))
    assert refused["error"]["code"] == "bundle-invalid-request"
    assert not (tmp_path / "new").exists()


def test_cli_export_import(memory_root: Path, tmp_path: Path, cli_env: dict[str, str]) -> None:
    bundle = tmp_path / "cli.bundle"
    done = in_process.run("dsh-memory", "export", "--bundle", str(bundle), env=cli_env)
    assert done.returncode == 0, done.stderr
    restored = tmp_path / "cli-restored"
    done = in_process.run(
        "dsh-memory", "import", "--bundle", str(bundle), "--root", str(restored), env=cli_env
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["value"]["root"] == str(restored)
