"""``dsh-memory pull``: another machine's memory, fetched from the Git remote and merged in.

1. The remote's branch is fetched into ``refs/remotes/origin/<branch>`` (crash point
   ``after-fetch``): nothing of the memory has changed yet. What the fetched commits would
   bring is checked (:mod:`dsh_memory.remote.incoming`), and so is the repository's own config: a
   ``merge.<x>.driver`` there would be a program git runs to merge records
   (``unsafe-config``).
2. Under the operation lock, one run of the commit pipeline (operation ``pull``), its
   recovery point first (a dirty payload is checkpointed, so the merge is of the checkpoint
   and nothing uncommitted is lost), then one of:

   * ``up-to-date`` - the remote has no such branch, or its commit is in HEAD's history:
     nothing is written at all;
   * ``fast-forward`` - HEAD is in the remote's history: HEAD moves to the fetched commit
     (compare-and-swap) and the run is journaled. When the fetched commits change no
     payload (another machine's journal commits only), the run is *not* journaled: a
     journal commit of ours would be new history for the other machine, and two machines
     pulling in turn would never stop;
   * *adopted* (``fast-forward`` with ``adopted: true``) - a memory with no journaled run,
     an empty payload and an unrelated history (a fresh ``init``, a new machine) takes the
     remote's history instead of merging an empty tree over it;
   * ``merged`` / ``merged-with-conflicts`` - the histories diverged: one merge commit
     ``DPSK memory pull merged: <run>`` of the recovery point and the fetched commit, built
     by :mod:`dsh_memory.remote.remote_merge` (never a rebase, reset or force), then the journal.

   Before HEAD moves, the old HEAD is kept under ``refs/dsh-memory/pre-pull/<run>``.
3. The work tree follows HEAD - except ``.last-sync``, this machine's own session
   watermark, which a pull never changes (the other machine's watermark says nothing about
   the sessions of this one).

What was fetched and pulled, and when, is remembered for status and health
(:mod:`dsh_memory.remote.remote_config`).
"""

from __future__ import annotations

import os
from typing import Any

from dsh_common.git_remote import repository_config
from dsh_memory.errors import MemoryRepoError, UnsafeConfigError
from dsh_memory.remote.incoming import check_incoming
from dsh_memory.remote.remote_config import (
    configured_remote,
    fetch_remote,
    record,
    refuse_unfinished,
)
from dsh_memory.remote.remote_merge import merge_base, merge_commits
from dsh_memory.store import fsops
from dsh_memory.store.oplock import OperationRun
from dsh_memory.store.payload_state import blob_id
from dsh_memory.store.root import (
    LAST_SYNC_FILE,
    RECORD_DIRS,
    SUMMARY_FILE,
    Layout,
    require_memory_repository,
)
from dsh_memory.write import journal
from dsh_memory.write.crashpoints import AFTER_FETCH, crash_point
from dsh_memory.write.pipeline import Outcome, Proposal, commit_run, writer_run
from dsh_memory.write.transactions import Blob, GitTransactions, TreeChanges
from dsh_memory.write.unjournaled import PULL_MERGED

OPERATION = "pull"
BACKUP_REFS = "refs/dsh-memory/pre-pull"
#: Backup refs of commits HEAD's history still holds are redundant; this many are kept.
KEPT_BACKUPS = 20


def pull(layout: Layout) -> dict[str, Any]:
    """Fetch and merge the remote's memory (see the module docstring)."""
    require_memory_repository(layout)
    tx = GitTransactions(layout)
    remote = configured_remote(tx)
    refuse_unfinished(tx, "pulling")
    try:
        check_merge_config(tx)
        theirs = fetch_remote(tx, remote)
        crash_point(AFTER_FETCH)
        result = _pull_fetched(tx, theirs)
    except MemoryRepoError as exc:
        record(tx, "lastPull", {"status": "failed", "code": exc.code})
        raise
    record(
        tx,
        "lastPull",
        {
            "status": result["status"],
            "runId": result["runId"],
            "conflicts": len(result["conflicts"]),
        },
    )
    return result


def check_merge_config(tx: GitTransactions) -> None:
    """A merge driver named by the repository's own config is a program: refused."""
    drivers = repository_config(tx.git, r"^merge\..*\.driver$")
    if drivers:
        raise UnsafeConfigError(
            f"the memory repository's own git config names a merge driver ({drivers[0]}),"
            " a program git would run to merge records: remove it"
            " (`git config --local --remove-section ...`) before pulling"
        )


def _answer(status: str, before: str, theirs: str | None, **fields: Any) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "status": status,
        "runId": None,
        "conflicts": [],
        "changedPaths": [],
        "headBefore": before,
        "head": before,
        "remoteHead": theirs,
        "adopted": False,
        "recoveryCommit": None,
        "applyCommit": None,
        "journalCommit": None,
    }
    answer.update(fields)
    return answer


def _pull_fetched(tx: GitTransactions, theirs: str | None) -> dict[str, Any]:
    head = tx.require_head()
    if theirs is None or tx.is_ancestor(theirs, head):
        return _answer("up-to-date", head, theirs)
    check_incoming(tx, merge_base(tx, head, theirs), theirs)
    run_id = journal.new_run_id(tx.root, OPERATION)
    clock = journal.RunClock()
    with writer_run(tx, OPERATION, run_id) as run:
        head = tx.require_head()  # again, under the lock
        if tx.is_ancestor(theirs, head):
            return _answer("up-to-date", head, theirs)
        return _locked_pull(tx, run, clock, head, theirs)


