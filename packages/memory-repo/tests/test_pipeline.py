"""The commit pipeline's API for a writer that brings its own commit (a merge, say).

A future writer - pulling memory from a Git remote - builds a merge commit whose parents
are the recovery point and the fetched commit, and hands that commit to the pipeline
instead of tree changes: the pipeline checks it descends from HEAD and the recovery point,
moves HEAD by the same compare-and-swap, brings the live index and work tree along from
the trees, and journals the run like any other.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from dsh_test_support.gitcmd import git

from dsh_memory.errors import CommitFailedError
from dsh_memory.service import MemoryService
from dsh_memory.store.root import inspect_layout
from dsh_memory.write import journal
from dsh_memory.write.pipeline import Proposal, commit_run, writer_run
from dsh_memory.write.transactions import FILE_MODE, Blob, GitTransactions

RECORD = "---\nschema_version: 1\nid: {id}\ntype: fact\n---\n{body}\n"


def _commit_with(tx: GitTransactions, base: str, files: dict[str, str], message: str) -> str:
    paths = sorted(files)
    oids = tx.write_blobs([files[p].encode() for p in paths])
    changes: dict[str, Blob | None] = {
        p: Blob(FILE_MODE, o) for p, o in zip(paths, oids, strict=True)
    }
    return tx.commit_tree(tx.build_tree(base, changes), [base], message)


def test_a_writer_brings_its_own_merge_commit(memory_root: Path) -> None:
    root = memory_root
    tx = GitTransactions(inspect_layout(root))
    base = tx.require_head()
    # Another copy of the memory wrote a record (the "remote" side)...
    remote = _commit_with(
        tx,
        base,
        {"handbook/remote.md": RECORD.format(id="r/x", body="R")},
        "DPSK memory sync applied: elsewhere",
    )
    # ...while this one wrote its own, and a person left an uncommitted note.
    assert MemoryService().write("handbook/local.md", RECORD.format(id="l/x", body="L"))["ok"]
    (root / "summary.md").write_text("- an uncommitted note\n")
    head = tx.require_head()
    run_id = journal.new_run_id(root, "pull")

    def merge(recovery: str) -> Proposal:
        # The recovery point holds the note: the merge keeps it, so nothing is lost.
        assert recovery != head
        tree = tx.build_tree(recovery, tx.tree_diff(base, remote))
        commit = tx.commit_tree(tree, [recovery, remote], "DPSK memory pull: elsewhere")
        return Proposal(commit=commit)

    with writer_run(tx, "pull", run_id) as run:
        outcome = commit_run(tx, run, journal.RunClock(), head=head, propose=merge)
    assert git(root, "rev-list", "--parents", "-1", outcome.apply_commit).split()[1:] == [
        outcome.recovery_commit,
        remote,
    ]
    assert git(root, "rev-list", "-1", "HEAD", "--", "handbook").strip() == outcome.apply_commit
    assert (root / "handbook" / "remote.md").read_text() == RECORD.format(id="r/x", body="R")
    assert (root / "handbook" / "local.md").is_file()
    assert (root / "summary.md").read_text() == "- an uncommitted note\n"
    assert git(root, "status", "--porcelain") == ""  # index and work tree follow HEAD
    record = journal.read_run(root, run_id)
    assert record is not None
    assert (record["operation"], record["status"]) == ("pull", "applied")
    assert record["changed_paths"] == ["handbook/remote.md"]
    assert outcome.journaled and journal.is_tracked(tx, run_id)
    git(root, "fsck", "--strict")
    # Rollback undoes the pull like any other run.
    undone = MemoryService().rollback(run_id, "ROLLBACK_MEMORY")
    assert undone["ok"], undone
    assert not (root / "handbook" / "remote.md").exists()


def test_a_brought_commit_must_descend_from_head(memory_root: Path) -> None:
    root = memory_root
    tx = GitTransactions(inspect_layout(root))
    base = tx.require_head()
    assert MemoryService().write("handbook/local.md", RECORD.format(id="l/x", body="L"))["ok"]
    head = tx.require_head()
    # A commit that would drop the local write: not a descendant of HEAD.
    stray = _commit_with(tx, base, {"handbook/stray.md": RECORD.format(id="s/x", body="S")}, "x")
    with (
        writer_run(tx, "pull", journal.new_run_id(root, "pull")) as run,
        pytest.raises(CommitFailedError, match="does not descend from HEAD"),
    ):
        commit_run(
            tx, run, journal.RunClock(), head=head, propose=lambda _recovery: Proposal(commit=stray)
        )
    assert git(root, "rev-list", "-1", "HEAD", "--", "handbook") == git(
        root, "rev-list", "-1", head, "--", "handbook"
    )
    assert not (root / "handbook" / "stray.md").exists()


def test_a_proposal_is_tree_changes_or_a_commit() -> None:
    with pytest.raises(ValueError, match="either"):
        Proposal()
    with pytest.raises(ValueError, match="either"):
        Proposal(changes={}, commit="0" * 40, message="m")
    with pytest.raises(ValueError, match="message"):
        Proposal(changes={})
