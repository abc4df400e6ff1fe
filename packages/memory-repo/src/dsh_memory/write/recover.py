"""``dsh-memory recover --confirmation RECOVER_MEMORY``: an interrupted run made consistent.

A writer that dies (killed, out of power) leaves ``.sync/operation.lock`` and
``.sync/active-run.json`` naming its dead pid; every later writer then stops with
``interrupted-run``. ``recover`` looks at what the dead run left and ends in a state where
``health().needsManualRecovery`` is false (unless a person's own uncommitted edits remain;
those are never discarded - ``adopt`` commits them). The cases:

1. **Nothing to recover** - no active run, no lock, last run not ``interrupted``, HEAD not
   an unjournaled change: nothing is written (``status: "nothing-to-recover"``).
2. **A held lock** - a live writer, or the earlier tool's lock under its own six-hour rule
   (:func:`dsh_memory.store.oplock.lock_held`) - or a running active run:
   ``operation-in-progress``, nothing changed.
3. **Unjournaled** - no run is active and HEAD is a finished payload commit no journal
   record names (the earlier tool's ``--apply-preview`` and ``clear`` never journal; see
   :mod:`dsh_memory.write.unjournaled`): the change is journaled ``applied`` (a rollback
   ``rolled_back``) with its commits, so ``rollback`` can undo it; litter is removed.
4. **The run's recorded apply commit landed** (the active-run record names it - every
   pipeline writer records both commits before its compare-and-swap - and HEAD's history
   holds it): the run is *finished* - the live index of the paths it changed follows HEAD,
   each such file whose work tree still holds the recovery point's version (the step the run
   did not get to) is rewritten from HEAD, a file holding anything else is someone's edit and
   is left alone, and the run is journaled with its own record (committed as written when the
   work tree holds it; else ``applied`` / ``rolled_back`` with ``error_code:
   "interrupted-run"``). Case ``kept-commits``.
5. **The run had finished** (its journal record says so, or it is the earlier host's
   never-removed record; only the lock or active-run record was left): the litter is
   removed.
6. **The apply commit landed by its subject** (no commits recorded; the newest payload
   commit is "DPSK memory sync applied: <run>"; only journal commits may follow it), the
   run's own journal commit did not: the finished commits are kept. Payload files whose
   work tree or index differs from
   HEAD are rewritten from HEAD (the apply commit was built on the recovery
   point, which already holds any earlier hand edits, so nothing is lost), and the run is
   journaled ``applied`` with ``error_code: "interrupted-run"`` - ``rollback`` can undo it.
   The watermark does not move, so its sessions are read again by the next sync.
7. **Nothing landed** (the newest payload commit is not the run's apply commit): the run
   never touched the work tree (it writes only after the CAS). Live index entries it may
   have updated just before the CAS are restored from HEAD where the work tree still
   equals HEAD. The run is journaled ``interrupted`` (if no record exists yet).

In 3-7 a ``recover`` run is journaled (operation ``recover``, status ``recovered``,
``changed_paths`` = the paths it rewrote) in one journal commit together with the dead
run's record - the commit pipeline's journal step (:func:`dsh_memory.write.pipeline.commit_journal`,
crash points ``before-journal`` / ``after-journal``) - then the active-run record and the
dead lock are removed. A recover that is itself interrupted is simply run again.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from dsh_common.errors import DshError, LockHeldError
from dsh_common.jsonio import dumps
from dsh_common.locks import acquire_lock, break_dead_lock
from dsh_memory.errors import (
    OperationInProgressError,
    RecoverFailedError,
    RecoverInvalidConfirmationError,
)
from dsh_memory.store import fsops, payload_state
from dsh_memory.store.oplock import (
    ACTIVE_RUN_FILE,
    LOCK_FILE,
    finished_record,
    held_lock_message,
    lock_owner,
    read_active_run,
    read_operation_lock,
)
from dsh_memory.store.root import (
    LAST_SYNC_FILE,
    PAYLOAD_PATHS,
    RECORD_DIRS,
    Layout,
    is_payload_path,
)
from dsh_memory.write import journal
from dsh_memory.write.pipeline import commit_journal, done_status, interrupted_commits
from dsh_memory.write.transactions import Blob, GitTransactions
from dsh_memory.write.unjournaled import head_landing, landing_record

RECOVER_CONFIRMATION = "RECOVER_MEMORY"


def _subject(tx: GitTransactions, commit: str) -> str:
    return tx.git.run(["log", "-1", "--format=%s", commit]).text.strip()


def _last_payload_write(tx: GitTransactions) -> str:
    """The newest commit that changed the payload (journal commits after it do not count:
    a writer refused with interrupted-run journals the dead run on top of its apply)."""
    return tx.git.run(["rev-list", "-1", "HEAD", "--", *PAYLOAD_PATHS]).text.strip()


def _landed_apply(tx: GitTransactions, active: dict[str, Any] | None, run_id: str) -> str | None:
    """The dead run's apply commit when it is the newest payload write, else None.

    A sync, migrate, edit or preview names its run in the subject; a clear or rollback
    does not, but every writer of ours records its apply commit in the active run before
    the compare-and-swap.
    """
    last_write = _last_payload_write(tx)
    if _subject(tx, last_write) == f"DPSK memory sync applied: {run_id}":
        return last_write
    recorded = (active or {}).get("apply_commit")
    if isinstance(recorded, str) and recorded == last_write:
        return last_write
    return None


def _litter(root: Path) -> dict[str, Any] | None:
    """The active-run record left on disk (read_active_run found it finished), if any."""
    with contextlib.suppress(OSError, ValueError):
        data = journal.read_json_file(root / ACTIVE_RUN_FILE)
        return data if isinstance(data, dict) else None
    return None


def _index_differs(tx: GitTransactions) -> list[str]:
    result = tx.git.run(["diff", "--cached", "--name-only", "-z", "HEAD", "--", *PAYLOAD_PATHS])
    return sorted(p.decode("utf-8", "surrogateescape") for p in result.stdout.split(b"\0") if p)


def _restore_from_head(tx: GitTransactions, head: str, paths: list[str], *, worktree: bool) -> None:
    """Index (and with ``worktree`` the files) of ``paths`` back to HEAD's content.

    The index goes through the transactions' filter-free live-index update.
    """
    if not paths:
        return
    tx.sync_live_index(head, paths)
    if worktree:
        # Ask per top-level folder: thousands of paths never go on one command line.
        in_head = tx.tree_files(head, sorted({p.split("/", 1)[0] for p in paths}))
        wanted: dict[str, Blob | None] = dict.fromkeys(paths)
        wanted.update({p: in_head[p] for p in paths if p in in_head})
        contents = tx.blob_contents(b.oid for b in wanted.values() if b is not None)
        tx.materialize(wanted, contents)


def _worktree_equals_head(tx: GitTransactions, head: str, path: str) -> bool:
    files = tx.tree_files(head, [path])
    live = tx.root / path
    if path not in files:
        return not live.exists()
    if not live.is_file() or live.is_symlink():
        return False
    oid = tx.git.run(["hash-object", "--no-filters", "--", path]).text.strip()
    return oid == files[path].oid


def _interrupted_id(root: Path, active: dict[str, Any] | None) -> str | None:
    if active is not None:
        run_id = active.get("run_id")
        return str(run_id) if journal.is_valid_run_id(run_id) else None
    try:
        last = journal.read_last_run(root)
    except (OSError, ValueError):
        return None
    if last is not None and last.get("status") == "interrupted":
        return str(last.get("run_id"))
    return None


def recover(layout: Layout, confirmation: object) -> dict[str, Any]:
    if confirmation != RECOVER_CONFIRMATION:
        raise RecoverInvalidConfirmationError("recover needs the exact confirmation")
    root = layout.root
    tx = GitTransactions(layout)
    lock = read_operation_lock(root)
    if lock is not None and lock["active"]:
        raise OperationInProgressError(held_lock_message(root, lock))
    active = read_active_run(root)
    if active and active.get("state") == "running":
        raise OperationInProgressError("a live writer holds the memory operation lock")
    litter = (root / ACTIVE_RUN_FILE).exists()
    run_id = _interrupted_id(root, active)
    unjournaled = active is None and head_landing(tx) is not None
    if lock is None and active is None and run_id is None and not litter and not unjournaled:
        return {
            "status": "nothing-to-recover",
            "interruptedRunId": None,
            "case": "none",
            "restoredPaths": [],
        }
    try:
        if lock is not None:
            break_dead_lock(root / LOCK_FILE)
        held = acquire_lock(
            root / LOCK_FILE, owner_data=lock_owner("recover", "recover", journal.utc_iso())
        )
    except LockHeldError:
        raise OperationInProgressError("another writer took the lock") from None
    try:
        return _recover_locked(tx, active, run_id)
    except DshError as exc:
        if isinstance(exc, OperationInProgressError):
            raise
        raise RecoverFailedError(f"recovery failed: {exc.message}") from exc
    finally:
        held.release()


def _recover_locked(
    tx: GitTransactions, active: dict[str, Any] | None, run_id: str | None
) -> dict[str, Any]:
    root = tx.root
    head = tx.require_head()
    clock = journal.RunClock()
    extra: dict[str, bytes] = {}
    restored: list[str] = []
    record = None
    if run_id is not None:
        with contextlib.suppress(OSError, ValueError):
            record = journal.read_run(root, run_id)
    landing = head_landing(tx) if active is None else None
    landed = _landed_commits(tx, active)
    journaled: str | None = None
    if landing is not None:
        case = "unjournaled"
        made = landing_record(tx, landing, _litter(root))
        journaled = str(made["run_id"])
        extra[journal.run_record_path(journaled)] = (dumps(made) + "\n").encode("utf-8")
    elif run_id is not None and landed is not None:
        case = "kept-commits"
        restored = _finish_landed_run(tx, head, *landed)
        dead = _finished_run_record(tx, active or {}, run_id, record, *landed, clock)
        if dead is not None:
            extra[journal.run_record_path(run_id)] = (dumps(dead) + "\n").encode("utf-8")
    elif run_id is None or finished_record(root, {"run_id": run_id}) is not None:
        case = "finished"
    elif (last_write := _landed_apply(tx, active, run_id)) is not None:
        case = "kept-commits"
        parent = tx.git.run(["rev-parse", f"{last_write}^"]).text.strip()
        before, after = tx.tree_files(parent), tx.tree_files(last_write)
        changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
        restored = sorted(set(tx.payload_dirty_paths()) | set(_index_differs(tx)))
        _restore_from_head(tx, head, restored, worktree=True)
        operation = str((active or {}).get("operation") or "sync")
        dead = journal.make_record(
            run_id=run_id,
            operation=operation,
            status="rolled_back" if operation == "rollback" else "applied",
            started_at=str((active or {}).get("started_at") or clock.started_at),
            changed_paths=changed,
            recovery_commit=parent,
            apply_commit=last_write,
            error_code="interrupted-run",
            phase="finalizing",
        )
        extra[journal.run_record_path(run_id)] = (dumps(dead) + "\n").encode("utf-8")
    else:
        case = "nothing-landed"
        restored = [p for p in _index_differs(tx) if _worktree_equals_head(tx, head, p)]
        _restore_from_head(tx, head, restored, worktree=False)
        if record is None:
            dead = journal.make_record(
                run_id=run_id,
                operation=str((active or {}).get("operation") or "unknown"),
                status="interrupted",
                started_at=str((active or {}).get("started_at") or clock.started_at),
                phase=str((active or {}).get("phase") or "staging"),
                error_code="interrupted-run",
            )
            extra[journal.run_record_path(run_id)] = (dumps(dead) + "\n").encode("utf-8")
    recover_id = journal.new_run_id(root, "recover")
    entry = journal.make_record(
        run_id=recover_id,
        operation="recover",
        status="recovered",
        started_at=clock.started_at,
        changed_paths=restored,
        recovery_commit=head,
        duration_ms=clock.duration_ms(),
    )
    commit = commit_journal(tx, entry, extra_files=extra)
    if commit is None:
        raise RecoverFailedError(
            "the recover journal commit could not be made (is the disk full?); nothing else"
            " is lost: free the cause and run recover again"
        )
    with contextlib.suppress(FileNotFoundError):
        (root / ACTIVE_RUN_FILE).unlink()
    result = {
        "status": "recovered",
        "case": case,
        "interruptedRunId": run_id,
        "restoredPaths": restored,
        "recoverRunId": recover_id,
        "journalCommit": commit,
    }
    if journaled is not None:
        result["journaledRunId"] = journaled
    return result


def _landed_commits(tx: GitTransactions, active: dict[str, Any] | None) -> tuple[str, str] | None:
    """(recovery, apply) the dead run recorded before its CAS, when HEAD's history holds
    the apply commit; None when it recorded none or the CAS never happened."""
    if not active:
        return None
    recovery, applied = interrupted_commits(tx, active)
    if recovery is None or applied is None:
        return None
    return recovery, applied


def _finish_landed_run(tx: GitTransactions, head: str, recovery: str, applied: str) -> list[str]:
    """Finish a run whose apply commit HEAD holds; return the paths rewritten from HEAD.

    A path the run changed (recovery -> apply) whose work tree still holds the recovery
    point's version is rewritten from HEAD - the work-tree step the run did not get to.
    Anything else there (HEAD's version already, or a person's edit since) stays. The live
    index follows HEAD for the run's paths and for every payload path whose file already
    equals HEAD (the dirty files its checkpoint captured).
    """
    # .last-sync is this machine's own watermark: a pull's apply commit may hold another
    # machine's, which the pull itself never writes to the work tree - nor does recover.
    changed = sorted(p for p in tx.tree_diff(recovery, applied) if p != LAST_SYNC_FILE)
    staged = _index_differs(tx)
    paths = sorted(set(changed) | set(staged))
    if not paths:
        return []
    prefixes = sorted({p.split("/", 1)[0] for p in paths})
    before = tx.tree_files(recovery, prefixes)
    now = tx.tree_files(head, prefixes)
    live = payload_state.live_blob_ids(tx.git, tx.root, paths)

    def oid(tree: dict[str, Blob], path: str) -> str | None:
        return tree[path].oid if path in tree else None

    stale = [p for p in changed if live[p] == oid(before, p) and live[p] != oid(now, p)]
    follow = set(changed) | {p for p in staged if live[p] == oid(now, p)}
    tx.sync_live_index(head, follow)
    tx.materialize_streamed({p: now.get(p) for p in stale})
    for name in RECORD_DIRS:
        fsops.prune_empty_directories(tx.root, name)
    return stale


def _finished_run_record(  # noqa: PLR0917 - one private call site
    tx: GitTransactions,
    active: dict[str, Any],
    run_id: str,
    record: dict[str, Any] | None,
    recovery: str,
    applied: str,
    clock: journal.RunClock,
) -> dict[str, Any] | None:
    """The dead run's record for recover's journal commit, or None when HEAD holds it."""
    operation = str(active.get("operation") or (record or {}).get("operation") or "sync")
    if record is not None and record.get("status") == done_status(operation):
        # The run journaled itself (its commit may have failed): keep its own record.
        return None if journal.is_tracked(tx, run_id) else record
    return journal.make_record(
        run_id=run_id,
        operation=operation,
        status=done_status(operation),
        started_at=str(active.get("started_at") or clock.started_at),
        changed_paths=sorted(p for p in tx.tree_diff(recovery, applied) if is_payload_path(p)),
        recovery_commit=recovery,
        apply_commit=applied,
        error_code="interrupted-run",
        phase="finalizing",
    )
