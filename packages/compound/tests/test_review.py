"""Inspect one record; check the whole corpus."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dsh_compound import capture, check, inspect, sha256
from dsh_compound.errors import (
    InvalidIdError,
    MalformedRecordError,
    RecordNotFoundError,
    RecordTooLargeError,
    SymlinkRejectedError,
)
from dsh_compound.limits import LIMITS
from dsh_compound.record import render_record


def test_inspect_returns_the_complete_record(workspace: Path, draft: Any) -> None:
    captured = capture(workspace, {**draft, "problem": "P" * 4000})
    result = inspect(workspace, "login-timeout")
    assert result["digest"] == captured["digest"]
    assert result["metadata"] == captured["metadata"]
    assert result["body"].startswith("# Login requests time out")
    assert result["evidence"]["command"] == draft["verification"]["command"]
    assert result["evidenceStatus"] == "unchanged"
    assert result["contentStatus"] == "consistent"
    assert result["warnings"] == []
    assert result["summary"].endswith("…")


def test_inspect_reports_a_body_edit_as_modified_with_a_warning(
    workspace: Path, draft: Any
) -> None:
    path = Path(capture(workspace, draft)["path"])
    front, body = path.read_text().split("\n---\n", 1)
    path.write_text(
        front + "\n---\n" + body.replace("Describe the observed failure.", "Something else.")
    )
    result = inspect(workspace, "login-timeout")
    assert result["contentStatus"] == "modified"
    assert any("modified" in w for w in result["warnings"])
    assert "Something else." in result["body"]
    assert result["metadata"]["problem"] == "Describe the observed failure."


def test_inspect_reports_a_metadata_edit_as_modified(workspace: Path, draft: Any) -> None:
    captured = capture(workspace, draft)
    path = Path(captured["path"])
    body = path.read_text().split("\n---\n", 1)[1]
    metadata = {**captured["metadata"], "resolution": "Delete the failing test."}
    front = render_record(metadata).decode().split("\n---\n", 1)[0]
    path.write_text(front + "\n---\n" + body)
    result = inspect(workspace, "login-timeout")
    assert result["contentStatus"] == "modified"
    assert result["warnings"]


def test_inspect_accepts_a_crlf_record_with_a_bom(workspace: Path, draft: Any) -> None:
    path = Path(capture(workspace, draft)["path"])
    data = b"\xef\xbb\xbf" + path.read_bytes().replace(b"\n", b"\r\n")
    path.write_bytes(data)
    result = inspect(workspace, "login-timeout")
    assert result["contentStatus"] == "consistent"
    assert result["digest"] == sha256(data)


def test_inspect_reports_changed_sources(workspace: Path, draft: Any) -> None:
    capture(workspace, draft)
    (workspace / "tests/login.test.js").unlink()
    result = inspect(workspace, "login-timeout")
    assert result["evidenceStatus"] == "missing"
    assert result["changedFiles"] == ["tests/login.test.js"]
    assert any("missing" in w for w in result["warnings"])


def test_inspect_of_an_absent_record_is_not_found(workspace: Path, draft: Any) -> None:
    with pytest.raises(RecordNotFoundError):
        inspect(workspace, "login-timeout")
    capture(workspace, draft)
    with pytest.raises(RecordNotFoundError):
        inspect(workspace, "other")


def test_inspect_refuses_an_invalid_id(workspace: Path) -> None:
    with pytest.raises(InvalidIdError):
        inspect(workspace, "../etc/passwd")


def test_inspect_refuses_a_symlinked_record(workspace: Path, draft: Any) -> None:
    path = Path(capture(workspace, draft)["path"])
    path.rename(path.with_name("real.txt"))
    path.symlink_to("real.txt")
    with pytest.raises(SymlinkRejectedError):
        inspect(workspace, "login-timeout")


def test_inspect_refuses_an_oversized_record(workspace: Path, draft: Any) -> None:
    path = Path(capture(workspace, draft)["path"])
    path.write_bytes(path.read_bytes() + b" " * LIMITS.record_bytes)
    with pytest.raises(RecordTooLargeError):
        inspect(workspace, "login-timeout")


def test_inspect_refuses_a_malformed_record(workspace: Path, draft: Any) -> None:
    path = Path(capture(workspace, draft)["path"])
    path.write_text("hello")
    with pytest.raises(MalformedRecordError):
        inspect(workspace, "login-timeout")


def test_check_counts_clean_records_and_lists_the_rest(
    workspace: Path, draft: Any, write_record: Any
) -> None:
    (workspace / "src/other.js").write_text("other\n")
    write_record(workspace, id="clean-one", files=["src/other.js"])
    write_record(workspace, id="clean-two", files=["src/other.js"])
    write_record(workspace, id="changed-one", files=["src/login.js"])
    edited = write_record(workspace, id="edited-one", files=["src/other.js"])
    edited.write_text(edited.read_text() + "\nhand edit\n")
    write_record(workspace, id="missing-one", files=["tests/login.test.js", "src/login.js"])
    (workspace / "src/login.js").write_text("changed\n")
    (workspace / "tests/login.test.js").unlink()
    result = check(workspace)
    assert result["unchangedConsistent"] == {"count": 2, "ids": ["clean-one", "clean-two"]}
    listed = {item["id"]: item for item in result["needsReview"]}
    assert sorted(listed) == ["changed-one", "edited-one", "missing-one"]
    assert listed["changed-one"]["evidenceStatus"] == "changed"
    assert listed["changed-one"]["changedFiles"] == ["src/login.js"]
    assert listed["edited-one"]["contentStatus"] == "modified"
    assert listed["edited-one"]["evidenceStatus"] == "unchanged"
    assert listed["missing-one"]["evidenceStatus"] == "missing"
    assert [f["status"] for f in listed["missing-one"]["evidenceFiles"]] == ["missing", "changed"]
    assert result["counts"] == {
        "evidenceStatus": {"missing": 1, "changed": 1, "unknown": 0, "unchanged": 3},
        "contentStatus": {"consistent": 4, "modified": 1},
    }
    assert result["scanned"] == 5 and result["truncated"] is False


def test_check_of_a_missing_corpus_is_empty_and_creates_nothing(workspace: Path) -> None:
    result = check(workspace)
    assert result["needsReview"] == [] and result["unchangedConsistent"]["count"] == 0
    assert not (workspace / "docs").exists()


def test_check_reports_skipped_notes_as_warnings(
    workspace: Path, write_record: Any, corpus_of: Any
) -> None:
    write_record(workspace, id="fine")
    (corpus_of(workspace) / "broken.md").write_text("nope")
    result = check(workspace)
    assert result["unchangedConsistent"]["ids"] == ["fine"]
    assert any("broken.md" in w for w in result["warnings"])
