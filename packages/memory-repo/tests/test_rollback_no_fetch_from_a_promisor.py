"""``rollback`` of a journal record naming a commit the repository lacks fetches nothing.

The memory repository is made a partial clone whose promisor remote is ``ext::<command>``
(real config). Looking the missing commit up makes plain git lazily fetch it, i.e. run the
command; ``dsh-memory rollback`` (run in process: git is its child either way) must not.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dsh_test_support import in_process
from dsh_test_support.gitcmd import git

from dsh_memory.write import journal

UNKNOWN = "0123456789abcdef0123456789abcdef01234567"
RUN_ID = "20260101T000000Z-migrate-4242"


dsh_memory = in_process.runner("dsh-memory")


def plant(root: Path, marker: Path) -> None:
    git(root, "config", "extensions.partialClone", "origin")
    git(root, "config", "remote.origin.promisor", "true")
    git(root, "config", "remote.origin.url", f"ext::sh -c touch% {marker}")
    git(root, "config", "protocol.ext.allow", "always")


def journal_record(root: Path, recovery: str, apply: str) -> None:
    """An ``applied`` run naming ``recovery``/``apply`` commits, committed like ours are."""
    record = journal.make_record(
        run_id=RUN_ID,
        operation="migrate",
        status="applied",
        started_at="2026-01-01T00:00:00.000Z",
        changed_paths=["handbook/old.md"],
        recovery_commit=recovery,
        apply_commit=apply,
    )
    path = root / journal.run_record_path(RUN_ID)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record) + "\n")
    git(root, "add", "--", journal.run_record_path(RUN_ID))
    git(root, "commit", "-q", "-m", f"DPSK memory journal: {RUN_ID}")


@pytest.fixture
def memory(dsh_home: Path) -> Path:
    root = dsh_home / "storages" / "memory"
    assert dsh_memory("init").returncode == 0
    return root


def test_the_planted_promisor_command_runs_under_plain_git(memory: Path, tmp_path: Path) -> None:
    marker = tmp_path / "MARKER"
    plant(memory, marker)
    git(memory, "rev-parse", "--verify", "--quiet", f"{UNKNOWN}^{{commit}}", check=False)
    assert marker.exists()


@pytest.mark.parametrize("missing", ["recovery", "apply", "both"])
def test_rollback_of_a_run_naming_a_missing_commit_runs_nothing(
    memory: Path, tmp_path: Path, missing: str
) -> None:
    head = git(memory, "rev-parse", "HEAD").strip()
    recovery = UNKNOWN if missing in ("recovery", "both") else head
    apply = UNKNOWN if missing in ("apply", "both") else head
    journal_record(memory, recovery, apply)
    marker = tmp_path / "MARKER"
    plant(memory, marker)
    done = dsh_memory("rollback", "--run-id", RUN_ID, "--confirmation", "ROLLBACK_MEMORY")
    assert done.returncode == 1, done.stdout
    envelope = json.loads(done.stderr)
    assert envelope["ok"] is False
    # The run cannot be rolled back (its commits are gone); how exactly it says so is the
    # rollback's business, running the promisor's command is not.
    assert envelope["error"]["code"] in {"rollback-not-applicable", "rollback-failed"}
    assert not marker.exists()
