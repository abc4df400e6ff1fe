from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from dsh_test_support.gitcmd import git

from dsh_memory.service import MemoryService

Write = Callable[..., Path]


def _seed(root: Path, write_file: Write, commit: Callable[..., str]) -> str:
    write_file(root, "summary.md", "# summary\n")
    write_file(root, "handbook/a.md", "a\n")
    write_file(root, "rollouts/2026/r.md", "r\n")
    return commit(root)


def _head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def test_clear_rejects_wrong_confirmation(memory_root: Path, write_file: Write) -> None:
    write_file(memory_root, "handbook/a.md", "a")
    assert MemoryService().clear("delete") == {"ok": False, "error": {"code": "clear-failed"}}
    assert (memory_root / "handbook/a.md").exists()


def test_clear_of_empty_repository_is_already_empty(memory_root: Path) -> None:
    assert MemoryService().clear("DELETE_MEMORY")["value"] == {
        "alreadyEmpty": True,
        "clearedFileCount": 0,
        "recoveryCommit": None,
        "clearCommit": None,
    }


def test_clear_reuses_clean_head_as_recovery(
    memory_root: Path, write_file: Write, commit: Callable[..., str]
) -> None:
    head = _seed(memory_root, write_file, commit)
    value = MemoryService().clear("DELETE_MEMORY")["value"]
    assert value["recoveryCommit"] == head
    assert value["clearedFileCount"] == 3
    parents = git(memory_root, "rev-list", "--parents", "-n1", value["clearCommit"]).split()
    assert parents[1:] == [head]
    assert git(memory_root, "log", "-1", "--format=%s", value["clearCommit"]).strip() == (
        "DPSK memory cleared"
    )


def test_clear_commit_tree_holds_only_empty_summary(
    memory_root: Path, write_file: Write, commit: Callable[..., str]
) -> None:
    _seed(memory_root, write_file, commit)
    value = MemoryService().clear("DELETE_MEMORY")["value"]
    files = git(memory_root, "ls-tree", "-r", "--name-only", value["clearCommit"]).split()
    assert [
        f
        for f in files
        if not f.startswith(".") and f != "README.md" and not f.startswith("scripts/")
    ] == ["summary.md"]
    assert git(memory_root, "show", f"{value['clearCommit']}:summary.md") == ""
    assert not (memory_root / "handbook" / "a.md").exists()
    assert (memory_root / "summary.md").read_bytes() == b""
    assert git(memory_root, "status", "--porcelain").strip() == ""


def test_clear_checkpoints_dirty_payload_first(
    memory_root: Path, write_file: Write, commit: Callable[..., str]
) -> None:
    head = _seed(memory_root, write_file, commit)
    write_file(memory_root, "handbook/a.md", "edited\n")
    write_file(memory_root, "handbook/new.md", "untracked\n")
    value = MemoryService().clear("DELETE_MEMORY")["value"]
    recovery = value["recoveryCommit"]
    assert recovery != head
    assert git(memory_root, "log", "-1", "--format=%s", recovery).strip() == (
        "DPSK memory recovery checkpoint"
    )
    assert git(memory_root, "show", f"{recovery}:handbook/a.md") == "edited\n"
    assert git(memory_root, "show", f"{recovery}:handbook/new.md") == "untracked\n"
    assert value["clearedFileCount"] == 4


def test_clear_empties_hard_linked_summary_without_touching_other_link(
    memory_root: Path, write_file: Write, commit: Callable[..., str], tmp_path: Path
) -> None:
    _seed(memory_root, write_file, commit)
    other = tmp_path / "other-link.md"
    os.link(memory_root / "summary.md", other)
    assert MemoryService().clear("DELETE_MEMORY")["ok"] is True
    assert (memory_root / "summary.md").read_bytes() == b""
    assert other.read_text() == "# summary\n"


