"""The payload writers clear and legacy migration, and the run steps every writer shares.

Each writer (these two, :mod:`dsh_memory.rollback`, and the sync-side writers) runs under
the operation lock with the active-run phases staging -> validating -> applying ->
finalizing, and commits in the same order:

1. the recovery point - the current HEAD when the payload is clean (no redundant commit),
   else a checkpoint commit holding the live dirty payload;
2. the apply commit, whose parent is the recovery point; both commits are recorded in the
   active run (:func:`_apply`) and only then moved into HEAD with one
   ``update-ref HEAD <new> <old>`` compare-and-swap;
3. the live index for the changed paths, then the work tree, through descriptor-anchored
   helpers (:func:`_finalize`);
4. the journal: its files first, then a commit touching ``.sync`` only.

Writers refuse a repository without the memory marker
(:func:`dsh_memory.root.require_memory_repository`). The functions raise
:mod:`dsh_memory.errors`; the service turns them into envelopes.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from dsh_common.errors import DshError, GitError
from dsh_memory import fsops, journal
from dsh_memory.crashpoints import crash_point
from dsh_memory.errors import (
    CheckpointFailedError,
    ClearFailedError,
    CommitFailedError,
    MigrationFailedError,
    MigrationInvalidRequestError,
    UnsafeLayoutError,
)
from dsh_memory.held_folders import files_left, hold_record_folders
from dsh_memory.oplock import OperationRun, operation_lock
from dsh_memory.payload import scan_payload, skipped_names
from dsh_memory.root import (
    RECORD_DIRS,
    SUMMARY_FILE,
    Layout,
    escape_name,
    is_utf8_name,
    live_payload_files,
    require_memory_repository,
)
from dsh_memory.transactions import FILE_MODE, Blob, GitTransactions

_OID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
CLEAR_CONFIRMATION = "DELETE_MEMORY"
ROLLBACK_CONFIRMATION = "ROLLBACK_MEMORY"
EMPTY_BLOB = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"


def _journal_interrupted(tx: GitTransactions) -> Any:
    """Callback for the lock: record a dead process's run as ``interrupted`` (once).

    The writer recorded its recovery and apply commits in the active run before moving
    HEAD; when the apply commit did reach HEAD's history the record keeps both, so the run
    stays visible as the change it was and ``rollback`` can still undo it.
    """

    def record(active: dict[str, Any]) -> None:
        run_id = active.get("run_id")
        if not journal.is_valid_run_id(run_id):
            return
        try:
            existing = journal.read_run(tx.root, str(run_id))
        except (OSError, ValueError):
            return  # an unreadable record is reported by health(), never overwritten
        if existing is not None and existing.get("status") == "applied":
            # The run finished but its journal commit failed (a full disk): the record is
            # in the work tree only. Commit it as written instead of calling it interrupted.
            tracked = tx.git.run(
                ["cat-file", "-e", f"HEAD:{journal.run_record_path(str(run_id))}"], check=False
            )
            if tracked.returncode != 0:
                with contextlib.suppress(DshError, OSError):
                    journal.journal_run(tx, existing)
            return
        if existing is not None and existing.get("status") != "running":
            return  # never overwrite a record that already says how the run ended
        recovery, applied = _interrupted_commits(tx, active)
        changed: list[str] = []
        if recovery is not None and applied is not None:
            with contextlib.suppress(DshError, UnicodeError):
                before, after = tx.tree_files(recovery), tx.tree_files(applied)
                changed = sorted(p for p in set(before) | set(after)
                                 if before.get(p) != after.get(p))  # fmt: skip
        entry = journal.make_record(
            run_id=str(run_id),
            operation=str(active.get("operation") or "unknown"),
            status="interrupted",
            started_at=str(active.get("started_at") or journal.utc_iso()),
            phase=str(active.get("phase") or "staging"),
            changed_paths=changed,
            recovery_commit=recovery,
            apply_commit=applied,
            error_code=str(active.get("error_code") or "interrupted-run"),
        )
        try:
            journal.journal_run(tx, entry)
        except (DshError, OSError):
            pass  # the interruption is still reported through health()

    return record


def _interrupted_commits(
    tx: GitTransactions, active: dict[str, Any]
) -> tuple[str | None, str | None]:
    """(recovery commit, apply commit if HEAD's history holds it) of an interrupted run."""
    recovery, apply = active.get("recovery_commit"), active.get("apply_commit")
    if not (isinstance(recovery, str) and _OID.fullmatch(recovery)):
        return None, None
    if not (isinstance(apply, str) and _OID.fullmatch(apply)):
        return recovery, None
    reached = tx.git.run(["merge-base", "--is-ancestor", apply, "HEAD"], check=False)
    return recovery, apply if reached.returncode == 0 else None


def _journal_failure(
    tx: GitTransactions, run: OperationRun, clock: journal.RunClock, exc: DshError
) -> None:
    """Best effort: a failed run leaves a ``failed`` record when a commit is possible."""
    entry = journal.make_record(
        run_id=run.run_id,
        operation=run.operation,
        status="failed",
        started_at=clock.started_at,
        phase=run.phase,
        error_code=exc.code,
        duration_ms=clock.duration_ms(),
    )
    try:
        journal.journal_run(tx, entry)
    except (DshError, OSError):
        pass


def _finalize(
    tx: GitTransactions,
    run: OperationRun,
    clock: journal.RunClock,
    entry: dict[str, Any],
    update_work_tree: Callable[[], None],
    *,
    touched: Iterable[str],
) -> str | None:
    """Sync the live index and the work tree, then journal the run; return the journal
    commit, or None when the journal commit could not be made.

    HEAD already holds the apply commit here, so the run is journaled as ``applied`` even
    when the index or work-tree step fails (a swapped symlink, a full disk): the record then
    carries the error code and the phase, the payload shows as dirty in ``health()``, and
    the error is raised after the journal commit. If the journal commit itself fails the
    change is still applied - the caller is told so (``journaled: false``), never
    ``commit-failed`` - and the active-run record (which names both commits) is left
    behind so ``health()`` and the next writer see the run and it stays roll-back-able.
    """
    run.set_phase("finalizing")
    failure: BaseException | None = None
    try:
        tx.sync_live_index(str(entry["apply_commit"]), touched)
        crash_point("after-index")
        update_work_tree()
    except (DshError, OSError) as exc:
        failure = exc
        entry["error_code"] = exc.code if isinstance(exc, DshError) else "finalize-failed"
        entry["phase"] = "finalizing"
    else:
        run.set_phase("complete")
    crash_point("before-journal")
    entry["duration_ms"] = clock.duration_ms()
    try:
        journal_commit: str | None = journal.journal_run(tx, entry)
    except (DshError, OSError):
        journal_commit = None
        with contextlib.suppress(DshError, OSError):
            run.keep_record("journal-failed")
    if failure is not None:
        raise failure
    return journal_commit


def _apply(
    tx: GitTransactions,
    run: OperationRun,
    *,
    head: str,
    recovery: str,
    dirty: Iterable[str],
    changes: dict[str, Blob | None],
    message: str,
) -> str:
    """Build the apply commit on ``recovery`` and move HEAD to it (CAS from ``head``).

    Both commits are written into the active-run record before the CAS (see
    :meth:`OperationRun.record_commits`).
    """
    run.set_phase("applying")
    try:
        tree = tx.build_tree(recovery, changes)
        commit = tx.commit_tree(tree, [recovery], message)
    except (GitError, OSError) as exc:
        raise CommitFailedError(f"the commit could not be built: {exc}") from exc
    try:
        run.record_commits(recovery, commit)
    except OSError as exc:
        raise CommitFailedError(f"the run's commits could not be recorded: {exc}") from exc
    tx.move_head(commit, head)
    return commit


# -- clear ---------------------------------------------------------------------------------


def clear(layout: Layout, confirmation: object) -> dict[str, Any]:
    if confirmation != CLEAR_CONFIRMATION:
        raise ClearFailedError("clear needs the exact confirmation DELETE_MEMORY")
    require_memory_repository(layout)
    tx = GitTransactions(layout)
    head = tx.require_head()
    head_files = {p: b for p, b in tx.tree_files(head).items() if is_utf8_name(p)}
    # Held before the first listing: see held_folders for the rename race this closes.
    with hold_record_folders(layout.root, head_files) as held:
        return _clear_holding(layout, tx, head, head_files, held)


def _clear_holding(
    layout: Layout,
    tx: GitTransactions,
    head: str,
    head_files: dict[str, Blob],
    held: dict[str, int],
) -> dict[str, Any]:
    root = layout.root
    every_live = live_payload_files(root)
    # A name that is not UTF-8 cannot be journaled or shown as JSON: reported, left alone.
    skipped = sorted(escape_name(p) for p in every_live if not is_utf8_name(p))
    live = [p for p in every_live if is_utf8_name(p)]
    if _empty(root, live, head_files) and not tx.payload_dirty_paths():
        return _with_skipped({"alreadyEmpty": True, "clearedFileCount": 0,
                              "recoveryCommit": None, "clearCommit": None}, skipped)  # fmt: skip
    run_id = journal.new_run_id(root, "clear")
    clock = journal.RunClock()
    with operation_lock(root, "clear", run_id, on_interrupted=_journal_interrupted(tx)) as run:
        try:
            # Live files HEAD does not track and status does not report are ignored by a
            # .gitignore; clear deletes them, so the checkpoint must hold them as well.
            dirty_now = [p for p in tx.payload_dirty_paths() if is_utf8_name(p)]
            untracked = set(live) - set(head_files) - set(dirty_now)
            recovery, dirty = tx.recovery_point(
                head, "DPSK memory recovery checkpoint", also=untracked, dirty=dirty_now
            )
            _unchanged_since(root, every_live)
            run.set_phase("validating")
            recovery_files = {p: b for p, b in tx.tree_files(recovery).items() if is_utf8_name(p)}
            cleared = [
                p for p, blob in recovery_files.items()
                if p != SUMMARY_FILE or blob.oid != EMPTY_BLOB
            ]  # fmt: skip
            changes: dict[str, Blob | None] = {p: None for p in recovery_files if p != SUMMARY_FILE}
            changes[SUMMARY_FILE] = Blob(FILE_MODE, _empty_blob(tx))
            commit = _apply(tx, run, head=head, recovery=recovery, dirty=dirty,
                            changes=changes, message="DPSK memory cleared")  # fmt: skip
        except (CheckpointFailedError, CommitFailedError) as exc:
            _journal_failure(tx, run, clock, exc)
            raise
        except GitError as exc:
            raise ClearFailedError(f"clear failed: {exc}") from exc
        entry = journal.make_record(
            run_id=run_id, operation="clear", status="applied", started_at=clock.started_at,
            changed_paths=sorted(changes), recovery_commit=recovery, apply_commit=commit,
        )  # fmt: skip

        def remove_payload() -> None:
            # Every live payload file goes, tracked or not; summary.md becomes a new empty
            # file (a rename over the old entry: a hard link elsewhere keeps its content).
            vanished = fsops.remove_files(root, [p for p in live if p != SUMMARY_FILE])
            if vanished:
                # Listed a moment ago and gone now: a folder was renamed away (and maybe
                # back). Reporting success would leave the records wherever they went.
                raise UnsafeLayoutError(f"{vanished[0]} vanished during clear: the layout changed")
            # Tracked files already deleted in the work tree: nothing to do if still absent.
            fsops.remove_files(root, sorted(set(changes) - set(live) - {SUMMARY_FILE}))
            fsops.replace_file(root, SUMMARY_FILE, b"", mode=0o600)
            for name in RECORD_DIRS:
                fsops.prune_empty_directories(root, name)
            left = [p for p in live_payload_files(root) if p != SUMMARY_FILE and is_utf8_name(p)]
            if left:
                raise UnsafeLayoutError(
                    f"{len(left)} payload file(s) appeared during clear (e.g. {left[0]})"
                )
            # The paths may all have been listed while a folder was renamed away: the held
            # folders themselves must be empty, wherever they are now.
            stayed = files_left(held)
            if stayed:
                raise UnsafeLayoutError(
                    f"{len(stayed)} file(s) stayed in a record folder that was moved during"
                    f" clear (e.g. {stayed[0]}): the layout changed"
                )

        journal_commit = _finalize(tx, run, clock, entry, remove_payload,
                                   touched=set(dirty) | set(changes))  # fmt: skip
    result: dict[str, Any] = {"alreadyEmpty": False, "clearedFileCount": len(cleared),
                              "recoveryCommit": recovery, "clearCommit": commit}  # fmt: skip
    if journal_commit is None:
        result["journaled"] = False
    return _with_skipped(result, skipped)


def _with_skipped(result: dict[str, Any], skipped: list[str]) -> dict[str, Any]:
    if skipped:
        result["skippedPaths"] = skipped
    return result


def _unchanged_since(root: Path, live: list[str]) -> None:
    """The payload's file list must be what the recovery point was taken from.

    A folder renamed away or swapped for a symlink while the checkpoint was read would
    otherwise be recorded as deleted files; the lock keeps cooperating writers out, so any
    change here is a race to refuse (``unsafe-layout``), not a state to commit.
    """
    if live_payload_files(root) != live:
        raise UnsafeLayoutError("the payload changed while its recovery point was taken")


def _empty_blob(tx: GitTransactions) -> str:
    return tx.write_blobs([b""])[0]


def _empty(root: Any, live: list[str], head_files: dict[str, Blob]) -> bool:
    live_data = [p for p in live if p != SUMMARY_FILE or (root / p).stat().st_size > 0]
    head_data = [p for p, b in head_files.items() if p != SUMMARY_FILE or b.oid != EMPTY_BLOB]
    return not live_data and not head_data


# -- legacy migration ----------------------------------------------------------------------


def migrate_legacy(layout: Layout, dry_run: object) -> dict[str, Any]:
    if not isinstance(dry_run, bool):
        raise MigrationInvalidRequestError("dryRun is required and must be a boolean")
    root = layout.root
    try:
        scan = scan_payload(root)
        legacy = scan.legacy
    except OSError as exc:
        raise MigrationFailedError.from_os_error(exc, f"legacy scan failed: {exc}") from exc
    paths = [record.path for record in legacy]
    result: dict[str, Any] = {
        "dryRun": dry_run, "status": "pending" if legacy else "no_change",
        "legacyCount": len(legacy), "migratedCount": 0, "changedPaths": paths,
        "recoveryCommit": None, "applyCommit": None, "journalCommit": None,
    }  # fmt: skip
    _with_skipped(result, skipped_names(scan))
    if dry_run:
        return result
    require_memory_repository(layout)
    tx = GitTransactions(layout)
    head = tx.require_head()
    run_id = journal.new_run_id(root, "migrate")
    clock = journal.RunClock()
    with operation_lock(root, "migrate", run_id, on_interrupted=_journal_interrupted(tx)) as run:
        if not legacy:
            entry = journal.make_record(run_id=run_id, operation="migrate", status="no_change",
                                        started_at=clock.started_at,
                                        duration_ms=clock.duration_ms())  # fmt: skip
            result["journalCommit"] = journal.journal_run(tx, entry)
            return result
        try:
            live = live_payload_files(root)
            recovery, dirty = tx.recovery_point(head, f"DPSK memory recovery checkpoint: {run_id}")
            _unchanged_since(root, live)
            run.set_phase("validating")
            contents = [(r.front_matter + r.text).encode("utf-8") for r in legacy]
            oids = tx.write_blobs(contents)
            changes: dict[str, Blob | None] = {
                r.path: Blob(FILE_MODE, oid) for r, oid in zip(legacy, oids, strict=True)
            }
            commit = _apply(tx, run, head=head, recovery=recovery, dirty=dirty, changes=changes,
                            message=f"DPSK memory sync applied: {run_id}")  # fmt: skip
        except (CheckpointFailedError, CommitFailedError) as exc:
            _journal_failure(tx, run, clock, exc)
            raise
        except GitError as exc:
            raise CommitFailedError(f"migration commit failed: {exc}") from exc
        except OSError as exc:
            raise MigrationFailedError.from_os_error(exc, f"migration failed: {exc}") from exc
        entry = journal.make_record(
            run_id=run_id, operation="migrate", status="applied", started_at=clock.started_at,
            changed_paths=paths, recovery_commit=recovery, apply_commit=commit,
        )  # fmt: skip

        def write_records() -> None:
            fsops.replace_files(root, [
                (record.path, data, fsops.file_mode(root, record.path) or 0o644)
                for record, data in zip(legacy, contents, strict=True)
            ])  # fmt: skip

        try:
            journal_commit = _finalize(tx, run, clock, entry, write_records,
                                       touched=set(dirty) | set(changes))  # fmt: skip
        except OSError as exc:
            raise MigrationFailedError.from_os_error(exc, f"migration failed: {exc}") from exc
        result.update(status="applied", migratedCount=len(legacy), recoveryCommit=recovery,
                      applyCommit=commit, journalCommit=journal_commit)  # fmt: skip
        if journal_commit is None:
            result["journaled"] = False
    return result
