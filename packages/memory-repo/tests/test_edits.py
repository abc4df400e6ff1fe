"""A person's own edits: write, remove, adopt - journaled edit runs that roll back."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from dsh_test_support import in_process
from dsh_test_support.gitcmd import git

from dsh_memory.service import MemoryService

RECORD = "---\nschema_version: 1\nid: user/editor\ntype: preference\n---\nUses vim.\n"


def _last_run(root: Path) -> dict[str, object]:
    return json.loads((root / ".sync" / "last-run.json").read_text())


def test_write_commits_one_record_as_an_edit_run_that_rolls_back(memory_root: Path) -> None:
    result = MemoryService().write("handbook/editor.md", RECORD)
    assert result["ok"], result
    value = result["value"]
    assert value["changedPaths"] == ["handbook/editor.md"]
    assert (memory_root / "handbook" / "editor.md").read_text() == RECORD
    assert _last_run(memory_root)["operation"] == "edit"
    assert git(memory_root, "status", "--porcelain").strip() == ""
    found = MemoryService().search("vim")["value"]["results"]
    assert [r["id"] for r in found] == ["user/editor"]
    assert MemoryService().rollback(value["runId"], "ROLLBACK_MEMORY")["ok"]
    assert not (memory_root / "handbook" / "editor.md").exists()


@pytest.mark.parametrize(
    ("path", "content", "code"),
    [
        ("../escape.md", RECORD, "edit-invalid-request"),
        ("handbook/../../x.md", RECORD, "edit-invalid-request"),
        ("notes.txt", RECORD, "edit-invalid-request"),
        ("/etc/passwd", RECORD, "edit-invalid-request"),
        (
            "handbook/bad.md",
            "---\nschema_version: 1\nid: x\ntags: [a, b]\n---\n",
            "flow-style-metadata",
        ),
        ("handbook/bad.md", "---\nschema_version: 1\nid: Not Valid\n---\n", "invalid-id"),
        ("handbook/bin.md", b"\xff\xfe", "binary-file"),
        ("handbook/big.md", "x" * (1024 * 1024 + 1), "file-too-large"),
    ],
)
def test_write_refuses_what_a_sync_would_refuse(
    memory_root: Path, path: str, content: object, code: str
) -> None:
    head = git(memory_root, "rev-parse", "HEAD")
    result = MemoryService().write(path, content)
    assert result == {"ok": False, "error": {"code": code}}
    assert git(memory_root, "rev-parse", "HEAD") == head
    assert git(memory_root, "status", "--porcelain").strip() == ""


def test_write_refuses_a_duplicate_id(memory_root: Path) -> None:
    assert MemoryService().write("handbook/editor.md", RECORD)["ok"]
    again = MemoryService().write("handbook/other.md", RECORD)
    assert again == {"ok": False, "error": {"code": "duplicate-id"}}
    # Rewriting the same file with its own id is fine.
    assert MemoryService().write("handbook/editor.md", RECORD + "More.\n")["ok"]


def test_remove_commits_a_deletion(memory_root: Path) -> None:
    MemoryService().write("handbook/editor.md", RECORD)
    removed = MemoryService().remove("handbook/editor.md")
    assert removed["ok"] and removed["value"]["changedPaths"] == ["handbook/editor.md"]
    assert not (memory_root / "handbook" / "editor.md").exists()
    missing = MemoryService().remove("handbook/editor.md")
    assert missing == {"ok": False, "error": {"code": "edit-not-found"}}


def test_adopt_commits_hand_edits_and_clears_manual_recovery(
    memory_root: Path, write_file: Callable[..., Path]
) -> None:
    write_file(memory_root, "handbook/by-hand.md", RECORD)
    write_file(memory_root, "summary.md", "- editor: vim\n")
    assert MemoryService().health()["value"]["needsManualRecovery"] is True
    adopted = MemoryService().adopt()
    assert adopted["ok"], adopted
    head_before = adopted["value"]["recoveryCommit"]
    assert adopted["value"]["changedPaths"] == ["handbook/by-hand.md", "summary.md"]
    assert MemoryService().health()["value"]["needsManualRecovery"] is False
    assert git(memory_root, "status", "--porcelain").strip() == ""
    # The recovery point is the HEAD before the hand edits, so rollback removes them.
    assert git(memory_root, "rev-parse", f"{adopted['value']['applyCommit']}^") == (
        head_before + "\n"
    )
    assert MemoryService().rollback(adopted["value"]["runId"], "ROLLBACK_MEMORY")["ok"]
    assert not (memory_root / "handbook" / "by-hand.md").exists()
    assert MemoryService().adopt()["value"]["status"] == "no_change"


def test_adopt_refuses_invalid_front_matter(
    memory_root: Path, write_file: Callable[..., Path]
) -> None:
    write_file(memory_root, "handbook/broken.md", "---\nschema_version: 1\nid: b\ntags: [a]\n---\n")
    assert MemoryService().adopt() == {"ok": False, "error": {"code": "flow-style-metadata"}}
    assert (memory_root / "handbook" / "broken.md").exists()  # left for the person to fix


def test_search_and_context_name_records_left_out(
    memory_root: Path, write_file: Callable[..., Path]
) -> None:
    write_file(memory_root, "handbook/good.md", RECORD)
    write_file(
        memory_root,
        "handbook/tags.md",
        "---\nschema_version: 1\nid: t\ntags: [a, b]\n---\nvim too\n",
    )
    for use in (MemoryService().search("vim"), MemoryService().context("vim")):
        assert use["value"]["warnings"] == [
            {"path": "handbook/tags.md", "code": "invalid-metadata"}
        ]


def test_cli_write_from_stdin_and_file(
    memory_root: Path, cli_env: dict[str, str], tmp_path: Path
) -> None:
    def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return in_process.run("dsh-memory", *args, input=stdin, env=cli_env)

    piped = cli("write", "handbook/editor.md", "-", stdin=RECORD)
    assert piped.returncode == 0, piped.stderr
    assert json.loads(piped.stdout)["value"]["changedPaths"] == ["handbook/editor.md"]
    source = tmp_path / "note.md"
    source.write_text(RECORD.replace("user/editor", "user/shell"))
    from_file = cli("write", "handbook/shell.md", "--file", str(source))
    assert from_file.returncode == 0, from_file.stderr
    neither = cli("write", "handbook/x.md")
    assert neither.returncode == 1
    assert json.loads(neither.stderr)["error"]["code"] == "edit-invalid-request"
    assert cli("remove", "handbook/shell.md").returncode == 0
    assert cli("adopt").returncode == 0