def test_clear_keeps_users_staged_and_dirty_files_outside_payload(
    memory_root: Path, write_file: Write, commit: Callable[..., str]
) -> None:
    _seed(memory_root, write_file, commit)
    write_file(memory_root, "notes.txt", "mine\n")
    git(memory_root, "add", "notes.txt")
    write_file(memory_root, "README.md", "edited readme\n")
    assert MemoryService().clear("DELETE_MEMORY")["ok"] is True
    assert git(memory_root, "diff", "--cached", "--name-only").split() == ["notes.txt"]
    assert git(memory_root, "diff", "--name-only").split() == ["README.md"]


def test_clear_with_index_lock_is_commit_failed_and_changes_nothing(
    memory_root: Path, write_file: Write, commit: Callable[..., str]
) -> None:
    head = _seed(memory_root, write_file, commit)
    (memory_root / ".git" / "index.lock").write_text("")
    assert MemoryService().clear("DELETE_MEMORY")["error"] == {"code": "commit-failed"}
    assert _head(memory_root) == head
    assert (memory_root / "handbook" / "a.md").read_text() == "a\n"
    assert not (memory_root / ".sync" / "operation.lock").exists()


def test_clear_with_empty_identity_is_commit_failed(
    memory_root: Path,
    write_file: Write,
    commit: Callable[..., str],
    isolated_env: Path,
) -> None:
    head = _seed(memory_root, write_file, commit)
    (isolated_env / ".gitconfig").write_text("[user]\n\tname =\n\temail =\n")
    assert MemoryService().clear("DELETE_MEMORY")["error"] == {"code": "commit-failed"}
    assert _head(memory_root) == head
    assert (memory_root / "summary.md").read_text() == "# summary\n"


def test_clear_with_empty_identity_and_dirty_payload_is_checkpoint_failed(
    memory_root: Path,
    write_file: Write,
    commit: Callable[..., str],
    isolated_env: Path,
) -> None:
    head = _seed(memory_root, write_file, commit)
    write_file(memory_root, "handbook/a.md", "dirty\n")
    (isolated_env / ".gitconfig").write_text("[user]\n\tname =\n\temail =\n")
    assert MemoryService().clear("DELETE_MEMORY")["error"] == {"code": "checkpoint-failed"}
    assert _head(memory_root) == head
    assert (memory_root / "handbook" / "a.md").read_text() == "dirty\n"


def test_clear_while_lock_held_is_operation_in_progress(
    memory_root: Path, write_file: Write, commit: Callable[..., str]
) -> None:
    _seed(memory_root, write_file, commit)
    lock = memory_root / ".sync" / "operation.lock"
    lock.write_text(f'{{"operation":"sync","pid":{os.getpid()},"runId":"r","startedAt":"t"}}')
    assert MemoryService().clear("DELETE_MEMORY")["error"] == {"code": "operation-in-progress"}
    assert lock.exists()
    assert (memory_root / "handbook" / "a.md").exists()


def test_clear_is_journaled_as_applied_run(
    memory_root: Path, write_file: Write, commit: Callable[..., str]
) -> None:
    _seed(memory_root, write_file, commit)
    value = MemoryService().clear("DELETE_MEMORY")["value"]
    runs = MemoryService().runs()["value"]["runs"]
    assert runs[0]["operation"] == "clear"
    assert runs[0]["status"] == "applied"
    assert runs[0]["apply_commit"] == value["clearCommit"]
    assert MemoryService().status()["value"]["empty"] is True


