"""``memory.rollback``: undo a whole journaled run with a new commit.

The run must be ``applied`` - or ``interrupted`` with both commits, when its writer died
after the HEAD compare-and-swap - and its apply commit's *payload tree* must still equal
HEAD's (journal commits after it do not count). Once another machine's memory arrived by a
pull after the run, HEAD's payload holds that machine's changes too: the run is then rolled
back as a revert of its own paths, when none of them changed since its apply commit
(``rollback-conflict`` naming them otherwise). The rollback is a writer of the commit
pipeline (:mod:`dsh_memory.write.pipeline`): recovery point = HEAD, a ``DPSK memory rollback:
<run>`` commit restoring the recovery tree, the live index, the work tree (blobs streamed
in bounded chunks), then the journal record ``rolled_back``. Never reset, force or rewrite.
"""

from __future__ import annotations

from typing import Any

from dsh_common.errors import GitError
from dsh_memory.errors import (
    CommitFailedError,
    InterruptedRunError,
    RollbackConflictError,
    RollbackFailedError,
    RollbackInvalidConfirmationError,
    RollbackNotApplicableError,
    RollbackRunNotFoundError,
)
from dsh_memory.store import payload_state
from dsh_memory.store.oplock import ACTIVE_RUN_FILE, LOCK_FILE, read_active_run
from dsh_memory.store.root import Layout, escape_name, require_memory_repository
from dsh_memory.write import journal
from dsh_memory.write.operations import ROLLBACK_CONFIRMATION
from dsh_memory.write.pipeline import (
    OID_RE,
    Proposal,
    commit_run,
    journal_interrupted_run,
    writer_run,
)
from dsh_memory.write.transactions import Blob, GitTransactions

__all__ = ["ROLLBACK_CONFIRMATION", "rollback"]


def rollback(layout: Layout, run_id: object, confirmation: object) -> dict[str, Any]:
    if confirmation != ROLLBACK_CONFIRMATION:
        raise RollbackInvalidConfirmationError("rollback needs the exact confirmation")
    if not journal.is_valid_run_id(run_id):
        raise RollbackRunNotFoundError("no journaled run has that id")
    assert isinstance(run_id, str)  # noqa: S101 - narrowed by is_valid_run_id
    require_memory_repository(layout)
    root = layout.root
    tx = GitTransactions(layout)
    try:
        record = journal.read_run(root, run_id)
    except (OSError, ValueError) as exc:
        raise RollbackFailedError(f"run {run_id} cannot be read: {exc}") from exc
    if record is None:
        active = read_active_run(root)
        if (
            active is not None
            and active.get("run_id") == run_id
            and active["state"] == ("interrupted")
        ):
            # The run died before its journal commit: journal it now (with the commits it
            # recorded before the CAS) so that, after recovery, this rollback can proceed.
            journal_interrupted_run(tx)(active)
            raise InterruptedRunError(
                f"run {run_id} was interrupted and is now journaled with its commits; delete"
                f" {root / ACTIVE_RUN_FILE} and {root / LOCK_FILE}, then roll it back"
            )
        raise RollbackRunNotFoundError(f"no journaled run {run_id}")
    recovery_commit, apply_commit = record.get("recovery_commit"), record.get("apply_commit")
    # An ``interrupted`` run whose apply commit reached HEAD is a change like any other:
    # the writer died after the CAS, and undoing it is exactly what the operator needs.
    if (
        record.get("status") not in ("applied", "interrupted")
        or not isinstance(recovery_commit, str)
        or not isinstance(apply_commit, str)
        or not OID_RE.fullmatch(recovery_commit)
        or not OID_RE.fullmatch(apply_commit)
        or tx.git.rev_parse(f"{recovery_commit}^{{commit}}") is None
        or tx.git.rev_parse(f"{apply_commit}^{{commit}}") is None
    ):
        raise RollbackNotApplicableError(f"run {run_id} is not an applied run with commits")
    before = tx.tree_files(recovery_commit)
    after = tx.tree_files(apply_commit)
    if before == after:
        raise RollbackNotApplicableError(f"run {run_id} changed no payload")
    head = tx.require_head()
    changes: dict[str, Blob | None] = {
        path: before.get(path)
        for path in set(before) | set(after)
        if before.get(path) != after.get(path)
    }
    # Payload trees, not commits: journal commits after the run do not count as writes.
    now = tx.tree_files(head)
    if now != after:
        _check_revert(tx, run_id, apply_commit, changes, now, after)
    dirty = tx.payload_dirty_paths()
    _check_rollback_dirt(tx, dirty, before, after, run_id)
    rollback_id = journal.unique_run_id(root, f"{journal.utc_stamp()}-rollback")
    clock = journal.RunClock()
    with writer_run(tx, "rollback", rollback_id) as run:
        run.set_phase("validating")
        try:
            outcome = commit_run(
                tx,
                run,
                clock,
                head=head,
                checkpoint=False,
                dirty=dirty,
                propose=lambda _recovery: Proposal(
                    changes=changes, message=f"DPSK memory rollback: {run_id}"
                ),
            )
        except CommitFailedError as exc:
            raise RollbackFailedError(f"rollback failed: {exc.message}") from exc
        except (GitError, OSError) as exc:
            raise RollbackFailedError(f"rollback failed after its commit: {exc}") from exc
    commit, journal_commit = outcome.apply_commit, outcome.journal_commit
    result: dict[str, Any] = {
        "runId": run_id,
        "rollbackRunId": rollback_id,
        "status": "rolled_back",
        "changedPaths": sorted(changes),
        "recoveryCommit": head,
        "rollbackCommit": commit,
        "journalCommit": journal_commit,
    }
    if journal_commit is None:
        result["journaled"] = False
    return result


