"""Start-up: the cheaper status/context paths give the answers of the general ones.

status spends two git processes on the payload's dirtiness (one ``ls-files`` for the index
and the untracked files, contents hashed in Python); context checks the layout and the
memory marker in one ``rev-parse``; neither imports what only writers need. Each shortcut
is checked here against the general path (or plain git) on real repositories.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from dsh_test_support import commands, gitcmd
from dsh_test_support.gitcmd import git

from dsh_common.git import GitRunner
from dsh_memory.errors import RepoUnavailableError, UnsafeLayoutError, UsageBusyError
from dsh_memory.store import payload_state, usage
from dsh_memory.store.root import MARKER_FILE, PAYLOAD_PATHS, inspect_memory_layout
from dsh_memory.write.transactions import GitTransactions


def porcelain_paths(root: Path) -> list[str]:
    """What ``git status`` calls changed under the payload (plain git, test side only)."""
    output = subprocess.run(
        ["git", "status", "--porcelain", "-z", "--untracked-files=all", "--", *PAYLOAD_PATHS],
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout
    paths: list[str] = []
    records = iter(output.split(b"\0"))
    for record in records:
        if not record:
            continue
        paths.append(record[3:].decode("utf-8", "surrogateescape"))
        if record[:1] in (b"R", b"C"):
            next(records)  # the rename's source
    return sorted(paths)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "memory"
    (root / "handbook" / "deep").mkdir(parents=True)
    (root / "rollouts").mkdir()
    for name in ("a.md", "b.md", "c.md", "deep/d.md"):
        (root / "handbook" / name).write_text(f"{name}\n")
    (root / "summary.md").write_text("summary\n")
    gitcmd.init(root)
    gitcmd.commit_all(root, "init")
    return root


def _make_every_kind_of_change(root: Path) -> None:
    (root / "handbook/a.md").write_text("a.md changed\n")  # modified, not staged
    (root / "handbook/b.md").write_text("b.md staged\n")
    git(root, "add", "handbook/b.md")  # staged
    (root / "handbook/c.md").unlink()  # deleted
    # Untracked names an index line could be mistaken for, or that need no quoting.
    (root / "handbook/100644 0000000000000000000000000000000000000000 0\tz.md").write_text("x")
    (root / "handbook/tab\tname.md").write_text("x")
    (root / "rollouts/1.md").write_text("x")
    (root / "rollouts/ignored.md").write_text("x")
    (root / ".gitignore").write_text("rollouts/ignored.md\n")


def test_one_ls_files_finds_what_git_status_finds(repo: Path) -> None:
    _make_every_kind_of_change(repo)
    runner = GitRunner(repo)
    dirty = payload_state.payload_dirty_paths(runner, repo, PAYLOAD_PATHS)
    assert dirty == porcelain_paths(repo)
    assert "rollouts/1.md" in dirty and "rollouts/ignored.md" not in dirty
    assert runner.commands_run == 2  # ls-tree, ls-files; the contents were hashed here


def test_pathspecs_that_could_list_as_index_lines_take_two_processes(repo: Path) -> None:
    _make_every_kind_of_change(repo)
    runner = GitRunner(repo)
    dirty = payload_state.payload_dirty_paths(runner, repo, [f"./{p}" for p in PAYLOAD_PATHS])
    assert dirty == porcelain_paths(repo)
    assert runner.commands_run == 3


def test_a_clean_payload_is_clean(repo: Path) -> None:
    (repo / "handbook/a.md").touch()  # stat-dirty only: the hash decides
    os.utime(repo / "handbook/a.md", (1, 1))
    assert payload_state.payload_dirty_paths(GitRunner(repo), repo, PAYLOAD_PATHS) == []


def test_many_files_are_hashed_by_one_git_process_with_the_same_answer(repo: Path) -> None:
    for index in range(payload_state.PYTHON_HASH_MAX_FILES + 1):
        (repo / f"handbook/n{index}.md").write_text(f"note {index}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "many")
    (repo / "handbook/n7.md").write_text("note 7 changed\n")
    runner = GitRunner(repo)
    assert payload_state.payload_dirty_paths(runner, repo, PAYLOAD_PATHS) == ["handbook/n7.md"]
    assert runner.commands_run == 3  # ls-tree, ls-files, hash-object


def test_large_files_are_hashed_by_git_with_the_same_answer(repo: Path) -> None:
    big = b"x" * (payload_state.PYTHON_HASH_MAX_BYTES + 1)
    (repo / "handbook/big.md").write_bytes(big)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "big")
    runner = GitRunner(repo)
    assert payload_state.payload_dirty_paths(runner, repo, PAYLOAD_PATHS) == []
    assert runner.commands_run == 3
    (repo / "handbook/big.md").write_bytes(big[:-1] + b"y")
    assert payload_state.payload_dirty_paths(GitRunner(repo), repo, PAYLOAD_PATHS) == [
        "handbook/big.md"
    ]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_in_process_hashing_never_blocks_on_a_fifo_nor_follows_a_link(
    repo: Path, tmp_path: Path
) -> None:
    # What the caller lstat-ed as a regular file may be swapped before it is read; the swap
    # cannot be timed through the public function, so the reader is called directly.
    os.mkfifo(repo / "handbook/fifo.md")
    (tmp_path / "outside.md").write_text("outside\n")
    (repo / "handbook/link.md").symlink_to(tmp_path / "outside.md")
    ids = payload_state._hash_in_process(
        repo, ["handbook/fifo.md", "handbook/link.md", "handbook/a.md"], 40
    )
    assert ids == {"handbook/a.md": git(repo, "hash-object", "handbook/a.md").strip()}


def test_python_blob_ids_are_gits(repo: Path) -> None:
    data = "ünïcode\r\nand a CR\n".encode()
    (repo / "handbook/u.md").write_bytes(data)
    expected = git(repo, "hash-object", "--no-filters", "handbook/u.md").strip()
    assert payload_state.blob_id(data, 40) == expected


def test_status_of_a_memory_repository_spends_three_git_processes(memory_root: Path) -> None:
    layout = inspect_memory_layout(memory_root)[0]
    before = layout.git.commands_run
    assert GitTransactions(layout).payload_dirty_paths() == []
    assert layout.git.commands_run - before == 2


# -- the layout and the marker in one process ---------------------------------------------


def test_current_marker_is_recognised_in_one_git_process(memory_root: Path) -> None:
    layout, marked = inspect_memory_layout(memory_root)
    assert marked is True
    assert layout.root == memory_root
    assert layout.git.commands_run == 1


def test_an_older_marker_is_read_as_before(memory_root: Path) -> None:
    # The earlier tool's .sync/.gitignore: other lines, operation.lock among them.
    (memory_root / MARKER_FILE).write_text("operation.lock\nactive-run.json\n")
    git(memory_root, "add", "-f", MARKER_FILE)
    git(memory_root, "commit", "-qm", "older marker")
    layout, marked = inspect_memory_layout(memory_root)
    assert marked is True
    assert layout.git.commands_run == 3  # the combined try, rev-parse, cat-file


def test_a_marker_without_the_lock_line_is_no_marker(memory_root: Path) -> None:
    (memory_root / MARKER_FILE).write_text("previews/\n")
    git(memory_root, "add", "-f", MARKER_FILE)
    git(memory_root, "commit", "-qm", "no lock line")
    assert inspect_memory_layout(memory_root)[1] is False


def test_a_plain_repository_has_no_marker(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q")
    assert inspect_memory_layout(project)[1] is False
    (project / "x.txt").write_text("x")
    git(project, "add", "x.txt")
    git(project, "commit", "-qm", "x")
    assert inspect_memory_layout(project)[1] is False


def test_combined_check_refuses_what_the_layout_check_refuses(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(RepoUnavailableError):
        inspect_memory_layout(plain)
    outer = tmp_path / "outer"
    (outer / "inner").mkdir(parents=True)
    git(outer, "init", "-q")
    with pytest.raises(UnsafeLayoutError):
        inspect_memory_layout(outer / "inner")


def test_combined_check_refuses_a_symlinked_payload(memory_root: Path, tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (memory_root / "archive").rmdir()
    (memory_root / "archive").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UnsafeLayoutError):
        inspect_memory_layout(memory_root)


# -- the usage lock's release -------------------------------------------------------------


# (the usage_root fixture is in conftest.py, shared with test_usage.py)


def _dead_pid() -> int:
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(done.stdout)


def _stale(path: Path) -> None:
    os.utime(path, (1, 1), follow_symlinks=False)


def test_a_stale_lock_holding_more_than_its_owner_is_still_removed(usage_root: Path) -> None:
    lock = usage_root / ".sync/usage.lock"
    (lock / "leftover").mkdir(parents=True)
    (lock / "owner.json").write_text(json.dumps({"pid": _dead_pid()}))
    _stale(lock)
    usage.record_usage(usage_root, ["handbook/a.md"])
    assert not lock.exists()
    assert usage.read_usage(usage_root)["records"]["handbook/a.md"]["usage_count"] == 1


def test_a_symlinked_lock_is_never_followed(usage_root: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "owner.json").write_text(json.dumps({"pid": _dead_pid()}))
    (usage_root / ".sync/usage.lock").symlink_to(victim)
    _stale(usage_root / ".sync/usage.lock")
    with pytest.raises(UsageBusyError):
        usage.record_usage(usage_root, ["handbook/a.md"])
    assert (victim / "owner.json").exists()


# -- what the frequent commands do not import ---------------------------------------------

WRITER_ONLY = {"secrets", "shutil", "socket", "calendar", "typer", "dsh_memory.store.oplock"}


@pytest.mark.parametrize("argv", [["status"], ["context", "deploy"], ["search", "deploy"]])
def test_frequent_commands_leave_writer_modules_unimported(
    memory_root: Path, argv: list[str]
) -> None:
    # PYTHONPROFILEIMPORTTIME (-X importtime) names every module the console script's
    # process imports (the launcher ends the process with os._exit, so nothing can be asked
    # of it afterwards).
    env = commands.environ(PYTHONPROFILEIMPORTTIME="1", DSH_MEMORY_ROOT=str(memory_root))
    done = commands.run("dsh-memory", *argv, env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["ok"] is True
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "dsh_memory.service" in imported  # the probe sees the command's own imports
    assert imported & WRITER_ONLY == set()


def test_the_fast_path_flushes_its_answer_before_it_exits(memory_root: Path) -> None:
    # Through a pipe stdout is block-buffered: os._exit without the flush would lose it.
    done = commands.run("dsh-memory", "--root", str(memory_root), "status")
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("}\n")
    assert json.loads(done.stdout)["value"]["empty"] is True
    failed = commands.run("dsh-memory", "--root", str(memory_root / "no"), "status")
    assert failed.returncode == 1
    assert json.loads(failed.stderr)["error"]["code"] == "repo-unavailable"
