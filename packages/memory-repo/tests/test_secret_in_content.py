"""No writer puts a secret into the memory's history: sync, write and adopt refuse it.

The transcripts an agent reads are redacted, but the records it writes - or a person or
another agent writes through ``write`` / ``adopt`` - are new text. A secret committed to
the memory repository stays in its history (and in every clone and push) until a history
rewrite, so each new or changed file is checked by dsh-common's detector before anything is
committed, and the refusal names the file, line and kind, never the value.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dsh_test_support import commands, in_process
from dsh_test_support.gitcmd import git

from dsh_memory.service import MemoryService

RECORD = "---\nschema_version: 1\nid: {id}\ntype: fact\n---\n{body}\n"
TOKEN = "sk-" + "proj" + "A1b2C3d4E5f6G7h8I9j0K1L2M3n4"  # as the fake agent builds it
GITHUB = "gh" + "p_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def memory(root: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``dsh-memory --root ROOT ARGS`` in process (the tests read its output and history)."""
    return in_process.run("dsh-memory", "--root", str(root), *args, input=stdin)


def everything_git_holds(root: Path) -> str:
    """Every object's content, reachable or not (a refused change must leave no blob); as
    bytes, since trees hold binary object ids."""
    listed = git(root, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
    done = subprocess.run(
        ["git", "cat-file", "--batch"],
        cwd=root,
        input=listed.encode(),
        capture_output=True,
        check=True,
    )
    return done.stdout.decode("utf-8", "replace")


def test_a_sync_agent_writing_a_secret_is_refused_and_journaled(
    sync_root: Path, session_logs: Any, agent_command: Callable[[str], str]
) -> None:
    root = sync_root
    session_logs.dsh("d1", "hello")
    watermark = (root / ".last-sync").stat().st_mtime_ns
    done = commands.run(
        "dsh-memory-sync", "--root", str(root), "--json", "--agent-command", agent_command("secret")
    )
    assert done.returncode == 1
    failure = json.loads(done.stderr)["error"]
    assert failure["code"] == "secret-in-content"
    assert "handbook/new-fact.md: line 6" in failure["message"]
    assert TOKEN not in done.stderr + done.stdout
    run = MemoryService().runs(limit=1)["value"]["runs"][0]
    assert (run["operation"], run["status"], run["error_code"]) == (
        "sync",
        "failed",
        "secret-in-content",
    )
    assert TOKEN not in everything_git_holds(root)
    assert (root / ".last-sync").stat().st_mtime_ns == watermark


def test_write_refuses_a_secret_and_commits_nothing(memory_root: Path) -> None:
    root = memory_root
    before = git(root, "rev-parse", "HEAD")
    content = RECORD.format(id="x/deploy", body=f"Deploy with GITHUB_TOKEN={GITHUB} 然后推送")
    done = memory(root, "write", "handbook/deploy.md", "-", stdin=content)
    assert done.returncode == 1
    error = json.loads(done.stderr)["error"]
    assert error["code"] == "secret-in-content" and GITHUB not in done.stderr
    assert git(root, "rev-parse", "HEAD") == before
    assert not (root / "handbook" / "deploy.md").exists()
    assert GITHUB not in everything_git_holds(root)
    clean = memory(
        root,
        "write",
        "handbook/deploy.md",
        "-",
        stdin=RECORD.format(id="x/deploy", body="Deploy with the token from CI."),
    )
    assert clean.returncode == 0, clean.stderr


def test_adopt_refuses_a_hand_edit_holding_a_secret(memory_root: Path) -> None:
    root = memory_root
    (root / "handbook" / "db.md").write_text(
        RECORD.format(id="x/db", body="postgresql://app:" + "hunter2x" + "@db.internal/app")
    )
    before = git(root, "rev-parse", "HEAD")
    done = memory(root, "adopt")
    assert done.returncode == 1
    assert json.loads(done.stderr)["error"]["code"] == "secret-in-content"
    assert git(root, "rev-parse", "HEAD") == before
    assert (root / "handbook" / "db.md").exists()  # the person's file is left alone


def test_an_old_record_holding_a_secret_never_blocks_another_change(memory_root: Path) -> None:
    root = memory_root
    (root / "handbook" / "old.md").write_text(RECORD.format(id="x/old", body=f"key {TOKEN}"))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "a record from before the rule")
    done = memory(
        root,
        "write",
        "handbook/new.md",
        "-",
        stdin=RECORD.format(id="x/new", body="Nothing secret."),
    )
    assert done.returncode == 0, done.stderr