def test_clear_refuses_symlinked_payload_folder_and_touches_nothing_outside(
    memory_root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.md").write_text("keep\n")
    head = _head(memory_root)
    (memory_root / "archive").rmdir()
    (memory_root / "archive").symlink_to(outside)
    assert MemoryService().clear("DELETE_MEMORY")["error"] == {"code": "unsafe-layout"}
    assert (outside / "keep.md").read_text() == "keep\n"
    assert _head(memory_root) == head


def test_clear_of_non_repository_is_repo_unavailable(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    result = MemoryService(tmp_path / "plain").clear("DELETE_MEMORY")
    assert result == {"ok": False, "error": {"code": "repo-unavailable"}}


def test_clear_with_oversized_dirty_file_is_checkpoint_failed(
    memory_root: Path, write_file: Write, commit: Callable[..., str]
) -> None:
    head = _seed(memory_root, write_file, commit)
    big = memory_root / "handbook" / "huge.md"
    big.write_bytes(b"x" * (8 * 1024 * 1024 + 1))
    assert MemoryService().clear("DELETE_MEMORY")["error"] == {"code": "checkpoint-failed"}
    # Only the journal moved: the failed run is recorded, the payload is as it was.
    assert git(memory_root, "diff", "--name-only", head, "HEAD").split() == [
        ".sync/last-run.json",
        f".sync/runs/{_failed_run_id()}.json",
    ]
    assert big.exists()
    assert (memory_root / "handbook" / "a.md").exists()


def _failed_run_id() -> str:
    run = MemoryService().runs(status="failed")["value"]["runs"][0]
    assert run["error_code"] == "checkpoint-failed"
    run_id: str = run["run_id"]
    return run_id


def test_clear_checkpoints_git_ignored_payload_files_it_deletes(
    memory_root: Path, write_file: Write, commit: Callable[..., str]
) -> None:
    _seed(memory_root, write_file, commit)
    write_file(memory_root, "handbook/.gitignore", "*.draft\n")
    commit(memory_root)
    write_file(memory_root, "handbook/idea.draft", "ignored but precious\n")
    value = MemoryService().clear("DELETE_MEMORY")["value"]
    recovery = value["recoveryCommit"]
    assert git(memory_root, "show", f"{recovery}:handbook/idea.draft") == ("ignored but precious\n")
    assert not (memory_root / "handbook" / "idea.draft").exists()


def test_clear_racing_a_symlink_swap_never_touches_outside(
    memory_root: Path, write_file: Write, commit: Callable[..., str], tmp_path: Path
) -> None:
    import threading

    for index in range(200):
        write_file(memory_root, f"archive/n{index}.md", f"{index}\n")
    commit(memory_root)
    outside = tmp_path / "outside"
    outside.mkdir()
    for index in range(200):
        (outside / f"n{index}.md").write_text("precious\n")
    stop = threading.Event()
    real = tmp_path / "real-archive"

    def swap() -> None:
        # Once clear holds the lock (the layout inspection has passed), keep swapping
        # archive/ for a symlink to `outside` and back until clear finishes.
        lock = memory_root / ".sync" / "operation.lock"
        while not stop.is_set() and not lock.exists():
            pass
        while not stop.is_set():
            try:
                os.rename(memory_root / "archive", real)
                (memory_root / "archive").symlink_to(outside)
                (memory_root / "archive").unlink()
                os.rename(real, memory_root / "archive")
            except OSError:
                continue

    swapper = threading.Thread(target=swap)
    swapper.start()
    try:
        result = MemoryService().clear("DELETE_MEMORY")
    finally:
        stop.set()
        swapper.join()
    if not (memory_root / "archive").exists() and real.exists():
        os.rename(real, memory_root / "archive")
    assert result["ok"] or result["error"]["code"] in {
        "unsafe-layout",
        "repo-unavailable",
        "checkpoint-failed",
        "commit-failed",
        "clear-failed",
    }
    assert sorted(p.read_text() for p in outside.iterdir()) == ["precious\n"] * 200


def test_clear_refuses_while_a_tracked_record_folder_is_missing(
    memory_root: Path, write_file: Write, commit: Callable[..., str]
) -> None:
    # A folder renamed away (a concurrent rename caught at the worst moment) looks like a
    # deleted folder; clear refuses rather than report success over records that
    # come back when the folder does.
    head = _seed(memory_root, write_file, commit)
    os.rename(memory_root / "handbook", memory_root / "handbook.away")
    service = MemoryService()
    assert service.clear("DELETE_MEMORY") == {"ok": False, "error": {"code": "unsafe-layout"}}
    assert "dsh-memory adopt" in (service.last_error_message or "")
    assert _head(memory_root) == head
    os.rename(memory_root / "handbook.away", memory_root / "handbook")
    assert MemoryService().clear("DELETE_MEMORY")["ok"] is True
    assert not (memory_root / "handbook/a.md").exists()
