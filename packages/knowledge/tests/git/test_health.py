"""Health: bounded batches, reason aggregation, shared checks, busy gate and guidance."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from dsh_knowledge import health as health_module
from dsh_knowledge.errors import HealthBatchError
from dsh_knowledge.health import check_health, check_health_detailed

if TYPE_CHECKING:
    from .conftest import Repo

Item = dict[str, Any]
MakeItem = Callable[..., Item]
MakeEvidence = Callable[..., dict[str, Any]]


def test_current_item_reports_snapshot_matches(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    [result] = check_health([make_item([make_evidence(repo.head(), "src/app.py")])], repo.path)
    assert result["status"] == "current"
    assert result["reasons"] == ["snapshot_matches"]
    assert result["evidence"] == [
        {"evidenceIndex": 0, "type": "file", "status": "current", "reason": "snapshot_matches"}
    ]
    assert result["overflowCount"] == 0
    assert "guidance" not in result


def test_deleted_source_reports_source_path_missing(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    commit = repo.head()
    (repo.path / "src/app.py").unlink()
    [result] = check_health([make_item([make_evidence(commit, "src/app.py")])], repo.path)
    assert result["status"] == "potentially_stale"
    assert result["reasons"] == ["source_path_missing"]


def test_session_only_item_has_no_git_backed_file_evidence(
    repo: Repo, make_item: MakeItem, session_evidence: dict[str, Any]
) -> None:
    [result] = check_health([make_item([session_evidence])], repo.path)
    assert result["status"] == "unverifiable"
    assert result["reasons"] == ["no_git_backed_file_evidence"]
    assert result["evidence"][0]["reason"] == "not_file_evidence"


def test_reasons_are_distinct_in_evidence_order(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence, session_evidence: dict[str, Any]
) -> None:
    commit = repo.head()
    repo.write("docs/guide.md", "# changed\n")
    evidence = [
        make_evidence("f" * 40, "src/app.py"),
        session_evidence,
        make_evidence(commit, "docs/guide.md"),
        make_evidence(commit, "src/app.py"),
        make_evidence("e" * 40, "docs/guide.md"),
        make_evidence(commit, "docs/guide.md"),
    ]
    [result] = check_health([make_item(evidence)], repo.path)
    assert result["status"] == "potentially_stale"
    # Session evidence explains itself in the details but is not an item-level reason.
    assert result["reasons"] == ["missing_commit", "working_tree_changed"]


def test_overflow_makes_current_evidence_unverifiable(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    item = make_item([make_evidence(repo.head(), "src/app.py") for _ in range(20)])
    [result] = check_health([item], repo.path)
    assert result["status"] == "unverifiable"
    assert result["reasons"] == ["evidence_overflow"]
    assert len(result["evidence"]) == 16
    assert result["overflowCount"] == 4


def test_stale_evidence_outranks_overflow(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    commit = repo.head()
    repo.write("src/app.py", "print('changed')\n")
    item = make_item([make_evidence(commit, "src/app.py") for _ in range(17)])
    [result] = check_health([item], repo.path)
    assert result["status"] == "potentially_stale"
    assert result["reasons"] == ["working_tree_changed", "evidence_overflow"]


def test_overflow_of_only_unbacked_evidence_reports_overflow(
    repo: Repo, make_item: MakeItem, session_evidence: dict[str, Any]
) -> None:
    [result] = check_health([make_item([session_evidence] * 17)], repo.path)
    assert result["reasons"] == ["evidence_overflow"]
    assert result["overflowCount"] == 1


def test_batch_of_sixteen_by_sixteen_costs_a_constant_number_of_processes(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    commit = repo.head()
    for number in range(40):
        repo.write(f"pkg/file{number}.txt", f"content {number}\n")
    commit = repo.commit("more files")
    for number in range(0, 40, 3):
        repo.write(f"pkg/file{number}.txt", "edited\n")
    (repo.path / "pkg/file1.txt").unlink()

    single = [make_item([make_evidence(commit, "pkg/file0.txt")])]
    _, single_count = check_health_detailed(single, repo.path)
    batch = [
        make_item(
            [make_evidence(commit, f"pkg/file{(i * 16 + j) % 40}.txt") for j in range(16)],
            item_id=f"k-{i}",
        )
        for i in range(16)
    ]
    results, batch_count = check_health_detailed(batch, repo.path)
    assert len(results) == 16
    assert all(len(r["evidence"]) == 16 for r in results)
    statuses = {e["status"] for r in results for e in r["evidence"]}
    assert statuses == {"current", "potentially_stale"}
    # rev-parse, cat-file, ls-files, check-attr x2, hash-object, cat-file of the recorded
    # directory trees (modes): never one per evidence.
    assert batch_count == 7
    assert batch_count == single_count


def test_identical_checks_across_items_give_identical_answers(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    commit = repo.head()
    repo.write("docs/guide.md", "# changed\n")
    evidence = [make_evidence(commit, "docs/guide.md"), make_evidence(commit, "src/app.py")]
    items = [make_item(copy.deepcopy(evidence), item_id=f"k-{n}") for n in range(16)]
    results, count = check_health_detailed(items, repo.path)
    assert {tuple(e["status"] for e in r["evidence"]) for r in results} == {
        ("potentially_stale", "current")
    }
    assert [r["knowledgeId"] for r in results] == [f"k-{n}" for n in range(16)]
    assert len({r["checkedAt"] for r in results}) == 1
    assert count == 7


def test_guidance_is_added_only_when_asked(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence, session_evidence: dict[str, Any]
) -> None:
    commit = repo.head()
    repo.write("docs/guide.md", "# changed\n")
    items = [
        make_item([make_evidence(commit, "src/app.py")], item_id="current"),
        make_item([make_evidence(commit, "docs/guide.md")], item_id="stale"),
        make_item([session_evidence], item_id="session"),
    ]
    results = check_health(items, repo.path, include_guidance=True)
    assert results[0]["guidance"] == []
    assert [g["code"] for g in results[1]["guidance"]] == ["review_claim"]
    assert [g["code"] for g in results[2]["guidance"]] == ["review_evidence"]
    assert "does not make the claim false" in results[2]["guidance"][0]["message"]


def test_concurrent_request_gets_busy_result_without_git(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    item = make_item([make_evidence(repo.head(), "src/app.py") for _ in range(17)])
    # Hold the process-wide gate as a running health check would.
    assert health_module._HEALTH_GATE.acquire(blocking=False)
    try:
        results, count = check_health_detailed([item], repo.path, include_guidance=True)
    finally:
        health_module._HEALTH_GATE.release()
    assert count == 0
    assert results[0]["status"] == "unverifiable"
    assert results[0]["reasons"] == ["health_check_busy", "evidence_overflow"]
    assert {e["reason"] for e in results[0]["evidence"]} == {"health_check_busy"}
    assert [g["code"] for g in results[0]["guidance"]] == [
        "inspection_incomplete",
        "retry_explicit_check",
    ]


def test_gate_is_released_after_a_check(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    item = make_item([make_evidence(repo.head(), "src/app.py")])
    check_health([item], repo.path)
    assert check_health([item], repo.path)[0]["reasons"] == ["snapshot_matches"]


def test_health_never_changes_the_items(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    (repo.path / "src/app.py").unlink()
    items = [make_item([make_evidence(repo.head(), "src/app.py")])]
    before = copy.deepcopy(items)
    check_health(items, repo.path, include_guidance=True)
    assert items == before


@pytest.mark.parametrize(
    ("count", "message"),
    [(0, "at least one item"), (17, "at most 16 items")],
)
def test_batch_size_is_one_to_sixteen(
    repo: Repo, make_item: MakeItem, count: int, message: str
) -> None:
    items = [make_item([], item_id=f"k-{n}") for n in range(count)]
    with pytest.raises(HealthBatchError, match=message):
        check_health(items, repo.path)


def test_batch_must_share_one_workspace_scope(repo: Repo, make_item: MakeItem) -> None:
    items = [make_item([], workspace="/a"), make_item([], item_id="k-2", workspace="/b")]
    with pytest.raises(HealthBatchError, match="one workspace scope"):
        check_health(items, repo.path)


def test_batch_needs_an_explicit_repository_directory(make_item: MakeItem) -> None:
    with pytest.raises(HealthBatchError, match="explicit workspace directory"):
        check_health([make_item([])], "  ")


def test_batch_error_has_a_stable_code(tmp_path: Path, make_item: MakeItem) -> None:
    with pytest.raises(HealthBatchError) as caught:
        check_health([], tmp_path)
    assert caught.value.code == "invalid-health-batch"


def test_batched_verdicts_match_plain_git_diff_per_evidence(
    repo: Repo, make_item: MakeItem, make_evidence: MakeEvidence
) -> None:
    """The batched comparison agrees with one `git diff` per evidence (work tree and index)."""
    for number in range(12):
        repo.write(f"mix/f{number}.txt", f"line {number}\n")
    first = repo.commit("twelve files")
    repo.write("mix/f0.txt", "edited\n")
    repo.write("mix/f1.txt", "staged\n")
    repo.git("add", "mix/f1.txt")
    (repo.path / "mix/f2.txt").unlink()
    repo.write("mix/f3.txt", "temporary\n")
    repo.git("add", "mix/f3.txt")
    repo.write("mix/f3.txt", "line 3\n")
    repo.git("add", "mix/f3.txt")  # staged and restored: back to the snapshot
    repo.write("mix/f4.txt", "committed later\n")
    second = repo.commit("second")
    repo.write("mix/f5.txt", "line 5\r\n")
    repo.git("mv", "mix/f6.txt", "mix/f6-renamed.txt")

    pairs = [(commit, f"mix/f{n}.txt") for commit in (first, second) for n in range(12)]

    def plain_git_says_current(commit: str, path: str) -> bool:
        worktree = repo.git("diff", "--no-renames", "--name-only", commit, "--", path)
        staged = repo.git("diff", "--cached", "--no-renames", "--name-only", commit, "--", path)
        return worktree == "" and staged == ""

    items = [
        make_item([make_evidence(c, p) for c, p in pairs[start : start + 16]], item_id=f"k{start}")
        for start in range(0, len(pairs), 16)
    ]
    results = check_health(items, repo.path)
    verdicts = [e["status"] for r in results for e in r["evidence"]]
    # f2 was deleted before the second commit: no snapshot to compare, so not plain-git's call.
    unverifiable = [pairs[i] for i, v in enumerate(verdicts) if v == "unverifiable"]
    assert unverifiable == [(second, "mix/f2.txt")]
    expected = [
        "current" if plain_git_says_current(c, p) else "potentially_stale" for c, p in pairs
    ]
    assert [v for v, pair in zip(verdicts, pairs, strict=True) if pair not in unverifiable] == [
        e for e, pair in zip(expected, pairs, strict=True) if pair not in unverifiable
    ]
    assert "current" in verdicts
    assert "potentially_stale" in verdicts
