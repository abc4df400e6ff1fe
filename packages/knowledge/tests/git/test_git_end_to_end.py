"""Freshness and health end to end: real items (both backends), the command line (in
process), a fake git binary."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dsh_test_support import in_process

from dsh_knowledge._git.inspect import inspect_snapshots
from dsh_knowledge.health import check_health
from dsh_knowledge.repository import KnowledgeRepository

if TYPE_CHECKING:
    from .conftest import Repo


def run_cli(db: str, *args: str) -> subprocess.CompletedProcess[str]:
    return in_process.run("dsh-knowledge", "--db", db, *args)


def test_health_leaves_stored_items_unchanged(
    repo: Repo, repository: KnowledgeRepository, make_evidence: Callable[..., dict[str, Any]]
) -> None:
    commit = repo.head()
    item = repository.create(
        type="fact",
        content="The app prints hello.",
        scope={"workspace": str(repo.path)},
        evidence=[make_evidence(commit, "src/app.py")],
    )
    verified = repository.verify(item["id"])
    (repo.path / "src/app.py").unlink()
    [result] = check_health([verified], repo.path, include_guidance=True)
    assert result["status"] == "potentially_stale"
    assert repository.require(item["id"]) == verified


def test_cli_freshness_and_health_report_json(repo: Repo, db: str) -> None:
    commit = repo.head()
    evidence = json.dumps(
        {
            "type": "file",
            "source": "src/app.py",
            "gitProvenance": {"commit": commit, "path": "src/app.py"},
        }
    )
    added = run_cli(
        db,
        "add",
        "--workspace",
        str(repo.path),
        "--type",
        "fact",
        "--content",
        "The app prints hello.",
        "--evidence",
        evidence,
    )
    assert added.returncode == 0, added.stderr
    item_id = json.loads(added.stdout)["id"]

    fresh = run_cli(db, "freshness", item_id, "--repo", str(repo.path))
    assert fresh.returncode == 0, fresh.stderr
    assert json.loads(fresh.stdout)["status"] == "current"

    repo.write("src/app.py", "print('changed')\n")
    health = run_cli(db, "health", item_id, "--repo", str(repo.path), "--guidance")
    assert health.returncode == 0, health.stderr
    [result] = json.loads(health.stdout)["results"]
    assert result["reasons"] == ["working_tree_changed"]
    assert [g["code"] for g in result["guidance"]] == ["review_claim"]


def test_cli_health_rejects_more_than_sixteen_ids(repo: Repo, db: str) -> None:
    added = run_cli(db, "add", "--workspace", "/w", "--type", "fact", "--content", "a fact")
    ids = [json.loads(added.stdout)["id"]] * 17
    result = run_cli(db, "health", *ids, "--repo", str(repo.path))
    assert result.returncode == 1
    assert json.loads(result.stderr)["error"]["code"] == "invalid-health-batch"


def test_unparseable_git_answer_is_malformed_output(repo: Repo, tmp_path: Path) -> None:
    # A stand-in git, through a real process: it answers rev-parse with a relative path.
    fake = tmp_path / "fake-git"
    fake.write_text("#!/bin/sh\necho 'not/an/absolute/path'\n")
    fake.chmod(0o755)
    inspection = inspect_snapshots(repo.path, [(repo.head(), "src/app.py")], git=str(fake))
    assert inspection.checks[0].reason == "malformed_output"
    assert inspection.commands_run == 1


def test_failing_git_command_is_command_failed(repo: Repo, tmp_path: Path) -> None:
    # rev-parse succeeds; every later command exits 2.
    fake = tmp_path / "fake-git"
    fake.write_text(
        "#!/bin/sh\n"
        'for arg in "$@"; do\n'
        f'  if [ "$arg" = "--show-toplevel" ]; then echo "{repo.path}"; exit 0; fi\n'
        "done\n"
        "exit 2\n"
    )
    fake.chmod(0o755)
    inspection = inspect_snapshots(repo.path, [(repo.head(), "src/app.py")], git=str(fake))
    assert inspection.checks[0].reason == "command_failed"


def test_output_past_the_cap_is_command_failed(repo: Repo, tmp_path: Path) -> None:
    # rev-parse answers normally; the next command floods stdout past the 64 KiB cap.
    fake = tmp_path / "fake-git"
    fake.write_text(
        "#!/bin/sh\n"
        'for arg in "$@"; do\n'
        f'  if [ "$arg" = "--show-toplevel" ]; then echo "{repo.path}"; exit 0; fi\n'
        "done\n"
        "head -c 200000 /dev/zero\n"
    )
    fake.chmod(0o755)
    inspection = inspect_snapshots(repo.path, [(repo.head(), "src/app.py")], git=str(fake))
    assert inspection.checks[0].reason == "command_failed"
    assert inspection.commands_run == 2


def test_identical_pairs_are_compared_once(repo: Repo) -> None:
    commit = repo.head()
    pairs: list[tuple[object, object]] = [(commit, "src/app.py")] * 200
    pairs += [(commit.upper(), "./src\\app.py"), (commit, "docs/guide.md")]
    inspection = inspect_snapshots(repo.path, pairs)
    assert inspection.distinct_checks == 2
    assert {check.status for check in inspection.checks} == {"current"}
    assert len(inspection.checks) == 202
