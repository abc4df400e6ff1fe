"""Writers scale to 100,000 records and to more than 32 MiB.

Paths travel to git on stdin, never on one argv (100,000 paths cannot even start a
process), and a rollback streams its blobs in bounded chunks (one ``cat-file --batch`` for
everything hit the runner's 32 MiB output cap, so a large clear could never be undone).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from dsh_test_support import in_process
from dsh_test_support.gitcmd import git

RECORDS = 100_000


def cli(root: Path, *args: str) -> Any:
    """``dsh-memory --root ROOT ARGS`` in process; its value."""
    result = in_process.run("dsh-memory", "--root", str(root), *args)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout)["value"]


def commit_files(root: Path, files: dict[str, bytes]) -> None:
    """Write ``files`` (ASCII) and commit them with plumbing (fast, one process per step)."""
    oids: dict[bytes, str] = {}
    lines: list[str] = []
    for relative, data in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        if data not in oids:
            oids[data] = git(
                root, "hash-object", "-w", "--stdin", input=data.decode("ascii")
            ).strip()
        lines.append(f"100644 {oids[data]}\t{relative}\0")
    git(root, "update-index", "-z", "--index-info", input="".join(lines))
    tree = git(root, "write-tree").strip()
    head = git(root, "rev-parse", "HEAD").strip()
    new = git(root, "commit-tree", tree, "-p", head, "-m", "records").strip()
    git(root, "update-ref", "HEAD", new, head)


@pytest.mark.slow  # ~2 minutes on a loaded two-core machine: 100,000 files written thrice
def test_migrate_and_clear_of_100000_records(memory_root: Path) -> None:
    files = {f"handbook/d{n % 100}/r{n}.md": b"legacy note\n" for n in range(RECORDS)}
    commit_files(memory_root, files)
    preview = cli(memory_root, "migrate-legacy", "--dry-run", "true")
    assert preview["legacyCount"] == RECORDS
    migrated = cli(memory_root, "migrate-legacy", "--dry-run", "false")
    assert migrated["migratedCount"] == RECORDS
    assert (memory_root / "handbook/d7/r7.md").read_text().startswith("---\n")
    cleared = cli(memory_root, "clear", "--confirmation", "DELETE_MEMORY")
    assert cleared["clearedFileCount"] == RECORDS
    assert not (memory_root / "handbook" / "d7").exists()
    record = cli(memory_root, "runs", "--limit", "1", "--operation", "clear")["runs"][0]
    assert record["changed_path_count"] == RECORDS + 1  # every record, and summary.md


def test_rollback_of_a_clear_larger_than_32_mib(memory_root: Path) -> None:
    files = {f"handbook/big{n}.md": bytes([65 + n]) * (1024 * 1024) for n in range(40)}
    files["archive/huge.md"] = b"h" * (12 * 1024 * 1024)  # one blob above the chunk size
    commit_files(memory_root, files)
    cleared = cli(memory_root, "clear", "--confirmation", "DELETE_MEMORY")
    assert cleared["clearedFileCount"] == 41
    run_id = cli(memory_root, "runs", "--limit", "1")["runs"][0]["run_id"]
    cli(memory_root, "rollback", "--run-id", run_id, "--confirmation", "ROLLBACK_MEMORY")
    for relative, data in files.items():
        assert (memory_root / relative).read_bytes() == data
    assert cli(memory_root, "status")["targetDirty"] is False
