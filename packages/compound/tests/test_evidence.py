"""Evidence statuses per file, their precedence, and what changedFiles holds."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dsh_common.paths import resolve_workspace
from dsh_compound import sha256
from dsh_compound.evidence import aggregate_status, evidence_report
from dsh_compound.limits import LIMITS


def entry(root: Path, relative: str) -> dict[str, str]:
    return {"path": relative, "sha256": sha256((root / relative).read_bytes())}


def test_unchanged_file_is_unchanged(workspace: Path) -> None:
    report = evidence_report(resolve_workspace(workspace), [entry(workspace, "src/login.js")])
    assert report == {
        "evidenceStatus": "unchanged",
        "changedFiles": [],
        "evidenceFiles": [{"path": "src/login.js", "status": "unchanged"}],
    }


def test_edited_file_is_changed(workspace: Path) -> None:
    recorded = entry(workspace, "src/login.js")
    (workspace / "src/login.js").write_text("export const timeoutMs = 60000;\n")
    report = evidence_report(resolve_workspace(workspace), [recorded])
    assert report["evidenceStatus"] == "changed"
    assert report["changedFiles"] == ["src/login.js"]


def test_deleted_file_is_missing(workspace: Path) -> None:
    recorded = entry(workspace, "src/login.js")
    (workspace / "src/login.js").unlink()
    assert evidence_report(resolve_workspace(workspace), [recorded])["evidenceStatus"] == "missing"


def test_file_under_a_parent_that_became_a_file_is_missing(workspace: Path) -> None:
    recorded = entry(workspace, "src/login.js")
    (workspace / "src/login.js").unlink()
    (workspace / "src").rmdir()
    (workspace / "src").write_text("now a file")
    assert evidence_report(resolve_workspace(workspace), [recorded])["evidenceStatus"] == "missing"


def test_file_that_became_a_symlink_is_unknown(workspace: Path) -> None:
    recorded = entry(workspace, "src/login.js")
    os.replace(workspace / "src/login.js", workspace / "src/real.js")
    (workspace / "src/login.js").symlink_to("real.js")
    report = evidence_report(resolve_workspace(workspace), [recorded])
    assert report["evidenceStatus"] == "unknown"
    assert report["evidenceFiles"][0]["reason"]


def test_file_under_a_symlinked_directory_is_unknown(workspace: Path) -> None:
    recorded = entry(workspace, "src/login.js")
    os.replace(workspace / "src", workspace / "real-src")
    (workspace / "src").symlink_to("real-src")
    assert evidence_report(resolve_workspace(workspace), [recorded])["evidenceStatus"] == "unknown"


def test_file_that_became_a_directory_is_unknown(workspace: Path) -> None:
    recorded = entry(workspace, "src/login.js")
    (workspace / "src/login.js").unlink()
    (workspace / "src/login.js").mkdir()
    assert evidence_report(resolve_workspace(workspace), [recorded])["evidenceStatus"] == "unknown"


def test_file_that_became_a_fifo_is_unknown(workspace: Path) -> None:
    recorded = entry(workspace, "src/login.js")
    (workspace / "src/login.js").unlink()
    os.mkfifo(workspace / "src/login.js")
    assert evidence_report(resolve_workspace(workspace), [recorded])["evidenceStatus"] == "unknown"


def test_file_over_the_source_limit_is_unknown(workspace: Path) -> None:
    recorded = entry(workspace, "src/login.js")
    with open(workspace / "src/login.js", "wb") as handle:
        handle.truncate(LIMITS.source_bytes + 1)
    report = evidence_report(resolve_workspace(workspace), [recorded])
    assert report["evidenceStatus"] == "unknown"
    assert "limit" in report["evidenceFiles"][0]["reason"]


def test_invalid_recorded_path_is_unknown(workspace: Path) -> None:
    report = evidence_report(resolve_workspace(workspace), [{"path": "../x", "sha256": "a" * 64}])
    assert report["evidenceStatus"] == "unknown"


def test_mixed_statuses_keep_each_file_and_aggregate_by_precedence(workspace: Path) -> None:
    (workspace / "src/a.js").write_text("a")
    (workspace / "src/b.js").write_text("b")
    (workspace / "src/c.js").write_text("c")
    files = [entry(workspace, f"src/{name}.js") for name in ("a", "b", "c")]
    files.insert(0, entry(workspace, "src/login.js"))
    (workspace / "src/a.js").write_text("changed")
    (workspace / "src/b.js").unlink()
    (workspace / "src/c.js").unlink()
    (workspace / "src/c.js").mkdir()
    report = evidence_report(resolve_workspace(workspace), files)
    assert [f["status"] for f in report["evidenceFiles"]] == [
        "unchanged",
        "changed",
        "missing",
        "unknown",
    ]
    assert report["evidenceStatus"] == "missing"
    assert report["changedFiles"] == ["src/a.js", "src/b.js", "src/c.js"]


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        (["unchanged", "unknown", "changed", "missing"], "missing"),
        (["unknown", "changed", "unchanged"], "changed"),
        (["unchanged", "unknown"], "unknown"),
        (["unchanged", "unchanged"], "unchanged"),
    ],
)
def test_aggregate_precedence_is_missing_changed_unknown_unchanged(
    statuses: list[str], expected: str
) -> None:
    assert aggregate_status(statuses) == expected
