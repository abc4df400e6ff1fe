"""Provenance capture: only a clean, tracked file present in HEAD gets {commit, path}."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh_knowledge.errors import GitProvenanceError
from dsh_knowledge.provenance import (
    attach_git_provenance,
    capture_file_provenance,
    capture_file_provenances,
    capture_git_provenance,
    normalize_git_commit,
    normalize_repository_relative_path,
    validate_git_provenance,
)

if TYPE_CHECKING:
    from .conftest import Repo


def test_capture_records_head_commit_and_path_of_clean_file(repo: Repo) -> None:
    assert capture_git_provenance(repo.path, "src/app.py") == {
        "commit": repo.head(),
        "path": "src/app.py",
    }


def test_capture_normalises_backslashes_and_dot_segments(repo: Repo) -> None:
    provenance = capture_git_provenance(repo.path, ".\\src\\.\\app.py")
    assert provenance is not None
    assert provenance["path"] == "src/app.py"


def test_capture_from_subdirectory_uses_repository_relative_path(repo: Repo) -> None:
    assert capture_git_provenance(repo.path / "src", "src/app.py") is not None


@pytest.mark.parametrize(
    ("setup", "reason"),
    [
        (lambda r: r.write("src/app.py", "print('edited')\n"), "working_tree_changed"),
        (lambda r: (r.path / "src/app.py").unlink(), "working_tree_changed"),
        (lambda r: r.git("rm", "-q", "--cached", "src/app.py"), "working_tree_changed"),
    ],
    ids=["modified", "deleted", "untracked-in-index"],
)
def test_capture_skips_file_not_matching_head(
    repo: Repo, setup: Callable[[Repo], object], reason: str
) -> None:
    setup(repo)
    assert capture_file_provenance(repo.path, "src/app.py") == {
        "status": "skipped",
        "reason": reason,
    }


def test_capture_skips_staged_change_even_when_worktree_restored(repo: Repo) -> None:
    repo.write("src/app.py", "print('staged')\n")
    repo.git("add", "src/app.py")
    repo.write("src/app.py", "print('hello')\n")
    assert capture_file_provenance(repo.path, "src/app.py")["reason"] == "working_tree_changed"


def test_capture_skips_untracked_file_as_not_in_head(repo: Repo) -> None:
    repo.write("notes.txt", "new\n")
    assert capture_file_provenance(repo.path, "notes.txt")["reason"] == "file_not_in_head"


def test_capture_skips_directory_path_as_not_in_head(repo: Repo) -> None:
    assert capture_file_provenance(repo.path, "src")["reason"] == "file_not_in_head"


def test_capture_rejects_invalid_path_without_touching_git(tmp_path: Path) -> None:
    # The workspace does not even exist: the path is refused before any inspection.
    outcome = capture_file_provenance(tmp_path / "missing", "../etc/passwd")
    assert outcome == {"status": "skipped", "reason": "invalid_path"}


def test_capture_reports_invalid_workspace_for_missing_directory(tmp_path: Path) -> None:
    outcome = capture_file_provenance(tmp_path / "missing", "a.txt")
    assert outcome["reason"] == "invalid_workspace"


def test_capture_reports_not_repository_for_plain_directory(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert capture_file_provenance(plain, "a.txt")["reason"] == "not_repository"


def test_capture_reports_missing_head_in_repository_without_commits(
    new_repo: Callable[..., Repo],
) -> None:
    empty = new_repo("empty")
    empty.write("a.txt", "a\n")
    assert capture_file_provenance(empty.path, "a.txt")["reason"] == "missing_head"


def test_capture_refuses_symlinked_directory_component(repo: Repo, tmp_path: Path) -> None:
    # Replace the committed directory with a symlink to an identical copy elsewhere: the
    # bytes match, but the path no longer names the repository's own file.
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "app.py").write_text("print('hello')\n")
    (repo.path / "src/app.py").unlink()
    (repo.path / "src").rmdir()
    (repo.path / "src").symlink_to(outside)
    assert capture_file_provenance(repo.path, "src/app.py")["reason"] == "unsafe_path"


def test_capture_does_not_follow_committed_symlink_into_a_directory(repo: Repo) -> None:
    (repo.path / "link").symlink_to("src")
    repo.commit("add link")
    assert capture_file_provenance(repo.path, "link/app.py")["reason"] == "file_not_in_head"


@pytest.mark.parametrize("flag", ["--assume-unchanged", "--skip-worktree"])
def test_capture_refuses_hidden_index_state(repo: Repo, flag: str) -> None:
    repo.git("update-index", flag, "src/app.py")
    assert capture_file_provenance(repo.path, "src/app.py")["reason"] == "unsafe_index_state"


def test_capture_refuses_filtered_file_and_never_runs_the_filter(
    repo: Repo, marker_script: Callable[[str], tuple[Path, Path]]
) -> None:
    script, marker = marker_script("clean")
    repo.git("config", "filter.evil.clean", str(script))
    repo.git("config", "filter.evil.smudge", str(script))
    repo.write(".gitattributes", "*.py filter=evil\n")
    os.utime(repo.path / "src/app.py", (1, 1))  # stat-dirty: git diff would run the filter
    assert capture_file_provenance(repo.path, "src/app.py")["reason"] == "unsafe_filter"
    assert not marker.exists()


def test_capture_many_files_in_one_call_keeps_input_order(repo: Repo) -> None:
    repo.write("docs/guide.md", "# Edited\n")
    outcomes = capture_file_provenances(repo.path, ["src/app.py", "docs/guide.md", "src/app.py"])
    assert [o["status"] for o in outcomes] == ["captured", "skipped", "captured"]
    assert outcomes[1]["reason"] == "working_tree_changed"


def test_capture_records_sha256_commit_ids(new_repo: Callable[..., Repo]) -> None:
    sha256 = new_repo("sha256", "--object-format=sha256")
    sha256.write("a.txt", "a\n")
    sha256.commit("initial")
    provenance = capture_git_provenance(sha256.path, "a.txt")
    assert provenance is not None
    assert len(provenance["commit"]) == 64


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("a\\b/./c//d.txt", "a/b/c/d.txt"),
        ("./src/app.py", "src/app.py"),
        ("dir/", "dir"),
    ],
)
def test_path_normalisation_uses_forward_slashes(raw: str, expected: str) -> None:
    assert normalize_repository_relative_path(raw) == expected


@pytest.mark.parametrize(
    "raw", ["", "/etc/passwd", "\\server\\x", "C:file", "c:\\x", "a/../b", "..", "a\0b", ".", "./"]
)
def test_path_normalisation_rejects_unsafe_paths(raw: str) -> None:
    with pytest.raises(GitProvenanceError):
        normalize_repository_relative_path(raw)


def test_path_normalisation_rejects_paths_over_4096_characters() -> None:
    assert normalize_repository_relative_path("a" * 4096) == "a" * 4096
    with pytest.raises(GitProvenanceError):
        normalize_repository_relative_path("a" * 4097)


@given(st.lists(st.sampled_from(["a", "b", ".", "", "..", "c d"]), min_size=1, max_size=6))
def test_normalised_paths_never_escape_or_keep_empty_segments(segments: list[str]) -> None:
    raw = "/".join(segments)
    try:
        normalized = normalize_repository_relative_path(raw)
    except GitProvenanceError:
        return
    parts = normalized.split("/")
    assert ".." not in parts
    assert "" not in parts
    assert "." not in parts
    assert not normalized.startswith("/")


def test_commit_normalisation_lowercases_full_ids() -> None:
    assert normalize_git_commit("A" * 40) == "a" * 40
    assert normalize_git_commit("b" * 64) == "b" * 64


@pytest.mark.parametrize("raw", ["a" * 39, "a" * 41, "g" * 40, "HEAD", "a" * 63, ""])
def test_commit_normalisation_rejects_abbreviated_or_non_hex(raw: str) -> None:
    with pytest.raises(GitProvenanceError, match="full SHA-1 or SHA-256"):
        normalize_git_commit(raw)


def test_validate_git_provenance_normalises_both_fields() -> None:
    assert validate_git_provenance({"commit": "F" * 40, "path": "a\\b"}) == {
        "commit": "f" * 40,
        "path": "a/b",
    }


def test_validate_git_provenance_rejects_extra_fields() -> None:
    with pytest.raises(GitProvenanceError):
        validate_git_provenance({"commit": "f" * 40, "path": "a", "extra": 1})


def test_attach_captures_file_evidence_and_reports_skips(repo: Repo) -> None:
    repo.write("docs/guide.md", "# Edited\n")
    evidence = [
        {"type": "file", "source": "src/app.py", "timestamp": "2026-11-30T12:00:00Z"},
        {"type": "session", "source": "s-1", "timestamp": "2026-11-30T12:00:00Z"},
        {"type": "file", "source": "docs/guide.md", "timestamp": "2026-11-30T12:00:00Z"},
    ]
    updated, report = attach_git_provenance(evidence, repo.path)
    assert updated[0]["gitProvenance"] == {"commit": repo.head(), "path": "src/app.py"}
    assert "gitProvenance" not in updated[2]
    assert "gitProvenance" not in evidence[0]
    assert report == {
        "attempted": 2,
        "captured": 1,
        "skipped": 1,
        "warnings": [{"evidenceIndex": 2, "reason": "working_tree_changed"}],
    }


def test_attach_captures_at_most_eight_files(repo: Repo) -> None:
    evidence = [
        {"type": "file", "source": "src/app.py", "timestamp": "2026-11-30T12:00:00Z"}
        for _ in range(10)
    ]
    updated, report = attach_git_provenance(evidence, repo.path)
    assert report is not None
    assert report["captured"] == 8
    assert [w["reason"] for w in report["warnings"]] == ["evidence_limit_exceeded"] * 2
    assert "gitProvenance" not in updated[9]


def test_attach_without_file_evidence_reports_nothing(repo: Repo) -> None:
    session = [{"type": "session", "source": "s-1", "timestamp": "2026-11-30T12:00:00Z"}]
    assert attach_git_provenance(session, repo.path) == (session, None)
