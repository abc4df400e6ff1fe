"""Freshness: recorded snapshots compared with the live work tree and index."""

from __future__ import annotations

import copy
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from dsh_test_support.gitcmd import git

from dsh_knowledge.errors import ValidationError
from dsh_knowledge.freshness import check_freshness, evaluate_freshness_batch

if TYPE_CHECKING:
    from .conftest import Repo

Item = dict[str, Any]
MakeItem = Callable[..., Item]
MakeEvidence = Callable[..., dict[str, Any]]


def evidence_of(report: dict[str, Any], index: int = 0) -> dict[str, Any]:
    entry: dict[str, Any] = report["evidence"][index]
    return entry


def check_one(
    repo: Repo,
    commit: str,
    path: str,
    make_item: MakeItem,
    make_evidence: MakeEvidence,
    **options: Any,
) -> dict[str, Any]:
    return check_freshness(make_item([make_evidence(commit, path)]), repo.path, **options)


def test_unchanged_file_is_current_without_reason(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    report = check_one(repo, repo.head(), "src/app.py", make_item, make_evidence)
    assert report["status"] == "current"
    assert evidence_of(report) == {"evidenceIndex": 0, "type": "file", "status": "current"}
    assert report["knowledgeId"] == "k-1"
    assert report["checkedAt"].endswith("Z")


def test_modified_file_is_potentially_stale(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    commit = repo.head()
    repo.write("src/app.py", "print('changed')\n")
    report = check_one(repo, commit, "src/app.py", make_item, make_evidence)
    assert report["status"] == "potentially_stale"
    assert evidence_of(report)["reason"] == "working_tree_changed"


def test_staged_change_is_potentially_stale_even_with_worktree_restored(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    commit = repo.head()
    repo.write("src/app.py", "print('staged')\n")
    repo.git("add", "src/app.py")
    repo.write("src/app.py", "print('hello')\n")
    report = check_one(repo, commit, "src/app.py", make_item, make_evidence)
    assert evidence_of(report)["status"] == "potentially_stale"


def test_deleted_file_is_potentially_stale_as_working_tree_changed(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    commit = repo.head()
    (repo.path / "src/app.py").unlink()
    report = check_one(repo, commit, "src/app.py", make_item, make_evidence)
    assert evidence_of(report) == {
        "evidenceIndex": 0,
        "type": "file",
        "status": "potentially_stale",
        "reason": "working_tree_changed",
    }


def test_renamed_file_is_not_followed(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    commit = repo.head()
    repo.git("mv", "src/app.py", "src/main.py")
    repo.commit("rename")
    report = check_one(repo, commit, "src/app.py", make_item, make_evidence)
    assert evidence_of(report)["status"] == "potentially_stale"


def test_restored_file_is_current_despite_intermediate_commit(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    commit = repo.head()
    repo.write("src/app.py", "print('temporary')\n")
    repo.commit("temporary edit")
    repo.write("src/app.py", "print('hello')\n")
    repo.commit("restore")
    report = check_one(repo, commit, "src/app.py", make_item, make_evidence)
    assert report["status"] == "current"


def test_committed_change_after_provenance_is_potentially_stale(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    commit = repo.head()
    repo.write("src/app.py", "print('v2')\n")
    repo.commit("v2")
    assert check_one(repo, commit, "src/app.py", make_item, make_evidence)["status"] == (
        "potentially_stale"
    )


def test_detached_head_compares_the_checked_out_snapshot(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    first = repo.head()
    repo.write("src/app.py", "print('v2')\n")
    second = repo.commit("v2")
    repo.git("checkout", "-q", "--detach", first)
    assert check_one(repo, first, "src/app.py", make_item, make_evidence)["status"] == "current"
    assert check_one(repo, second, "src/app.py", make_item, make_evidence)["status"] == (
        "potentially_stale"
    )


def test_shallow_clone_reports_commit_outside_history_as_missing(
    repo: Repo, tmp_path: Path, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    old = repo.head()
    repo.write("docs/guide.md", "# Guide v2\n")
    new = repo.commit("v2")
    clone = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{repo.path}", str(clone))
    item = make_item([make_evidence(old, "src/app.py"), make_evidence(new, "src/app.py")])
    report = check_freshness(item, clone)
    assert evidence_of(report, 0) == {
        "evidenceIndex": 0,
        "type": "file",
        "status": "unverifiable",
        "reason": "missing_commit",
    }
    assert evidence_of(report, 1)["status"] == "current"
    assert report["status"] == "unverifiable"


@pytest.mark.parametrize(
    ("commit", "path", "reason"),
    [
        ("0123456789abcdef0123456789abcdef01234567", "src/app.py", "missing_commit"),
        ("abc123", "src/app.py", "invalid_commit"),
        (None, "src/app.py", "invalid_commit"),
        ("HEAD_PLACEHOLDER", "../outside.py", "invalid_path"),
        ("HEAD_PLACEHOLDER", "/abs/app.py", "invalid_path"),
        ("HEAD_PLACEHOLDER", "src/missing.py", "missing_path_at_commit"),
        ("HEAD_PLACEHOLDER", "src", "missing_path_at_commit"),
    ],
)
def test_bad_or_absent_provenance_is_unverifiable(
    repo: Repo,
    make_item: MakeItem,
    commit: str | None,
    path: str,
    reason: str,
) -> None:
    recorded = repo.head() if commit == "HEAD_PLACEHOLDER" else commit
    evidence = {
        "type": "file",
        "source": path,
        "timestamp": "2026-11-30T12:00:00Z",
        "gitProvenance": {"commit": recorded, "path": path},
    }
    report = check_freshness(make_item([evidence]), repo.path)
    assert evidence_of(report) == {
        "evidenceIndex": 0,
        "type": "file",
        "status": "unverifiable",
        "reason": reason,
    }


def test_commit_of_another_object_type_is_missing_commit(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    blob = repo.git("rev-parse", "HEAD:src/app.py")
    report = check_one(repo, blob, "src/app.py", make_item, make_evidence)
    assert evidence_of(report)["reason"] == "missing_commit"


def test_plain_directory_is_not_repository(
    tmp_path: Path, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    report = check_freshness(make_item([make_evidence("a" * 40, "a.txt")]), plain)
    assert evidence_of(report)["reason"] == "not_repository"


def test_missing_directory_is_invalid_workspace(
    tmp_path: Path, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    report = check_freshness(make_item([make_evidence("a" * 40, "a.txt")]), tmp_path / "nope")
    assert evidence_of(report)["reason"] == "invalid_workspace"


def test_repository_without_commits_is_missing_head(
    new_repo: Callable[..., Repo], make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    empty = new_repo("empty")
    report = check_freshness(make_item([make_evidence("a" * 40, "a.txt")]), empty.path)
    assert evidence_of(report)["reason"] == "missing_head"


def test_missing_git_executable_is_git_unavailable(
    repo: Repo,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    make_item: MakeItem,
    make_evidence: MakeEvidence,
) -> None:
    commit = repo.head()
    empty_bin = tmp_path / "empty-bin"
    empty_bin.mkdir()
    monkeypatch.setenv("PATH", str(empty_bin))
    report = check_one(repo, commit, "src/app.py", make_item, make_evidence)
    assert evidence_of(report)["reason"] == "git_unavailable"


def test_command_timeout_is_reported_as_timeout(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    report = check_one(
        repo, repo.head(), "src/app.py", make_item, make_evidence, command_timeout_ms=1
    )
    assert evidence_of(report)["reason"] == "timeout"


def test_exhausted_budget_is_operation_budget_exceeded(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    report = check_one(
        repo, repo.head(), "src/app.py", make_item, make_evidence, operation_budget_ms=1
    )
    assert evidence_of(report)["reason"] == "operation_budget_exceeded"


def test_limits_above_the_hard_maxima_are_clamped(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    report = check_one(
        repo,
        repo.head(),
        "src/app.py",
        make_item,
        make_evidence,
        command_timeout_ms=10**9,
        operation_budget_ms=10**9,
    )
    assert report["status"] == "current"


def test_cancelled_check_runs_no_git(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    cancel = threading.Event()
    cancel.set()
    item = make_item([make_evidence(repo.head(), "src/app.py")])
    evaluation = evaluate_freshness_batch([item], repo.path, cancel=cancel)
    assert evaluation.items[0].evidence[0]["reason"] == "cancelled"
    assert evaluation.commands_run == 0


def test_corrupt_index_is_command_failed(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    commit = repo.head()
    (repo.path / ".git/index").write_bytes(b"not an index at all")
    report = check_one(repo, commit, "src/app.py", make_item, make_evidence)
    assert evidence_of(report)["reason"] == "command_failed"


def test_symlinked_directory_component_is_unsafe_path(
    repo: Repo, tmp_path: Path, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    commit = repo.head()
    outside = tmp_path / "copy"
    outside.mkdir()
    (outside / "app.py").write_text("print('hello')\n")
    (repo.path / "src/app.py").unlink()
    (repo.path / "src").rmdir()
    (repo.path / "src").symlink_to(outside)
    report = check_one(repo, commit, "src/app.py", make_item, make_evidence)
    assert evidence_of(report) == {
        "evidenceIndex": 0,
        "type": "file",
        "status": "unverifiable",
        "reason": "unsafe_path",
    }


def test_symlinked_final_file_is_unsafe_path(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    commit = repo.head()
    (repo.path / "docs/guide.md").unlink()
    (repo.path / "docs/guide.md").symlink_to("../src/app.py")
    report = check_one(repo, commit, "docs/guide.md", make_item, make_evidence)
    assert evidence_of(report)["reason"] == "unsafe_path"


@pytest.mark.parametrize("flag", ["--assume-unchanged", "--skip-worktree"])
def test_hidden_index_flags_are_unsafe_index_state(
    repo: Repo, flag: str, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    commit = repo.head()
    repo.git("update-index", flag, "src/app.py")
    repo.write("src/app.py", "print('hidden edit')\n")
    report = check_one(repo, commit, "src/app.py", make_item, make_evidence)
    assert evidence_of(report)["reason"] == "unsafe_index_state"


def test_unmerged_entry_is_unsafe_index_state(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    base = repo.head()
    repo.git("checkout", "-q", "-b", "other")
    repo.write("src/app.py", "print('other')\n")
    repo.commit("other")
    repo.git("checkout", "-q", "main")
    repo.write("src/app.py", "print('main')\n")
    repo.commit("main")
    repo.git("merge", "-q", "other", check=False)
    report = check_one(repo, base, "src/app.py", make_item, make_evidence)
    assert evidence_of(report)["reason"] == "unsafe_index_state"


def test_untracked_copy_of_removed_index_entry_is_potentially_stale(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    commit = repo.head()
    repo.git("rm", "-q", "--cached", "src/app.py")
    report = check_one(repo, commit, "src/app.py", make_item, make_evidence)
    assert evidence_of(report)["status"] == "potentially_stale"


@pytest.mark.parametrize("kind", ["clean-smudge", "process"])
def test_filters_are_unverifiable_and_never_executed(
    repo: Repo,
    kind: str,
    marker_script: Callable[[str], tuple[Path, Path]],
    make_item: MakeItem,
    make_evidence: MakeEvidence,
) -> None:
    script, marker = marker_script(kind)
    if kind == "process":
        repo.git("config", "filter.evil.process", str(script))
        repo.git("config", "filter.evil.required", "true")
    else:
        repo.git("config", "filter.evil.clean", str(script))
        repo.git("config", "filter.evil.smudge", str(script))
    repo.write(".gitattributes", "*.py filter=evil\n")
    commit = repo.head()
    # Stat-dirty and edited: `git diff` or `git status` would run the clean filter here.
    repo.write("src/app.py", "print('edited')\n")
    os.utime(repo.path / "src/app.py", (1, 1))
    report = check_one(repo, commit, "src/app.py", make_item, make_evidence)
    assert evidence_of(report)["reason"] == "unsafe_filter"
    assert not marker.exists()


def test_filter_named_only_in_committed_attributes_is_unverifiable(
    repo: Repo,
    marker_script: Callable[[str], tuple[Path, Path]],
    make_item: MakeItem,
    make_evidence: MakeEvidence,
) -> None:
    script, marker = marker_script("cached")
    repo.git("config", "filter.evil.clean", str(script))
    repo.write(".gitattributes", "*.py filter=evil\n")
    repo.git("add", ".gitattributes")
    (repo.path / ".gitattributes").unlink()  # only the index still names the filter
    commit = repo.head()
    marker.unlink(missing_ok=True)  # `git add` above may refresh (and filter) the index
    report = check_one(repo, commit, "src/app.py", make_item, make_evidence)
    assert evidence_of(report)["reason"] == "unsafe_filter"
    assert not marker.exists()


def test_fsmonitor_and_hooks_never_run(
    repo: Repo,
    marker_script: Callable[[str], tuple[Path, Path]],
    make_item: MakeItem,
    make_evidence: MakeEvidence,
) -> None:
    fsmonitor, fsmonitor_marker = marker_script("fsmonitor")
    hook, hook_marker = marker_script("hook")
    repo.git("config", "core.fsmonitor", str(fsmonitor))
    hooks = repo.path / ".git/hooks"
    for name in ("post-index-change", "post-checkout", "pre-commit", "reference-transaction"):
        (hooks / name).write_bytes(hook.read_bytes())
        (hooks / name).chmod(0o755)
    repo.write("docs/guide.md", "# changed\n")
    item = make_item(
        [make_evidence(repo.head(), "src/app.py"), make_evidence(repo.head(), "docs/guide.md")]
    )
    report = check_freshness(item, repo.path)
    assert [e["status"] for e in report["evidence"]] == ["current", "potentially_stale"]
    assert not fsmonitor_marker.exists()
    assert not hook_marker.exists()


def test_crlf_checkout_under_autocrlf_is_current(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    commit = repo.head()
    repo.git("config", "core.autocrlf", "true")
    (repo.path / "src/app.py").write_bytes(b"print('hello')\r\n")
    report = check_one(repo, commit, "src/app.py", make_item, make_evidence)
    assert report["status"] == "current"


def test_crlf_only_change_without_conversion_is_potentially_stale(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    commit = repo.head()
    (repo.path / "src/app.py").write_bytes(b"print('hello')\r\n")
    report = check_one(repo, commit, "src/app.py", make_item, make_evidence)
    assert evidence_of(report)["status"] == "potentially_stale"


@pytest.mark.parametrize(
    ("content", "status"),
    [(b"print('hello')\r\n", "current"), (b"print('edited')\r\n", "potentially_stale")],
)
def test_text_attribute_sees_through_line_endings_only(
    repo: Repo,
    make_item: MakeItem,
    make_evidence: MakeEvidence,
    content: bytes,
    status: str,
) -> None:
    repo.write(".gitattributes", "* text=auto\n")
    commit = repo.commit("attributes")
    (repo.path / "src/app.py").write_bytes(content)
    report = check_one(repo, commit, "src/app.py", make_item, make_evidence)
    assert evidence_of(report)["status"] == status


def test_ident_attribute_with_different_bytes_is_unverifiable(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    repo.write(".gitattributes", "*.py ident\n")
    commit = repo.commit("attributes")
    repo.write("src/app.py", "# $Id: 0000 $\nprint('hello')\n")
    report = check_one(repo, commit, "src/app.py", make_item, make_evidence)
    assert evidence_of(report) == {
        "evidenceIndex": 0,
        "type": "file",
        "status": "unverifiable",
        "reason": "unsafe_filter",
    }


def test_inherited_git_dir_does_not_redirect_the_check(
    repo: Repo,
    new_repo: Callable[..., Repo],
    monkeypatch: pytest.MonkeyPatch,
    make_item: MakeItem,
    make_evidence: MakeEvidence,
) -> None:
    decoy = new_repo("decoy")
    decoy.write("other.txt", "x\n")
    decoy.commit("decoy")
    commit = repo.head()
    monkeypatch.setenv("GIT_DIR", str(decoy.path / ".git"))
    report = check_one(repo, commit, "src/app.py", make_item, make_evidence)
    assert report["status"] == "current"


def test_session_and_unbacked_evidence_explain_without_counting(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence, session_evidence: dict[str, Any]
) -> None:
    git_typed = {
        "type": "git",
        "source": "commit",
        "timestamp": "2026-11-30T12:00:00Z",
        "gitProvenance": {"commit": repo.head(), "path": "src/app.py"},
    }
    item = make_item([session_evidence, make_evidence(None, "src/app.py"), git_typed])
    report = check_freshness(item, repo.path)
    assert [e["reason"] for e in report["evidence"]] == [
        "not_file_evidence",
        "missing_git_provenance",
        "not_file_evidence",
    ]
    assert report["status"] == "unverifiable"


def test_stale_evidence_outranks_unverifiable_in_the_aggregate(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    commit = repo.head()
    repo.write("docs/guide.md", "# changed\n")
    item = make_item(
        [
            make_evidence("f" * 40, "src/app.py"),
            make_evidence(commit, "docs/guide.md"),
            make_evidence(commit, "src/app.py"),
        ]
    )
    assert check_freshness(item, repo.path)["status"] == "potentially_stale"


def test_unverifiable_outranks_current_in_the_aggregate(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    item = make_item([make_evidence(repo.head(), "src/app.py"), make_evidence("f" * 40, "a")])
    assert check_freshness(item, repo.path)["status"] == "unverifiable"


def test_only_sixteen_git_backed_entries_are_checked(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    item = make_item([make_evidence(repo.head(), "src/app.py") for _ in range(18)])
    report = check_freshness(item, repo.path)
    assert [e["status"] for e in report["evidence"][:16]] == ["current"] * 16
    assert [e.get("reason") for e in report["evidence"][16:]] == ["operation_budget_exceeded"] * 2
    assert report["status"] == "unverifiable"
    assert len(report["evidence"]) == 18


def test_freshness_never_changes_the_item(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    repo.write("src/app.py", "print('changed')\n")
    item = make_item([make_evidence(repo.head(), "src/app.py")])
    before = copy.deepcopy(item)
    check_freshness(item, repo.path)
    assert item == before


def test_freshness_leaves_the_repository_untouched(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    repo.write("src/app.py", "print('changed')\n")
    index_before = (repo.path / ".git/index").read_bytes()
    status_before = repo.git("status", "--porcelain")
    check_one(repo, repo.head(), "src/app.py", make_item, make_evidence)
    assert (repo.path / ".git/index").read_bytes() == index_before
    assert repo.git("status", "--porcelain") == status_before


@pytest.mark.parametrize("options", [{"command_timeout_ms": 0}, {"operation_budget_ms": -5}])
def test_non_positive_limits_are_refused(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence, options: dict[str, float]
) -> None:
    with pytest.raises(ValidationError, match="positive finite"):
        check_one(repo, repo.head(), "src/app.py", make_item, make_evidence, **options)


def test_relative_repository_directory_is_resolved(
    repo: Repo, monkeypatch: pytest.MonkeyPatch, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    commit = repo.head()
    monkeypatch.chdir(repo.path / "src")
    report = check_freshness(make_item([make_evidence(commit, "src/app.py")]), ".")
    assert report["status"] == "current"
