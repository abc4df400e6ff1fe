"""Payload names refused before anything is committed, replayed through the commands.

- A record name longer than the file system can hold - or so long that the temporary name
  it is written under cannot be held (238-255 bytes: 80 Chinese characters) - used to move
  HEAD and then fail on disk: every later command tripped over it, and the next write
  deleted the record. Now ``write``, the sync's validation and previews refuse it up front,
  and the commit pipeline refuses any commit whose files the work tree cannot hold.
- ``handbook/.git/x.md`` (and every name Git leaves out of a tree) was "applied" as an
  empty commit: served by search, never in history. Now refused, and the pipeline checks
  that every path it was given entered the commit.
- A staged file name that is not UTF-8 ended in ``internal-error`` with nothing journaled.
  Now the run is journaled ``failed`` with ``staging-invalid``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from dsh_test_support import commands, gitcmd, in_process
from dsh_test_support.gitcmd import git, git_result

from dsh_memory.service import MemoryService

RECORD = "---\nschema_version: 1\nid: {id}\ntype: fact\n---\n{body}\n"
TITLE = "缓存雪崩的预防与热点键永不过期策略" * 5  # 85 characters, 255 bytes


def memory(root: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``dsh-memory --root ROOT ARGS``, in process (these tests read its output and the
    repository it leaves)."""
    return in_process.run("dsh-memory", "--root", str(root), *args, input=stdin)