def _payload(tx: GitTransactions, commit: str) -> dict[str, Blob]:
    return tx.tree_files(commit)


def _adopts(tx: GitTransactions, ours: dict[str, Blob], dirty: list[str]) -> bool:
    """A new memory: no journaled run, nothing in the payload but an empty summary."""
    if dirty or journal.journaled_run_ids(tx):
        return False
    empty = blob_id(b"", len(tx.require_head()))
    return all(p == SUMMARY_FILE and b.oid == empty for p, b in ours.items())


def _locked_pull(
    tx: GitTransactions, run: OperationRun, clock: journal.RunClock, head: str, theirs: str
) -> dict[str, Any]:
    run.set_phase("validating")
    ours, incoming = _payload(tx, head), _payload(tx, theirs)
    # Files git does not see (ignored by the user's excludes) where theirs adds a record
    # would be overwritten unrecorded: they join the checkpoint, and so the merge.
    # (A folder there is the other machine's file against our folder: the merge refuses it.)
    hidden = [p for p in incoming if p not in ours and os.path.isfile(tx.root / p)]
    dirty = sorted({*tx.payload_dirty_paths(), *hidden})
    fast_forward = not dirty and tx.is_ancestor(head, theirs)
    adopted = not fast_forward and _adopts(tx, ours, dirty)
    payload_changes = None
    if fast_forward or adopted:
        payload_changes = sorted(p for p in {*ours, *incoming} if ours.get(p) != incoming.get(p))
    keep_backup(tx, run.run_id, head)
    merged: dict[str, Any] = {}

    def propose(recovery: str) -> Proposal:
        if payload_changes is not None:
            return Proposal(commit=theirs, changed_paths=payload_changes, adopts=adopted)
        result = merge_commits(tx, recovery, theirs)
        commit = tx.commit_tree(result.tree, [recovery, theirs], f"{PULL_MERGED}{run.run_id}")
        conflicts = [c.as_json() for c in result.conflicts]
        merged.update(conflicts=conflicts)
        if result.renamed_runs:
            merged["renamedRuns"] = [
                {
                    "runId": c.path.rsplit("/", 1)[1].removesuffix(".json"),
                    "keptAs": c.kept_as.rsplit("/", 1)[1].removesuffix(".json"),
                }
                for c in result.renamed_runs
            ]
        return Proposal(
            commit=commit,
            changed_paths=result.changed_paths,
            contents=result.contents,
            fields={"conflicts": conflicts},
        )

    outcome = commit_run(
        tx,
        run,
        clock,
        head=head,
        propose=propose,
        dirty=dirty,
        worktree=_worktree(tx),
        journaled=payload_changes is None or bool(payload_changes),
    )
    prune_backups(tx)
    answer = _result(tx, outcome, head, theirs, merged.get("conflicts"), adopted)
    if "renamedRuns" in merged:
        # Another machine's run whose id one of ours already had: kept under a new id.
        answer["renamedRuns"] = merged["renamedRuns"]
    return answer


def _result(  # noqa: PLR0917 - one private call site
    tx: GitTransactions,
    outcome: Outcome,
    head: str,
    theirs: str,
    conflicts: list[dict[str, str]] | None,
    adopted: bool,
) -> dict[str, Any]:
    changed = list(outcome.record.get("changed_paths") or [])
    journal_only = conflicts is None and not changed
    if conflicts is None:
        status = "fast-forward"
    else:
        status = "merged-with-conflicts" if conflicts else "merged"
    answer = _answer(
        status,
        head,
        theirs,
        runId=None if journal_only else outcome.record["run_id"],
        conflicts=conflicts or [],
        changedPaths=changed,
        head=tx.require_head(),
        adopted=adopted,
        recoveryCommit=outcome.recovery_commit,
        applyCommit=outcome.apply_commit,
        journalCommit=outcome.journal_commit,
    )
    if not journal_only and not outcome.journaled:
        answer["journaled"] = False  # applied; recover finishes the journal
    return answer


def _worktree(tx: GitTransactions) -> Any:
    """The pull's work-tree step: every path HEAD changed but this machine's watermark."""

    def write(changes: TreeChanges) -> None:
        tx.materialize_streamed({p: b for p, b in changes.items() if p != LAST_SYNC_FILE})
        for name in RECORD_DIRS:
            fsops.prune_empty_directories(tx.root, name)

    return write


# -- the backup refs -------------------------------------------------------------------------


def keep_backup(tx: GitTransactions, run_id: str, head: str) -> None:
    """``refs/dsh-memory/pre-pull/<run>`` -> the HEAD before the pull (before it moves)."""
    tx.git.run(["update-ref", "-m", "dsh-memory pull backup", f"{BACKUP_REFS}/{run_id}", head])


def prune_backups(tx: GitTransactions) -> None:
    """Drop all but the newest :data:`KEPT_BACKUPS` backups that HEAD's history still holds
    (those are redundant: the journal names them too). A backup HEAD's history no longer
    holds - the commit a new memory had before it adopted the remote's history - stays."""
    listing = tx.git.run(
        ["for-each-ref", "--merged=HEAD", "--sort=-refname", "--format=%(refname)", BACKUP_REFS]
    )
    for ref in listing.text.split()[KEPT_BACKUPS:]:
        tx.git.run(["update-ref", "-d", ref], check=False)
