"""Capture: exclusive creation, compare-and-swap replace, locks, and refusing bad input."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dsh_compound import capture, inspect, sha256
from dsh_compound.errors import (
    DigestMismatchError,
    HardLinkedRecordError,
    InvalidDigestError,
    InvalidDraftError,
    InvalidIdError,
    InvalidPathError,
    InvalidWorkspaceError,
    LockHeldError,
    MalformedRecordError,
    RecordExistsError,
    RecordNotFoundError,
    SourceNotFoundError,
    SourceNotRegularError,
    SourceTooLargeError,
    SymlinkRejectedError,
)
from dsh_compound.limits import LIMITS
from dsh_compound.record import parse_record


def tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_capture_writes_the_record_and_returns_its_digest(
    workspace: Path, draft: Any, corpus_of: Any
) -> None:
    result = capture(workspace, draft)
    location = corpus_of(workspace) / "login-timeout.md"
    assert result["path"] == str(location)
    assert result["digest"] == sha256(location.read_bytes())
    assert result["contentStatus"] == "consistent"
    assert result["evidenceStatus"] == "unknown"
    assert result["metadata"] == parse_record(location.read_bytes()).metadata


def test_capture_fingerprints_each_source(workspace: Path, draft: Any) -> None:
    files = capture(workspace, draft)["metadata"]["files"]
    assert files == [
        {"path": "src/login.js", "sha256": sha256((workspace / "src/login.js").read_bytes())},
        {
            "path": "tests/login.test.js",
            "sha256": sha256((workspace / "tests/login.test.js").read_bytes()),
        },
    ]


def test_capture_sets_equal_iso_timestamps_on_a_new_record(workspace: Path, draft: Any) -> None:
    metadata = capture(workspace, draft)["metadata"]
    assert metadata["createdAt"] == metadata["updatedAt"]
    assert metadata["createdAt"].endswith("Z") and "T" in metadata["createdAt"]


def test_capture_leaves_no_lock_or_temporary_file(
    workspace: Path, draft: Any, corpus_of: Any
) -> None:
    capture(workspace, draft)
    assert os.listdir(corpus_of(workspace)) == ["login-timeout.md"]


def test_capture_never_overwrites_without_replace(
    workspace: Path, draft: Any, corpus_of: Any
) -> None:
    capture(workspace, draft)
    before = (corpus_of(workspace) / "login-timeout.md").read_bytes()
    with pytest.raises(RecordExistsError, match="--replace"):
        capture(workspace, {**draft, "title": "Other"})
    assert (corpus_of(workspace) / "login-timeout.md").read_bytes() == before
    assert os.listdir(corpus_of(workspace)) == ["login-timeout.md"]


def test_replace_with_the_current_digest_rewrites_and_keeps_created_at(
    workspace: Path, draft: Any
) -> None:
    first = capture(workspace, draft)
    second = capture(workspace, {**draft, "title": "New title"}, replace=first["digest"])
    assert second["metadata"]["title"] == "New title"
    assert second["metadata"]["createdAt"] == first["metadata"]["createdAt"]
    assert second["metadata"]["updatedAt"] >= first["metadata"]["updatedAt"]
    assert second["digest"] != first["digest"]
    assert sha256(Path(second["path"]).read_bytes()) == second["digest"]


def test_replace_refreshes_source_fingerprints(workspace: Path, draft: Any) -> None:
    first = capture(workspace, draft)
    (workspace / "src/login.js").write_text("changed\n")
    assert inspect(workspace, "login-timeout")["evidenceStatus"] == "changed"
    capture(workspace, draft, replace=first["digest"])
    assert inspect(workspace, "login-timeout")["evidenceStatus"] == "unchanged"


def test_replace_with_a_stale_digest_is_refused(workspace: Path, draft: Any) -> None:
    first = capture(workspace, draft)
    capture(workspace, {**draft, "title": "Second"}, replace=first["digest"])
    current = Path(first["path"]).read_bytes()
    with pytest.raises(DigestMismatchError):
        capture(workspace, {**draft, "title": "Third"}, replace=first["digest"])
    assert Path(first["path"]).read_bytes() == current


@pytest.mark.parametrize("bad", ["abc", "A" * 64, "g" * 64, "a" * 63, ""])
def test_replace_digest_must_be_64_lowercase_hex(workspace: Path, draft: Any, bad: str) -> None:
    with pytest.raises(InvalidDigestError):
        capture(workspace, draft, replace=bad)


def test_replace_of_a_missing_record_is_not_found_and_creates_nothing(
    workspace: Path, draft: Any
) -> None:
    before = tree(workspace)
    with pytest.raises(RecordNotFoundError):
        capture(workspace, draft, replace="a" * 64)
    assert tree(workspace) == before


def test_replace_of_a_missing_record_in_an_existing_corpus_is_not_found(
    workspace: Path, draft: Any, corpus_of: Any
) -> None:
    capture(workspace, {**draft, "id": "other"})
    with pytest.raises(RecordNotFoundError):
        capture(workspace, draft, replace="a" * 64)
    assert sorted(os.listdir(corpus_of(workspace))) == ["other.md"]


def test_replace_refuses_a_hard_linked_record(workspace: Path, draft: Any, tmp_path: Path) -> None:
    first = capture(workspace, draft)
    os.link(first["path"], tmp_path / "elsewhere.md")
    with pytest.raises(HardLinkedRecordError):
        capture(workspace, {**draft, "title": "New"}, replace=first["digest"])
    assert (tmp_path / "elsewhere.md").read_bytes() == Path(first["path"]).read_bytes()


def test_replace_refuses_a_symlinked_record(workspace: Path, draft: Any, corpus_of: Any) -> None:
    first = capture(workspace, draft)
    real = corpus_of(workspace) / "real.txt"
    os.replace(first["path"], real)
    Path(first["path"]).symlink_to("real.txt")
    with pytest.raises(SymlinkRejectedError):
        capture(workspace, {**draft, "title": "New"}, replace=first["digest"])


def test_replace_hashes_the_actual_bytes_including_a_bom(workspace: Path, draft: Any) -> None:
    first = capture(workspace, draft)
    location = Path(first["path"])
    location.write_bytes(b"\xef\xbb\xbf" + location.read_bytes())
    with_bom = sha256(location.read_bytes())
    assert inspect(workspace, "login-timeout")["digest"] == with_bom
    with pytest.raises(DigestMismatchError):
        capture(workspace, draft, replace=first["digest"])
    result = capture(workspace, {**draft, "title": "After BOM"}, replace=with_bom)
    assert result["metadata"]["createdAt"] == first["metadata"]["createdAt"]


def test_replace_refuses_a_malformed_existing_record(workspace: Path, draft: Any) -> None:
    first = capture(workspace, draft)
    location = Path(first["path"])
    location.write_text("---\ngarbage\n---\n")
    with pytest.raises(MalformedRecordError):
        capture(workspace, draft, replace=sha256(location.read_bytes()))
    assert location.read_text() == "---\ngarbage\n---\n"


def test_replace_keeps_the_record_file_mode(workspace: Path, draft: Any) -> None:
    first = capture(workspace, draft)
    os.chmod(first["path"], 0o640)
    capture(workspace, {**draft, "title": "x"}, replace=first["digest"])
    assert os.stat(first["path"]).st_mode & 0o777 == 0o640


def test_a_stale_lock_blocks_capture_and_is_never_removed(
    workspace: Path, draft: Any, corpus_of: Any
) -> None:
    finished = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead_pid = int(finished.stdout)
    corpus = corpus_of(workspace)
    corpus.mkdir(parents=True)
    lock = corpus / "login-timeout.lock"
    owner = {
        "pid": dead_pid,
        "startTime": "2026-01-01T00:00:00.000Z",
        "hostname": socket.gethostname(),
    }
    lock.write_text(json.dumps(owner))
    with pytest.raises(LockHeldError) as caught:
        capture(workspace, draft)
    message = caught.value.message
    assert str(lock) in message
    assert f"pid {dead_pid}" in message
    assert "2026-01-01T00:00:00.000Z" in message
    assert "no longer running" in message
    assert caught.value.details["ownerAlive"] is False
    assert json.loads(lock.read_text()) == owner
    assert sorted(os.listdir(corpus)) == ["login-timeout.lock"]


def test_a_lock_held_by_a_live_process_says_it_is_alive(
    workspace: Path, draft: Any, corpus_of: Any
) -> None:
    corpus = corpus_of(workspace)
    corpus.mkdir(parents=True)
    from dsh_common.locks import default_owner_data

    (corpus / "login-timeout.lock").write_text(json.dumps(default_owner_data()))
    with pytest.raises(LockHeldError, match="alive"):
        capture(workspace, draft)


def test_bad_draft_changes_nothing_on_disk(workspace: Path, draft: Any) -> None:
    before = tree(workspace)
    with pytest.raises(InvalidDraftError):
        capture(workspace, {**draft, "tags": []})
    with pytest.raises(InvalidIdError):
        capture(workspace, {**draft, "id": "NUL"})
    with pytest.raises(InvalidPathError):
        capture(workspace, {**draft, "files": ["../etc/passwd"]})
    assert tree(workspace) == before


def test_missing_source_is_refused_before_anything_is_written(workspace: Path, draft: Any) -> None:
    before = tree(workspace)
    with pytest.raises(SourceNotFoundError):
        capture(workspace, {**draft, "files": ["src/absent.js"]})
    assert tree(workspace) == before


def test_source_of_8_mib_plus_one_byte_is_refused(workspace: Path, draft: Any) -> None:
    with open(workspace / "src/big.bin", "wb") as handle:
        handle.truncate(LIMITS.source_bytes + 1)
    with pytest.raises(SourceTooLargeError):
        capture(workspace, {**draft, "files": ["src/big.bin"]})


def test_source_of_exactly_8_mib_is_accepted(workspace: Path, draft: Any) -> None:
    with open(workspace / "src/big.bin", "wb") as handle:
        handle.truncate(LIMITS.source_bytes)
    assert (
        capture(workspace, {**draft, "files": ["src/big.bin"]})["metadata"]["files"][0]["path"]
        == "src/big.bin"
    )


def test_symlinked_source_is_refused_even_inside_the_workspace(workspace: Path, draft: Any) -> None:
    (workspace / "src/alias.js").symlink_to("login.js")
    with pytest.raises(SymlinkRejectedError):
        capture(workspace, {**draft, "files": ["src/alias.js"]})


def test_source_under_a_symlinked_directory_is_refused(workspace: Path, draft: Any) -> None:
    (workspace / "lib").symlink_to("src")
    with pytest.raises(SymlinkRejectedError):
        capture(workspace, {**draft, "files": ["lib/login.js"]})


def test_directory_source_is_refused(workspace: Path, draft: Any) -> None:
    with pytest.raises(SourceNotRegularError):
        capture(workspace, {**draft, "files": ["src"]})


def test_symlinked_workspace_root_is_refused(workspace: Path, draft: Any, tmp_path: Path) -> None:
    (tmp_path / "link-ws").symlink_to(workspace)
    with pytest.raises(SymlinkRejectedError):
        capture(tmp_path / "link-ws", draft)


def test_missing_workspace_is_refused(tmp_path: Path, draft: Any) -> None:
    with pytest.raises(InvalidWorkspaceError):
        capture(tmp_path / "absent", draft)


def test_symlinked_corpus_directory_is_refused(workspace: Path, draft: Any, tmp_path: Path) -> None:
    (workspace / "docs").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (workspace / "docs" / "solutions").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(SymlinkRejectedError):
        capture(workspace, draft)
    assert os.listdir(tmp_path / "elsewhere") == []


def test_workspace_under_a_symlinked_ancestor_writes_to_the_canonical_corpus(
    workspace: Path, draft: Any, tmp_path: Path, corpus_of: Any
) -> None:
    (tmp_path / "alias").symlink_to(tmp_path)
    lexical = tmp_path / "alias" / "ws"
    result = capture(lexical, {**draft, "files": [str(lexical / "src/login.js")]})
    assert result["metadata"]["files"][0]["path"] == "src/login.js"
    assert (corpus_of(workspace) / "login-timeout.md").exists()


def test_failed_replace_leaves_no_lock_or_temporary_file(
    workspace: Path, draft: Any, corpus_of: Any, tmp_path: Path
) -> None:
    first = capture(workspace, draft)
    with pytest.raises(DigestMismatchError):
        capture(workspace, draft, replace="f" * 64)
    os.link(first["path"], tmp_path / "other-link.md")
    with pytest.raises(HardLinkedRecordError):
        capture(workspace, draft, replace=first["digest"])
    assert os.listdir(corpus_of(workspace)) == ["login-timeout.md"]


def test_a_windows_style_draft_with_bom_and_backslashes_captures(
    workspace: Path, corpus_of: Any, make_draft: Any
) -> None:
    from dsh_compound import read_draft_input

    path = workspace / "draft.json"
    text = json.dumps(make_draft(files=["src\\login.js"]), ensure_ascii=False)
    path.write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode("utf-8"))
    result = capture(workspace, read_draft_input(workspace, path))
    assert result["metadata"]["files"][0]["path"] == "src/login.js"