def sync(root: Path, agent: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``dsh-memory-sync`` through its console script: it runs the fake agent."""
    return commands.run(
        "dsh-memory-sync", "--root", str(root), "--json", "--agent-command", agent, *args
    )


def error(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert result.returncode == 1, result.stdout
    found: dict[str, Any] = json.loads(result.stderr)["error"]
    return found


def head(root: Path) -> str:
    return gitcmd.head(root)


def last_run(root: Path) -> dict[str, Any]:
    runs: list[dict[str, Any]] = MemoryService().runs(limit=1)["value"]["runs"]
    return runs[0]


@pytest.mark.parametrize("characters", [85, 80, 79])
def test_write_refuses_a_name_the_file_system_cannot_hold(
    memory_root: Path, characters: int
) -> None:
    root = memory_root
    before = head(root)
    name = f"handbook/{TITLE[:characters]}.md"
    failure = error(memory(root, "write", name, "-", stdin=RECORD.format(id="x/long", body="L")))
    assert failure["code"] == "edit-invalid-request"
    assert "at most 237" in failure["message"]
    assert head(root) == before  # nothing committed
    # Every later command works (it used to trip over the record HEAD could not check out).
    assert memory(root, "status").returncode == 0
    assert MemoryService().health()["value"]["needsManualRecovery"] is False


def test_the_longest_name_that_fits_is_written_and_kept(memory_root: Path) -> None:
    root = memory_root
    name = f"handbook/{TITLE[:78]}.md"  # 234 + 3 = 237 bytes
    written = memory(root, "write", name, "-", stdin=RECORD.format(id="x/long", body="Kept."))
    assert written.returncode == 0, written.stderr
    assert (root / name).read_text().endswith("Kept.\n")
    other = memory(
        root, "write", "handbook/other.md", "-", stdin=RECORD.format(id="x/other", body="O")
    )
    assert other.returncode == 0, other.stderr
    assert name in git(root, "-c", "core.quotePath=false", "ls-tree", "-r", "--name-only", "HEAD")
    assert git(root, "status", "--porcelain") == ""


def test_a_sync_agent_naming_a_record_after_a_long_title_is_refused_and_journaled(
    sync_root: Path, session_logs: Any, agent_command: Callable[[str], str]
) -> None:
    root = sync_root
    session_logs.dsh("d1", "hello")
    watermark = (root / ".last-sync").stat().st_mtime_ns
    payload_before = git(root, "ls-tree", "-r", "HEAD", "--", "handbook")
    failure = error(sync(root, agent_command("long-name")))
    assert failure["code"] == "staging-invalid"
    assert "243 bytes" in failure["message"]
    record = last_run(root)
    assert (record["operation"], record["status"], record["error_code"]) == (
        "sync",
        "failed",
        "staging-invalid",
    )
    assert git(root, "ls-tree", "-r", "HEAD", "--", "handbook") == payload_before
    assert (root / ".last-sync").stat().st_mtime_ns == watermark  # read again next time
    # A preview is refused the same way, and no preview is stored.
    failure = error(
        sync(root, agent_command("long-name"), "--preview", "20261201T120000Z-0a1b2c3d")
    )
    assert failure["code"] == "staging-invalid"
    assert MemoryService().previews()["value"]["previews"] == []
    # The same sessions with an agent that names its record sensibly apply.
    applied = sync(root, agent_command("add"))
    assert applied.returncode == 0, applied.stderr
    assert json.loads(applied.stdout)["added"] == ["handbook/new-fact.md"]


def test_a_preview_holding_a_long_name_is_refused_before_any_commit(
    sync_root: Path, session_logs: Any, agent_command: Callable[[str], str]
) -> None:
    """A preview written by another tool (or edited on disk) is validated again."""
    root = sync_root
    preview_id = "20261201T120000Z-0a1b2c3d"
    session_logs.dsh("d1", "hello")
    stored = sync(root, agent_command("add"), "--preview", preview_id)
    assert stored.returncode == 0, stored.stderr
    staged = root / ".sync" / "previews" / preview_id / "staging" / "handbook"
    (staged / f"{TITLE[:80]}.md").write_text(RECORD.format(id="x/long", body="L"))
    before = head(root)
    failure = error(memory(root, "apply-preview", "--preview-id", preview_id))
    assert failure["code"] == "preview-apply-failed"
    assert "at most 237" in failure["message"]
    assert head(root) == before


def test_rollback_refuses_to_restore_a_file_the_work_tree_cannot_hold(
    memory_root: Path,
) -> None:
    """The pipeline's own check: a 240-byte name committed by plain git (the file system
    holds it) is removed by a run; rolling that run back would have to write it again
    through a temporary name that cannot exist - refused before HEAD moves."""
    root = memory_root
    name = f"handbook/{TITLE[:79]}.md"  # 240 bytes
    (root / name).write_text(RECORD.format(id="x/long", body="Made by hand."))
    git(root, "add", "--", name)
    git(root, "commit", "-qm", "a record made by hand")
    removed = memory(root, "remove", name)
    assert removed.returncode == 0, removed.stderr
    run_id = json.loads(removed.stdout)["value"]["runId"]
    before = head(root)
    failure = error(
        memory(root, "rollback", "--run-id", run_id, "--confirmation", "ROLLBACK_MEMORY")
    )
    assert failure["code"] == "rollback-failed"
    assert "cannot be written" in failure["message"]
    assert (
        git(root, "rev-list", "-1", "HEAD", "--", "handbook").strip()
        == git(root, "rev-list", "-1", before, "--", "handbook").strip()
    )  # no payload commit: only the failed run's journal record
    health = MemoryService().health()["value"]
    assert health["needsManualRecovery"] is False and health["activeRun"] is None


#: Every spelling class of ``.git`` Git's own rules know (``is_hfs_dotgit``,
#: ``is_ntfs_dotgit``), and the zero-width space that only reads as it: a folder of each.
DOTGIT_SPELLINGS = {
    "plain": "handbook/.git",
    "letter case": "handbook/.GIT",
    "trailing dot": "handbook/a/.git.",
    "trailing space": "handbook/a/.Git ",
    "trailing dots and spaces": "handbook/.git. .",
    "ntfs short name": "handbook/git~1",
    "ntfs short name, upper case, trailing dot": "handbook/GIT~1.",
    "hfs ignorable U+200C": "handbook/.git\u200c",
    "hfs ignorable U+200F inside": "handbook/.gi\u200ft",
    "hfs ignorable U+202A before": "handbook/\u202a.git",
    "hfs ignorable U+206F": "handbook/.g\u206fit",
    "hfs ignorable U+FEFF": "handbook/.git\ufeff",
    "ntfs index allocation stream": "handbook/.git::$INDEX_ALLOCATION",
    "ntfs named stream": "handbook/.git:x",
    "ntfs short name with a stream": "handbook/git~1::$INDEX_ALLOCATION",
    "behind a backslash": "handbook/x\\.git",
    "zero-width space (reads as .git)": "handbook/.git\u200b",
}


def _escaped(folder: str) -> str:
    """``folder`` as the fake agent takes it: ASCII, with backslash escapes."""
    return folder.encode("unicode_escape").decode("ascii")


@pytest.mark.parametrize("folder", list(DOTGIT_SPELLINGS.values()), ids=list(DOTGIT_SPELLINGS))
def test_write_refuses_a_path_git_would_leave_out(memory_root: Path, folder: str) -> None:
    before = head(memory_root)
    listing = sorted(p.name for p in (memory_root / "handbook").iterdir())
    failure = error(
        memory(
            memory_root,
            "write",
            f"{folder}/x.md",
            "-",
            stdin=RECORD.format(id="x/hidden", body="H"),
        )
    )
    assert failure["code"] == "edit-invalid-request"
    if "\\" not in folder:  # a backslash is no payload path at all: refused before this rule
        assert "Git reserves" in failure["message"]
    assert head(memory_root) == before
    assert sorted(p.name for p in (memory_root / "handbook").iterdir()) == listing


@pytest.mark.parametrize("folder", list(DOTGIT_SPELLINGS.values()), ids=list(DOTGIT_SPELLINGS))
def test_a_sync_agent_or_a_preview_under_any_spelling_of_dot_git_is_refused(
    sync_root: Path, session_logs: Any, agent_command: Callable[[str], str], folder: str
) -> None:
    root = sync_root
    session_logs.dsh("d1", "hello")
    before = head(root)
    failure = error(sync(root, agent_command("reserved") + " " + shlex.quote(_escaped(folder))))
    assert failure["code"] == "staging-invalid"
    assert "Git reserves" in failure["message"]
    assert (last_run(root)["status"], last_run(root)["error_code"]) == (
        "failed",
        "staging-invalid",
    )
    assert git(root, "ls-tree", "-r", "--name-only", "HEAD", "--", "handbook") == ""
    # A stored preview whose staging copy gained such a folder on disk is refused too.
    preview_id = "20261201T120000Z-0a1b2c3d"
    stored = sync(root, agent_command("add"), "--preview", preview_id)
    assert stored.returncode == 0, stored.stderr
    planted = root / ".sync" / "previews" / preview_id / "staging" / folder / "x.md"
    planted.parent.mkdir(parents=True)
    planted.write_text(RECORD.format(id="x/hidden", body="H"))
    failure = error(memory(root, "apply-preview", "--preview-id", preview_id))
    assert failure["code"] == "preview-apply-failed"
    assert "Git reserves" in failure["message"]
    assert git(root, "ls-tree", "-r", "--name-only", "HEAD", "--", "handbook") == ""
    assert head(root) != before  # only the failed runs' journal records
    assert MemoryService().search("Hidden")["value"]["count"] == 0


def _git_refuses(root: Path, path: str, oid: str) -> bool:
    """Whether Git itself, guarding HFS+ and NTFS, refuses ``path`` into an index."""
    done = git_result(
        root,
        "-c",
        "core.protectHFS=true",
        "-c",
        "core.protectNTFS=true",
        "update-index",
        "--add",
        "--cacheinfo",
        f"100644,{oid},{path}",
    )
    git(root, "rm", "-q", "--cached", "--", path, check=False)
    return done.returncode != 0


def test_the_rule_refuses_whatever_git_refuses_and_more_only_for_invisible_characters(
    memory_root: Path,
) -> None:
    from dsh_memory.store.payload_names import HFS_IGNORABLE, name_problem

    oid = git(memory_root, "hash-object", "-w", "--stdin", input="x").strip()
    bases = [".git", ".GiT", "git~1", "Git~1", ".gitx", "git~2", ".gi", "x.git", "gitx~1"]
    suffixes = ["", ".", " ", ". .", ":", "::$INDEX_ALLOCATION", ":x:$DATA", "x", ".md"]
    names = {base + suffix for base in bases for suffix in suffixes}
    for mark in [*sorted(HFS_IGNORABLE), "\u200b", "\u00ad"]:
        for base in (".git", "git~1", ".gitx"):
            names.update(base[:i] + mark + base[i:] for i in range(len(base) + 1))
    checked = 0
    for name in sorted(names):
        path = f"handbook/{name}/x.md"
        ours = name_problem(path) is not None
        theirs = _git_refuses(memory_root, path, oid)
        assert ours or not theirs, (name, "Git refuses it, we accept it")
        if ours and not theirs:  # ours is wider only where a name has invisible characters
            assert any(not c.isprintable() or c in "\u00ad" for c in name), name
        checked += 1
    assert checked > 150


def test_a_sync_agent_writing_under_dot_git_is_refused_and_journaled(
    sync_root: Path, session_logs: Any, agent_command: Callable[[str], str]
) -> None:
    root = sync_root
    session_logs.dsh("d1", "hello")
    failure = error(sync(root, agent_command("dotgit")))
    assert failure["code"] == "staging-invalid"
    assert ".git" in failure["message"]
    record = last_run(root)
    assert (record["status"], record["error_code"]) == ("failed", "staging-invalid")
    assert not (root / "handbook" / ".git").exists()
    search = MemoryService().search("Hidden")["value"]
    assert search["count"] == 0


def test_the_pipeline_refuses_a_commit_git_left_a_path_out_of(memory_root: Path) -> None:
    """Below every validation: a proposal with a path Git drops never becomes a commit."""
    from dsh_memory.errors import CommitFailedError
    from dsh_memory.store.root import inspect_layout
    from dsh_memory.write import journal
    from dsh_memory.write.pipeline import Proposal, commit_run, writer_run
    from dsh_memory.write.transactions import FILE_MODE, Blob, GitTransactions

    tx = GitTransactions(inspect_layout(memory_root))
    before = tx.require_head()
    oid = tx.write_blobs([RECORD.format(id="x/hidden", body="H").encode()])[0]
    changes: dict[str, Blob | None] = {
        "handbook/.git/x.md": Blob(FILE_MODE, oid),
        "handbook/kept.md": Blob(FILE_MODE, oid),
    }
    assert tx.tree_mismatches(tx.build_tree(before, changes), changes) == ["handbook/.git/x.md"]
    with (
        writer_run(tx, "edit", "20261201T120000Z-edit-1") as run,
        pytest.raises(
            CommitFailedError, match=re.escape("left handbook/.git/x.md out of the commit")
        ),
    ):
        commit_run(
            tx,
            run,
            journal.RunClock(),
            head=before,
            propose=lambda _r: Proposal(changes=changes, message="m"),
        )
    assert tx.git.rev_parse("HEAD") != before  # only the failed run's journal commit
    assert git(memory_root, "ls-tree", "-r", "--name-only", "HEAD", "--", "handbook") == ""
    assert last_run(memory_root)["error_code"] == "commit-failed"


def test_a_staged_name_that_is_not_utf8_is_journaled_as_failed(
    sync_root: Path, session_logs: Any, agent_command: Callable[[str], str]
) -> None:
    root = sync_root
    session_logs.dsh("d1", "hello")
    result = sync(root, agent_command("badname"))
    failure = error(result)
    assert failure["code"] == "staging-invalid"
    assert "bad-\\xff-name.md" in failure["message"]  # shown escaped, never a lone surrogate
    assert "not valid UTF-8" in failure["message"]
    record = last_run(root)
    assert (record["operation"], record["status"], record["error_code"]) == (
        "sync",
        "failed",
        "staging-invalid",
    )


def test_a_live_name_that_is_not_utf8_is_left_alone_by_a_sync(
    sync_root: Path, session_logs: Any, agent_command: Callable[[str], str]
) -> None:
    root = sync_root
    odd = os.fsencode(root / "handbook") + b"/odd-\xfe.md"
    with open(odd, "wb") as handle:
        handle.write(b"a note whose name is not UTF-8\n")
    session_logs.dsh("d1", "hello")
    applied = sync(root, agent_command("add"))
    assert applied.returncode == 0, applied.stderr
    assert json.loads(applied.stdout)["changedPaths"] == ["handbook/new-fact.md"]
    with open(odd, "rb") as handle:
        assert handle.read() == b"a note whose name is not UTF-8\n"


def test_a_checkpoint_git_would_leave_a_file_out_of_is_refused(memory_root: Path) -> None:
    """A ``handbook/.git/x.md`` made by hand (or left by an earlier version) cannot be held
    by a recovery checkpoint: clear, which would delete it, stops instead of deleting a file
    no commit recorded."""
    root = memory_root
    hidden = root / "handbook" / ".git" / "x.md"
    hidden.parent.mkdir()
    hidden.write_text(RECORD.format(id="x/hidden", body="H"))
    before = head(root)
    failure = error(memory(root, "clear", "--confirmation", "DELETE_MEMORY"))
    assert failure["code"] == "checkpoint-failed"
    assert "handbook/.git/x.md" in failure["message"]
    assert hidden.is_file()
    assert git(root, "rev-list", "-1", "HEAD", "--", "handbook", "summary.md") == git(
        root, "rev-list", "-1", before, "--", "handbook", "summary.md"
    )
    hidden.unlink()
    hidden.parent.rmdir()
    assert memory(root, "clear", "--confirmation", "DELETE_MEMORY").returncode == 0
