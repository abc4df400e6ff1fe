"""Evidence hashing is bounded work, whatever the corpus records.

The worst corpus a repository can hold: 500 records naming the same 32 files of 8 MiB
each, every record under different recorded digests. Hashing once per (path, digest) would
read 128 GiB for one session start. Each file is hashed once per run (and once per process
while it stays the same), and a run's byte budget leaves the rest ``unknown`` with a reason
that says "not verified". The commands run as the console script, in a process of their
own: the process's memory of hashed files must not carry over from another test.

The large files are sparse (no disk used), but every byte of them is really read and hashed.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from dsh_test_support import commands

from dsh_common.paths import resolve_workspace
from dsh_compound.evidence import (
    HOOK_HASH_BUDGET,
    RUN_HASH_BUDGET,
    EvidenceRun,
    evidence_report,
)
from dsh_compound.limits import CORPUS_DIRECTORY, LIMITS
from dsh_compound.record import build_metadata, render_record

SIZE = LIMITS.source_bytes  # 8 MiB, the largest source a record may name
ZEROS_DIGEST = hashlib.sha256(bytes(SIZE)).hexdigest()


def sparse_files(root: Path, count: int) -> list[str]:
    paths = []
    for index in range(count):
        relative = f"big/file-{index:03d}.bin"
        location = root / relative
        location.parent.mkdir(parents=True, exist_ok=True)
        with open(location, "wb") as handle:
            handle.truncate(SIZE)
        paths.append(relative)
    return paths


def write_records(root: Path, files_of: list[list[str]], digest_of: Any) -> None:
    corpus = root.joinpath(*CORPUS_DIRECTORY.split("/"))
    corpus.mkdir(parents=True, exist_ok=True)
    for index, files in enumerate(files_of):
        draft = {
            "id": f"lesson-{index:03d}",
            "title": f"Lesson {index}",
            "tags": ["big"],
            "problem": "p",
            "rootCause": "r",
            "resolution": "s",
            "whenToUse": "w",
            "verification": {"command": "c", "result": "r"},
            "files": files,
        }
        digests = [digest_of(index, position) for position in range(len(files))]
        metadata = build_metadata(
            draft,
            digests,
            created_at="2026-01-02T03:04:05.006Z",
            updated_at="2026-01-02T03:04:05.006Z",
        )
        (corpus / f"{draft['id']}.md").write_bytes(render_record(metadata))


def run(args: list[str], cwd: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    # A hang here (minutes of hashing) fails on the timeout.
    return commands.run("dsh-compound", *args, input=stdin, cwd=cwd, timeout=120)


@pytest.fixture
def same_files_many_digests(tmp_path: Path) -> Path:
    """500 records x the same 32 files x 8 MiB, each under other digests."""
    root = tmp_path / "same-files"
    (root / ".git").mkdir(parents=True)
    files = sparse_files(root, LIMITS.files_max)
    write_records(root, [files] * 500, lambda record, position: f"{record:032x}{position:032x}")
    return root


def test_many_records_naming_the_same_files_cost_each_file_one_hash(
    same_files_many_digests: Path,
) -> None:
    root = same_files_many_digests
    hook = run(["hook", "session-start"], root, json.dumps({"cwd": str(root)}))
    assert hook.returncode == 0, hook.stderr
    text = json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "lesson(s) captured in this workspace have source files that changed" in text
    # The hook's budget (32 MiB) hashes 4 of the 32 files; the rest is unverified per
    # file, never unchanged. Every record has changed files, so all are listed as stale.
    assert "- lesson-000 [changed: big/file-000.bin" in text

    check = run(["check"], root)
    assert check.returncode == 0, check.stderr
    report = json.loads(check.stdout)
    # 256 MiB of distinct files: within the check's 512 MiB budget, so all are compared.
    assert "unverified" not in report
    assert report["counts"]["evidenceStatus"]["changed"] == report["scanned"]
    first = report["needsReview"][0]["evidenceFiles"]
    assert {entry["status"] for entry in first} == {"changed"}


def test_library_run_hashes_each_file_once_and_the_process_remembers(tmp_path: Path) -> None:
    root = tmp_path / "lib"
    root.mkdir()
    files = sparse_files(root, 3)
    workspace = resolve_workspace(root)
    entries = [{"path": path, "sha256": f"{record:064x}"} for record in range(50) for path in files]
    first = EvidenceRun()
    report = evidence_report(workspace, entries, first)
    assert report["evidenceStatus"] == "changed"
    assert first.hashed == 3 * SIZE  # 150 entries, three files: three hashes
    again = EvidenceRun()
    evidence_report(workspace, [{"path": files[0], "sha256": ZEROS_DIGEST}], again)
    assert again.hashed == 0  # same file version: the process's memo answers
    with open(root / files[0], "r+b") as handle:
        handle.write(b"x")
    moved = EvidenceRun()
    result = evidence_report(workspace, [{"path": files[0], "sha256": ZEROS_DIGEST}], moved)
    assert moved.hashed == SIZE and result["evidenceStatus"] == "changed"


@pytest.fixture
def more_than_the_budget(tmp_path: Path) -> Path:
    """Honest records over 80 distinct 8 MiB files: 640 MiB, more than a run may hash."""
    root = tmp_path / "big"
    (root / ".git").mkdir(parents=True)
    files = sparse_files(root, 80)
    groups = [files[start : start + 16] for start in range(0, 80, 16)]
    write_records(root, groups, lambda record, position: ZEROS_DIGEST)
    return root


def test_evidence_past_the_budget_is_reported_not_verified(more_than_the_budget: Path) -> None:
    root = more_than_the_budget
    check = run(["check"], root)
    assert check.returncode == 0, check.stderr
    report = json.loads(check.stdout)
    hashable = RUN_HASH_BUDGET // SIZE  # 64 files
    assert report["unverified"]["count"] == 80 - hashable
    assert report["unverified"]["budgetBytes"] == RUN_HASH_BUDGET
    assert report["unverified"]["paths"] == [f"big/file-{n:03d}.bin" for n in range(64, 80)]
    assert any("not verified for 16 source file(s)" in w for w in report["warnings"])
    counts = report["counts"]["evidenceStatus"]
    assert counts["unchanged"] == 4 and counts["unknown"] == 1  # never "unchanged" unhashed
    last = report["needsReview"][0]
    assert last["id"] == "lesson-004" and last["evidenceStatus"] == "unknown"
    assert all(e["reason"].startswith("not verified:") for e in last["evidenceFiles"])

    hook = run(["hook", "session-start"], root, json.dumps({"cwd": str(root / "big")}))
    assert hook.returncode == 0, hook.stderr
    text = json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
    # 32 MiB: 4 files hashed and unchanged, the rest unverified - not "changed".
    assert "changed since capture" not in text
    assert HOOK_HASH_BUDGET // SIZE < 16  # so no lesson has all its files hashed
    assert "the evidence of 5 lesson(s) was not verified" in text


def test_a_gate_fails_sources_the_budget_left_unhashed(more_than_the_budget: Path) -> None:
    # lesson-004's sources are all "unknown": not changed, but not vouched for either.
    done = run(["check", "--fail-on", "changed", "--format", "text"], more_than_the_budget)
    assert done.returncode == 1, done.stderr
    assert (
        "warning: --fail-on changed: the check is incomplete (16 source file(s) were left "
        "unhashed by the hashing budget (status unknown)); an incomplete check fails the gate"
    ) in done.stdout.splitlines()
    assert run(["check"], more_than_the_budget).returncode == 0


def test_a_corpus_within_the_budget_prints_exactly_what_it_did(tmp_path: Path) -> None:
    root = tmp_path / "small"
    (root / ".git").mkdir(parents=True)
    (root / "a.txt").write_text("a\n")
    write_records(root, [["a.txt"]], lambda r, p: hashlib.sha256(b"a\n").hexdigest())
    report = json.loads(run(["check"], root).stdout)
    assert sorted(report) == sorted(
        ["needsReview", "unchangedConsistent", "counts", "warnings", "scanned", "truncated"]
    )
    assert report["warnings"] == []


def mcp_check(root: Path) -> dict[str, Any]:
    """``compound_check`` through a real MCP session with the installed server in ``root``."""
    pytest.importorskip("mcp", reason="the [mcp] extra is not installed")
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=str(commands.program("dsh-compound")), args=["mcp"], cwd=str(root)
    )
    found: dict[str, Any] = {}

    async def main() -> None:
        with anyio.fail_after(120):
            async with (
                stdio_client(params) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                result = await session.call_tool("compound_check", {})
                assert result.is_error is False, result.content
                found.update(result.structured_content or {})

    anyio.run(main)
    return found


def test_the_mcp_check_of_many_records_naming_the_same_files_hashes_each_once(
    same_files_many_digests: Path,
) -> None:
    found = mcp_check(same_files_many_digests)  # would hash 128 GiB (fails on the timeout)
    assert found["needsReviewTotal"] == found["scanned"] and "unverified" not in found


def test_the_mcp_check_says_what_it_left_unverified(more_than_the_budget: Path) -> None:
    found = mcp_check(more_than_the_budget)
    assert found["unverified"]["count"] == 80 - RUN_HASH_BUDGET // SIZE
    assert any("not verified" in warning for warning in found["warnings"])
