"""The payload writers clear and legacy migration.

Both run as writers of :mod:`dsh_memory.write.pipeline` (which owns the commit order, the crash
points and what a failure leaves behind): the operation lock with the active-run phases
staging -> validating -> applying -> finalizing, a recovery point (a checkpoint commit of
the dirty payload - for clear including Git-ignored payload files it is about to delete),
the apply commit moved into HEAD by a compare-and-swap, the live index, the work tree, the
journal. What is theirs: clear's confirmation, its empty-repository answer and its work-tree
step (every live payload file removed, with the layout-race checks of
:mod:`dsh_memory.store.held_folders`); migration's scan and its records written back with their
own modes.

Writers refuse a repository without the memory marker
(:func:`dsh_memory.store.root.require_memory_repository`). The functions raise
:mod:`dsh_memory.errors`; the service turns them into envelopes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dsh_common.errors import GitError
from dsh_memory.errors import (
    ClearFailedError,
    FinalizeFailedError,
    MigrationFailedError,
    MigrationInvalidRequestError,
    UnsafeLayoutError,
)
from dsh_memory.store import fsops
from dsh_memory.store.held_folders import files_left, hold_record_folders
from dsh_memory.store.payload import scan_payload, skipped_names
from dsh_memory.store.root import (
    RECORD_DIRS,
    SUMMARY_FILE,
    Layout,
    escape_name,
    is_utf8_name,
    live_payload_files,
    require_memory_repository,
)
from dsh_memory.write import journal
from dsh_memory.write.pipeline import Proposal, commit_run, writer_run
from dsh_memory.write.transactions import FILE_MODE, Blob, GitTransactions, TreeChanges

CLEAR_CONFIRMATION = "DELETE_MEMORY"
ROLLBACK_CONFIRMATION = "ROLLBACK_MEMORY"
EMPTY_BLOB = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"


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
    every_live = _listed(root)
    # A name that is not UTF-8 cannot be journaled or shown as JSON: reported, left alone.
    skipped = sorted(escape_name(p) for p in every_live if not is_utf8_name(p))
    live = [p for p in every_live if is_utf8_name(p)]
    if _empty(root, live, head_files) and not tx.payload_dirty_paths():
        return _with_skipped(
            {
                "alreadyEmpty": True,
                "clearedFileCount": 0,
                "recoveryCommit": None,
                "clearCommit": None,
            },
            skipped,
        )
    run_id = journal.new_run_id(root, "clear")
    clock = journal.RunClock()
    cleared: list[str] = []
    with writer_run(tx, "clear", run_id) as run:
        run.set_phase("validating")
        # Live files HEAD does not track and status does not report are ignored by a
        # .gitignore; clear deletes them, so the checkpoint must hold them as well.
        dirty_now = [p for p in tx.payload_dirty_paths() if is_utf8_name(p)]
        untracked = set(live) - set(head_files) - set(dirty_now)

        def propose(recovery: str) -> Proposal:
            _unchanged_since(root, every_live)
            files = {p: b for p, b in tx.tree_files(recovery).items() if is_utf8_name(p)}
            cleared.extend(
                p for p, blob in files.items() if p != SUMMARY_FILE or blob.oid != EMPTY_BLOB
            )
            changes: dict[str, Blob | None] = {p: None for p in files if p != SUMMARY_FILE}
            changes[SUMMARY_FILE] = Blob(FILE_MODE, _empty_blob(tx))
            return Proposal(changes=changes, message="DPSK memory cleared")

        def remove_payload(changes: TreeChanges) -> None:
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
            left = [p for p in _listed(root) if p != SUMMARY_FILE and is_utf8_name(p)]
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

        try:
            outcome = commit_run(
                tx,
                run,
                clock,
                head=head,
                propose=propose,
                checkpoint_message="DPSK memory recovery checkpoint",
                also=untracked,
                dirty=dirty_now,
                worktree=remove_payload,
            )
        except GitError as exc:
            raise ClearFailedError(f"clear failed: {exc}") from exc
    result: dict[str, Any] = {
        "alreadyEmpty": False,
        "clearedFileCount": len(cleared),
        "recoveryCommit": outcome.recovery_commit,
        "clearCommit": outcome.apply_commit,
    }
    if not outcome.journaled:
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
    if _listed(root) != live:
        raise UnsafeLayoutError("the payload changed while its recovery point was taken")


def _listed(root: Path) -> list[str]:
    """The live payload files; a folder that vanishes while it is listed (renamed away
    under the lock) is a layout change to refuse, not a failed commit."""
    try:
        return live_payload_files(root)
    except OSError as exc:
        raise UnsafeLayoutError(f"the payload changed while it was listed: {exc}") from exc


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
        "dryRun": dry_run,
        "status": "pending" if legacy else "no_change",
        "legacyCount": len(legacy),
        "migratedCount": 0,
        "changedPaths": paths,
        "recoveryCommit": None,
        "applyCommit": None,
        "journalCommit": None,
    }
    _with_skipped(result, skipped_names(scan))
    if dry_run:
        return result
    require_memory_repository(layout)
    tx = GitTransactions(layout)
    head = tx.require_head()
    run_id = journal.new_run_id(root, "migrate")
    clock = journal.RunClock()
    with writer_run(tx, "migrate", run_id) as run:
        if not legacy:
            entry = journal.make_record(
                run_id=run_id,
                operation="migrate",
                status="no_change",
                started_at=clock.started_at,
                duration_ms=clock.duration_ms(),
            )
            result["journalCommit"] = journal.journal_run(tx, entry)
            return result
        try:
            live = live_payload_files(root)
        except OSError as exc:
            raise MigrationFailedError.from_os_error(exc, f"migration failed: {exc}") from exc
        contents = [(r.front_matter + r.text).encode("utf-8") for r in legacy]

        def propose(_recovery: str) -> Proposal:
            _unchanged_since(root, live)
            oids = tx.write_blobs(contents)
            changes: dict[str, Blob | None] = {
                r.path: Blob(FILE_MODE, oid) for r, oid in zip(legacy, oids, strict=True)
            }
            return Proposal(
                changes=changes, message=f"DPSK memory sync applied: {run_id}", changed_paths=paths
            )

        def write_records(_changes: TreeChanges) -> None:
            # Each record keeps its own permission bits (the commit stores 100644 for all).
            fsops.replace_files(
                root,
                [
                    (record.path, data, fsops.file_mode(root, record.path) or 0o644)
                    for record, data in zip(legacy, contents, strict=True)
                ],
            )

        try:
            outcome = commit_run(tx, run, clock, head=head, propose=propose, worktree=write_records)
        except FinalizeFailedError as exc:
            if exc.errno is None:
                raise
            raise MigrationFailedError.from_os_error(exc, exc.message) from exc
        result.update(
            status="applied",
            migratedCount=len(legacy),
            recoveryCommit=outcome.recovery_commit,
            applyCommit=outcome.apply_commit,
            journalCommit=outcome.journal_commit,
        )
        if not outcome.journaled:
            result["journaled"] = False
    return result
