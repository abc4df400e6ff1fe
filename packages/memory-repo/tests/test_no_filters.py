"""No dsh-memory command ever runs a clean or process filter a repository configures.

The memory repository's config names a filter program and a ``.gitattributes`` in the
payload selects it; every payload file is then made stat-dirty, which is exactly when ``git
status`` would re-hash it *through the filter*. Each command runs (in process: the filters
would be git's children either way) and the filter's marker file must never appear.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from dsh_test_support import in_process
from dsh_test_support.gitcmd import git

LEGACY = "a note without front matter\n"


def cli(root: Path, *args: str) -> Any:
    result = in_process.run("dsh-memory", "--root", str(root), *args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["value"]


def plant_filters(root: Path, marker: Path) -> None:
    """A clean filter and a process filter that would each create ``marker`` if run."""
    git(root, "config", "filter.x.clean", f"sh -c 'touch {marker}; cat'")
    git(root, "config", "filter.y.process", f"sh -c 'touch {marker}; cat'")
    git(root, "config", "filter.y.required", "false")
    for folder in ("handbook", "rollouts", "archive"):
        (root / folder).mkdir(exist_ok=True)
        (root / folder / ".gitattributes").write_text("* filter=x\n")
    (root / ".gitattributes").write_text("summary.md filter=y\n*.md filter=x\n")


def make_stat_dirty(root: Path) -> None:
    """New mtimes on every payload file: git's stat cache no longer matches."""
    stamp = time.time() + 5
    for folder in ("handbook", "rollouts", "archive"):
        for path in (root / folder).rglob("*"):
            if path.is_file():
                os.utime(path, (stamp, stamp))
    os.utime(root / "summary.md", (stamp, stamp))


def record(record_id: str, body: str) -> str:
    return f"---\nschema_version: 1\nid: {record_id}\n---\n{body}"


def test_no_command_runs_a_repository_filter(memory_root: Path, tmp_path: Path) -> None:
    marker = tmp_path / "FILTER-RAN"
    root = memory_root
    (root / "summary.md").write_text("# summary\n")
    (root / "handbook").mkdir(exist_ok=True)
    (root / "handbook/pnpm.md").write_text(record("pnpm", "prefers pnpm\n"))
    (root / "handbook/old.md").write_text(LEGACY)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "records")
    plant_filters(root, marker)
    git(root, "add", "-A")  # the .gitattributes files are committed (git add runs x: reset)
    git(root, "commit", "-qm", "attributes")
    marker.unlink(missing_ok=True)

    make_stat_dirty(root)
    assert cli(root, "status")["targetDirty"] is False
    assert not marker.exists(), 'assert cli(root, "status")["targetDirty"] is False'
    make_stat_dirty(root)
    health = cli(root, "health")
    assert not marker.exists(), 'health = cli(root, "health")'
    assert health["payloadDirty"] is False
    assert health["needsManualRecovery"] is False
    make_stat_dirty(root)
    assert cli(root, "legacy-records")["count"] == 1
    assert not marker.exists(), 'assert cli(root, "legacy-records")["count"] == 1'
    make_stat_dirty(root)
    assert cli(root, "migrate-legacy", "--dry-run", "true")["status"] == "pending"
    assert not marker.exists(), 'assert cli(root, "migrate-legacy", "--dry-run", "true")["sta'
    make_stat_dirty(root)
    migrated = cli(root, "migrate-legacy", "--dry-run", "false")
    assert not marker.exists(), 'migrated = cli(root, "migrate-legacy", "--dry-run", "false")'
    assert migrated["status"] == "applied"
    run_id = cli(root, "runs", "--limit", "1")["runs"][0]["run_id"]
    assert not marker.exists(), 'run_id = cli(root, "runs", "--limit", "1")["runs"][0]["run_i'
    make_stat_dirty(root)
    rolled = cli(root, "rollback", "--run-id", run_id, "--confirmation", "ROLLBACK_MEMORY")
    assert not marker.exists(), 'rolled = cli(root, "rollback", "--run-id", run_id, "--confir'
    assert rolled["status"] == "rolled_back"
    make_stat_dirty(root)
    assert cli(root, "search", "--query", "pnpm")["count"] == 1
    assert not marker.exists(), 'assert cli(root, "search", "--query", "pnpm")["count"] == 1'
    make_stat_dirty(root)
    assert cli(root, "context", "--query", "pnpm")["count"] == 1
    assert not marker.exists(), 'assert cli(root, "context", "--query", "pnpm")["count"] == 1'
    make_stat_dirty(root)
    assert cli(root, "init")["created"] is False
    assert len(cli(root, "runs")["runs"]) == 2
    make_stat_dirty(root)
    cleared = cli(root, "clear", "--confirmation", "DELETE_MEMORY")
    assert not marker.exists(), 'cleared = cli(root, "clear", "--confirmation", "DELETE_MEMOR'
    assert cleared["alreadyEmpty"] is False
    assert not marker.exists(), "a dsh-memory command ran the repository's filter"


def test_dirty_payload_is_still_seen_without_filters(memory_root: Path, tmp_path: Path) -> None:
    marker = tmp_path / "FILTER-RAN"
    root = memory_root
    (root / "handbook/a.md").write_text(record("a", "one\n"))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "a")
    plant_filters(root, marker)
    (root / "handbook/a.md").write_text(record("a", "two\n"))
    assert cli(root, "status")["targetDirty"] is True
    assert not marker.exists()


def test_search_index_change_key_runs_no_filter(memory_root: Path, tmp_path: Path) -> None:
    """From 3,000 records the index's freshness key comes from git: still no filter."""
    marker = tmp_path / "FILTER-RAN"
    root = memory_root
    handbook = root / "handbook"
    for number in range(3100):
        (handbook / f"r{number}.md").write_text(record(f"r{number}", f"body {number} word\n"))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "many records")
    plant_filters(root, marker)
    assert (
        len(cli(root, "search", "--query", "word", "--limit", "1")["results"]) == 1
    )  # builds index
    make_stat_dirty(root)
    assert len(cli(root, "search", "--query", "word", "--limit", "1")["results"]) == 1  # fast key
    (handbook / "r7.md").write_text(record("r7", "body 7 zebra\n"))
    found = cli(root, "search", "--query", "zebra")
    assert [r["path"] for r in found["results"]] == ["handbook/r7.md"]
    assert not marker.exists(), "the search index's change key ran the repository's filter"