#: Subjects that say another machine's memory arrived: a pull's merge commit, and the
#: journal commit of a pull run (a fast-forward leaves no commit of its own before it).
_PULL_GREPS = ("--grep=DPSK memory pull merged: ", "--grep=-pull-")


def _pulled_since(tx: GitTransactions, apply_commit: str) -> bool:
    """Whether a pull landed in HEAD's history after ``apply_commit``."""
    found = tx.git.run(["rev-list", "-1", "--fixed-strings", *_PULL_GREPS, f"{apply_commit}..HEAD"])
    return bool(found.text.strip())


def _check_revert(  # noqa: PLR0917 - one private call site
    tx: GitTransactions,
    run_id: str,
    apply_commit: str,
    changes: dict[str, Blob | None],
    now: dict[str, Blob],
    after: dict[str, Blob],
) -> None:
    """HEAD's payload is no longer the run's: roll back anyway when another machine's
    changes arrived since (a pull) and none of them touched the run's own paths - the
    rollback is then a revert of exactly those paths. Otherwise ``rollback-conflict``."""
    if not _pulled_since(tx, apply_commit):
        raise RollbackConflictError(f"memory changed after run {run_id}; cannot roll it back")
    moved = sorted(p for p in changes if now.get(p) != after.get(p))
    if moved:
        shown = ", ".join(escape_name(p) for p in moved[:5])
        raise RollbackConflictError(
            f"memory changed after run {run_id} at {len(moved)} of its paths ({shown}):"
            " roll back the newer changes first, or edit those records by hand"
        )


def _check_rollback_dirt(
    tx: GitTransactions,
    dirty: list[str],
    before: dict[str, Blob],
    after: dict[str, Blob],
    run_id: str,
) -> None:
    """A dirty payload blocks a rollback unless the dirt is the run's own half-made state.

    A writer killed after its CAS leaves the work tree (or part of it) at the recovery
    content while HEAD holds the change. Restoring the recovery tree loses nothing there,
    so a dirty path is accepted when it is one the run changed and its live content is the
    run's before or after version; anything else is somebody's edit: ``rollback-conflict``.
    """
    if not dirty:
        return
    live = payload_state.live_blob_ids(tx.git, tx.root, dirty)
    for path in dirty:
        versions = {blob.oid if blob else None for blob in (before.get(path), after.get(path))}
        if before.get(path) == after.get(path) or live[path] not in versions:
            raise RollbackConflictError(
                f"the payload has uncommitted changes ({path}); commit or discard them before"
                f" rolling back run {run_id}"
            )
