"""Read-only answers: status, health, runs and legacyRecords.

All of them are metadata only - counts, paths, ids, commit ids, run records - never a
memory document, diff, transcript or credential.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dsh_common.errors import DshError
from dsh_common.git import GitRunner
from dsh_memory.errors import MigrationFailedError, RunsInvalidRequestError
from dsh_memory.store.frontmatter import SCHEMA_VERSION
from dsh_memory.store.payload import metadata_summary, scan_payload, skipped_names
from dsh_memory.store.root import Layout, inspect_layout
from dsh_memory.write import journal
from dsh_memory.write.previews import pending_previews
from dsh_memory.write.transactions import GitTransactions

MAX_RUNS_LIMIT = 1000


def _last_run_summary(record: dict[str, Any] | None) -> dict[str, Any] | None:
    if record is None:
        return None
    changed = record.get("changed_path_count")
    if not isinstance(changed, int):
        paths = record.get("changed_paths")
        changed = len(paths) if isinstance(paths, list) else 0
    return {
        "runId": record.get("run_id"),
        "status": record.get("status"),
        "changedFileCount": changed,
        "applyCommit": record.get("apply_commit"),
    }


def status(layout: Layout) -> dict[str, Any]:
    """``memory.status()`` with the v0.2, v0.3 and v0.8.3 metadata fields."""
    tx = GitTransactions(layout)
    scan = scan_payload(layout.root)
    dirty = tx.payload_dirty_paths()
    try:
        last_run = journal.read_last_run(layout.root)
    except (OSError, ValueError):
        last_run = None
    previews = pending_previews(layout.root)
    answer = {
        "empty": not scan.data_files,
        "dataFileCount": len(scan.data_files),
        "targetDirty": bool(dirty),
        "recoverable": True,
        "schemaVersion": SCHEMA_VERSION,
        "legacyFileCount": len(scan.legacy),
        "pendingMigration": bool(scan.legacy),
        "lastRun": _last_run_summary(last_run),
        "pendingPreview": previews[0] if previews else None,
        **metadata_summary(scan),
    }
    return _with_remote(answer, tx)


def _with_remote(answer: dict[str, Any], tx: GitTransactions) -> dict[str, Any]:
    """``answer`` plus ``remote`` when the memory has one (absent otherwise, so a memory
    without a remote answers exactly as before)."""
    from dsh_memory.remote.remote_config import describe  # noqa: PLC0415

    try:
        remote = describe(tx)
    except DshError:
        remote = None
    if remote is not None:
        answer["remote"] = remote
    return answer


def health(root: Path) -> dict[str, Any]:
    """``memory.health()``: lock, active run, journal readability, recovery need."""
    # Here, not at the top: status (an agent's frequent call) needs none of the lock code.
    from dsh_memory.store.oplock import (  # noqa: PLC0415
        finished_record,
        public_lock,
        read_active_run,
        read_operation_lock,
    )

    git = GitRunner(root)
    try:
        git.run(["--version"])
        git_available = True
    except DshError:
        git_available = False
    layout = inspect_layout(root, git=git)
    tx = GitTransactions(layout)
    scan = scan_payload(root)
    payload_dirty = bool(tx.payload_dirty_paths())
    active = read_active_run(root)
    journal_readable = True
    interrupted: dict[str, Any] | None = None
    try:
        last_run = journal.read_last_run(root)
        for run_id in journal.journaled_run_ids(tx)[:1]:
            journal.read_run(root, run_id)
    except (OSError, ValueError):
        journal_readable = False
        last_run = None
    if last_run is not None and last_run.get("status") == "interrupted":
        interrupted = last_run
    if active is not None and active.get("state") == "interrupted":
        # The dead run itself, whatever last-run.json says (its journal record when the
        # next writer already wrote one, else the active-run record).
        recorded = None
        if journal.is_valid_run_id(active.get("run_id")):
            try:
                recorded = journal.read_run(root, str(active["run_id"]))
            except (OSError, ValueError):
                recorded = None
        interrupted = recorded if recorded is not None else active
    previews = pending_previews(root)
    lock = read_operation_lock(root)
    # A lock whose holder died, with no run left to say what it was doing, blocks every
    # writer until it is removed (or six hours pass): that is a recovery to do, not health.
    # ... unless the journal says that holder's run finished: writers take such a lock over.
    dead_lock = (
        lock is not None
        and not lock["active"]
        and finished_record(root, {"run_id": lock.get("runId")}) is None
    )
    head_ahead = head_ahead_of_journal(tx)
    # A writer killed while it held index.lock leaves it behind; git and every writer refuse
    # to touch the index until it is gone.
    index_lock = tx.git_dir() / "index.lock"
    index_locked = index_lock.exists()
    needs_recovery = (
        payload_dirty
        or (active is not None and active.get("state") == "interrupted")
        or interrupted is not None
        or not journal_readable
        or dead_lock
        or head_ahead
        or index_locked
    )
    return _with_remote(
        {
            "memoryRoot": str(root),
            "rootSafe": True,
            "gitAvailable": git_available,
            "dataFileCount": len(scan.data_files),
            "payloadDirty": payload_dirty,
            "operationLock": public_lock(lock),
            "activeRun": active,
            "interruptedRun": interrupted,
            "pendingPreview": previews[0] if previews else None,
            "pendingPreviewCount": len(previews),
            "journalReadable": journal_readable,
            "needsManualRecovery": needs_recovery,
            "headAheadOfJournal": head_ahead,
            "recoverySteps": [
                *_recovery_steps(tx, lock, active, payload_dirty, head_ahead),
                *(
                    [
                        f"{index_lock} exists: if no git process is running in the memory"
                        " repository, delete it"
                    ]
                    if index_locked
                    else []
                ),
            ],
        },
        tx,
    )


#: Subjects of the commits that change the payload; each is followed by a journal commit.
_PAYLOAD_COMMIT_SUBJECTS = (
    "DPSK memory sync applied:",
    "DPSK memory cleared",
    "DPSK memory rollback:",
    "DPSK memory recovery checkpoint",
    "DPSK memory pull merged:",
)


def head_ahead_of_journal(tx: GitTransactions) -> bool:
    """HEAD is a payload commit no journal commit followed: a writer died (or its journal
    commit failed) after moving HEAD, so the journal does not describe what HEAD holds."""
    try:
        subject = tx.git.run(
            ["log", "-1", "--no-show-signature", "--format=%s", "HEAD"], check=False
        ).text.strip()
    except DshError:
        return False
    return subject.startswith(_PAYLOAD_COMMIT_SUBJECTS)


def _recovery_steps(
    tx: GitTransactions,
    lock: dict[str, Any] | None,
    active: dict[str, Any] | None,
    payload_dirty: bool,
    head_ahead: bool,
) -> list[str]:
    """Exact steps for each recovery ``health()`` found, in the order to take them."""
    from dsh_memory.store.oplock import dead_lock_message, finished_record  # noqa: PLC0415
    from dsh_memory.write.unjournaled import head_landing  # noqa: PLC0415

    root = tx.root
    steps: list[str] = []
    if active is not None and active.get("state") == "interrupted":
        steps.append(
            f"run {active.get('run_id')!s} was interrupted (pid {active.get('pid')!s} is gone):"
            " inspect its commits with `dsh-memory runs`, then run `dsh-memory recover"
            " --confirmation RECOVER_MEMORY` (it keeps finished commits, journals the run and"
            " releases the dead lock)"
        )
    elif (
        lock is not None
        and not lock["active"]
        and not finished_record(root, {"run_id": lock.get("runId")})
    ):
        steps.append(dead_lock_message(root, lock))
    landing = head_landing(tx) if head_ahead and active is None else None
    if landing is not None:
        # No run is active: recover journals the change itself (the earlier tool's
        # --apply-preview and clear never journal), and then rollback can undo it.
        steps.append(
            f"HEAD holds a finished memory change ({landing.subject}) that no journal record"
            " names: `dsh-memory recover --confirmation RECOVER_MEMORY` journals it with its"
            " commits; `dsh-memory rollback --run-id <run> --confirmation ROLLBACK_MEMORY`"
            " can undo it then (`dsh-memory runs` names the run)"
        )
    elif head_ahead and active is not None:
        steps.append(
            "HEAD holds a memory change no journal record follows: once `dsh-memory recover"
            " --confirmation RECOVER_MEMORY` has journaled the run it can be undone with"
            " `dsh-memory rollback --run-id <run> --confirmation ROLLBACK_MEMORY`"
        )
    elif head_ahead:
        steps.append(
            f"HEAD holds a memory change no journal record follows and no run says what it"
            f" was: inspect it with `git -C {root} show --stat HEAD`"
        )
    if payload_dirty:
        steps.append(
            "the payload has uncommitted changes: `dsh-memory status` counts them;"
            " `dsh-memory adopt` validates and commits them as one journaled edit run"
        )
    return steps


def _optional_filter(value: object, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise RunsInvalidRequestError(f"{name} must be a non-empty string")
    return value


def list_runs(layout: Layout, limit: object, operation: object, run_status: object) -> Any:
    """``memory.runs()``: newest first; as in the earlier tool the limit applies first."""
    if limit is None:
        limit = 20
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_RUNS_LIMIT:
        raise RunsInvalidRequestError(f"limit must be an integer from 1 to {MAX_RUNS_LIMIT}")
    wanted_operation = _optional_filter(operation, "operation")
    wanted_status = _optional_filter(run_status, "status")
    tx = GitTransactions(layout)
    run_ids = journal.journaled_run_ids(tx)
    runs = _matching_runs(layout, run_ids[:limit], wanted_operation, wanted_status)
    # total: every journaled run the filters match, so a caller sees what the limit hid
    # (without filters the ids alone say it; with filters the older records are read too).
    if wanted_operation is None and wanted_status is None:
        total = len(runs) + len(run_ids[limit:])
    else:
        older = _matching_runs(layout, run_ids[limit:], wanted_operation, wanted_status)
        total = len(runs) + len(older)
    return {"runs": runs, "total": total, "truncated": total > len(runs)}


def _matching_runs(
    layout: Layout, run_ids: list[str], operation: str | None, run_status: str | None
) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = []
    for run_id in run_ids:
        try:
            record = journal.read_run(layout.root, run_id)
        except (OSError, ValueError):
            continue
        if record is None:
            continue
        if operation is not None and record.get("operation") != operation:
            continue
        if run_status is not None and record.get("status") != run_status:
            continue
        runs.append(record)
    return runs


def legacy_records(layout: Layout) -> dict[str, Any]:
    """``memory.legacyRecords()``: metadata of records without front matter, by path."""
    try:
        scan = scan_payload(layout.root)
    except OSError as exc:
        raise MigrationFailedError.from_os_error(exc, f"legacy scan failed: {exc}") from exc
    legacy = scan.legacy
    result: dict[str, Any] = {
        "count": len(legacy),
        "pendingMigration": bool(legacy),
        "records": [record.describe() for record in legacy],
    }
    skipped = skipped_names(scan)
    if skipped:
        result["skippedPaths"] = skipped  # names that are not UTF-8, escaped
    return result
