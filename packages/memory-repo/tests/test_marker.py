"""Writers refuse a Git repository that is not a memory repository (a software project
named as the memory's root); reads of one write nothing into it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from dsh_test_support import commands, in_process
from dsh_test_support.gitcmd import git

EARLIER_GITIGNORE = (
    "operation.lock\nactive-run.json\npreviews/\nusage.json\nusage.lock/\n.usage.*.tmp\n"
)


def dsh_memory(cwd: Path, env_root: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``dsh-memory ARGS`` in process, in ``cwd``, with ``DSH_MEMORY_ROOT=env_root``."""
    env = commands.environ(DSH_MEMORY_ROOT=env_root)
    return in_process.run("dsh-memory", *args, cwd=cwd, env=env)


def error_code(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1, result.stdout
    code: str = json.loads(result.stderr)["error"]["code"]
    return code


def value(result: subprocess.CompletedProcess[str]) -> Any:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["value"]


def project(tmp_path: Path) -> Path:
    """A software project that happens to have a handbook/ folder and a README."""
    root = tmp_path / "project"
    (root / "handbook").mkdir(parents=True)
    (root / "handbook" / "onboarding.md").write_text("# Onboarding\n")
    (root / "README.md").write_text("# project\n")
    (root / "summary.md").write_text("quarterly summary\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "project")
    return root


def test_clear_refuses_a_project_named_by_dsh_memory_root_dot(tmp_path: Path) -> None:
    root = project(tmp_path)
    head = git(root, "rev-parse", "HEAD")
    result = dsh_memory(root, ".", "clear", "--confirmation", "DELETE_MEMORY")
    assert error_code(result) == "repo-unavailable"
    assert "not a dsh memory repository" in json.loads(result.stderr)["error"]["message"]
    assert (root / "handbook" / "onboarding.md").read_text() == "# Onboarding\n"
    assert git(root, "rev-parse", "HEAD") == head
    assert git(root, "status", "--porcelain") == ""


def test_every_writer_refuses_a_project(tmp_path: Path) -> None:
    root = project(tmp_path)
    (root / "handbook" / "legacy.md").write_text("no front matter\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "legacy")
    head = git(root, "rev-parse", "HEAD")
    assert error_code(dsh_memory(root, ".", "migrate-legacy", "--dry-run", "false")) == (
        "repo-unavailable"
    )
    run_id = "20260101T000000Z-clear-1"
    (root / ".sync" / "runs").mkdir(parents=True)
    (root / ".sync" / "runs" / f"{run_id}.json").write_text(
        json.dumps(
            {
                "run_id": run_id,
                "status": "applied",
                "recovery_commit": head.strip(),
                "apply_commit": head.strip(),
            }
        )
    )
    rolled = dsh_memory(
        root, ".", "rollback", "--run-id", run_id, "--confirmation", "ROLLBACK_MEMORY"
    )
    assert error_code(rolled) == "repo-unavailable"
    assert error_code(dsh_memory(root, ".", "init")) == "repo-unavailable"
    assert not (root / "archive").exists()
    assert not (root / ".last-sync").exists()
    assert git(root, "rev-parse", "HEAD") == head
    # Reading is still allowed: status describes what is there, it changes nothing.
    assert value(dsh_memory(root, ".", "status"))["dataFileCount"] >= 1


def test_a_repository_made_by_the_earlier_tool_still_qualifies(tmp_path: Path) -> None:
    """The earlier init's layout (README, summary, .last-sync, .sync/.gitignore, scripts/)."""
    root = tmp_path / "earlier"
    (root / ".sync").mkdir(parents=True)
    (root / "scripts").mkdir()
    (root / "README.md").write_text("# DPSK memory\n")
    (root / "summary.md").write_text("")
    (root / ".last-sync").write_text("")
    (root / ".sync" / ".gitignore").write_text(EARLIER_GITIGNORE)
    (root / "scripts" / "filter_session.py").write_text("print('x')\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "Initialize DPSK memory repository")
    (root / "handbook").mkdir()
    (root / "handbook" / "a.md").write_text("a note\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "a note")
    cleared = value(dsh_memory(root, str(root), "clear", "--confirmation", "DELETE_MEMORY"))
    assert cleared["clearedFileCount"] == 1
    assert not (root / "handbook" / "a.md").exists()


def test_init_of_an_empty_git_repository_still_works(tmp_path: Path) -> None:
    root = tmp_path / "fresh"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    assert value(dsh_memory(tmp_path, str(root), "init"))["created"] is True


def test_reads_of_a_project_write_nothing_into_it(tmp_path: Path) -> None:
    root = project(tmp_path)
    exclude = (root / ".git" / "info" / "exclude").read_bytes()
    found = value(dsh_memory(root, ".", "search", "--query", "onboarding"))
    assert [r["path"] for r in found["results"]] == ["handbook/onboarding.md"]
    assert value(dsh_memory(root, ".", "context", "--query", "onboarding"))["count"] == 1
    assert not (root / ".sync").exists()  # no usage sidecar, no index
    assert (root / ".git" / "info" / "exclude").read_bytes() == exclude
    assert git(root, "status", "--porcelain") == ""
