"""One writer at a time: ``.sync/operation.lock`` plus the active-run record.

The lock is the earlier tool's exact file: JSON ``{operation, pid, runId, startedAt}``
created exclusively with mode 0600. While a run holds it, ``.sync/active-run.json`` says
which phase it is in (written atomically). Both are removed when the run ends, whatever
the outcome. A process that dies mid-run leaves both behind: the next writer finds a lock
whose pid is gone plus an active run, journals that run as ``interrupted`` and stops with
``interrupted-run`` - the operator inspects ``health()`` and recovers explicitly. Only a
lock with no active run, whose owner is dead *and* older than six hours, is taken over.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from dsh_common.errors import DshError, LockHeldError
from dsh_common.jsonio import dumps
from dsh_common.locks import acquire_lock, break_dead_lock, pid_alive, read_lock_owner
from dsh_memory import fsops
from dsh_memory.errors import InterruptedRunError, OperationInProgressError, UnsafeLayoutError
from dsh_memory.journal import is_valid_run_id, read_json_file, read_run, utc_iso
from dsh_memory.root import RUNS_DIR

LOCK_FILE = ".sync/operation.lock"
ACTIVE_RUN_FILE = ".sync/active-run.json"
#: A dead owner's lock is only stale once it is this old (the earlier tool's DEFAULT_STALE_MS).
STALE_AFTER_SECONDS = 6 * 60 * 60
#: Journal statuses that mean a run ended. The earlier tool leaves ``active-run.json``
#: behind after a finished migrate, rollback or clear: such a record is stale litter, not
#: an interruption (``running``, ``pending`` and ``interrupted`` are not in this set).
FINISHED_STATUSES = frozenset(
    {"applied", "no_change", "failed", "rolled_back", "skipped-retry", "rejected", "deferred"}
)


def read_operation_lock(root: Path) -> dict[str, Any] | None:
    """The lock's owner data plus ``active`` (its pid still runs); None when unlocked."""
    owner = read_lock_owner(root / LOCK_FILE)
    if owner is None:
        return None
    pid = owner.get("pid")
    alive = isinstance(pid, int) and not isinstance(pid, bool) and pid_alive(pid)
    return {
        "operation": owner.get("operation"),
        "pid": pid,
        "runId": owner.get("runId"),
        "startedAt": owner.get("startedAt"),
        "active": alive,
    }


def finished_record(root: Path, active: dict[str, Any]) -> dict[str, Any] | None:
    """The journal record of ``active``'s run when it says the run finished, else None."""
    run_id = active.get("run_id")
    if not is_valid_run_id(run_id):
        return None
    try:
        record = read_run(root, str(run_id))
    except (OSError, ValueError):
        return None
    if record is not None and record.get("status") in FINISHED_STATUSES:
        return record
    return None


def read_active_run(root: Path) -> dict[str, Any] | None:
    """The active-run record plus ``state`` (running / interrupted by pid liveness).

    None when there is no record, and also when the record's own journal entry says the
    run finished (stale litter of the earlier tool: never an interruption).
    """
    try:
        data = read_json_file(root / ACTIVE_RUN_FILE)
    except (OSError, ValueError):
        return {"state": "interrupted", "status": "unreadable"}
    if not isinstance(data, dict):
        return None
    pid = data.get("pid")
    alive = isinstance(pid, int) and not isinstance(pid, bool) and pid_alive(pid)
    # A record left on purpose (``unjournaled``) is interrupted even while its pid runs.
    running = alive and data.get("status", "running") == "running"
    if _stale(root, data, alive=alive):
        return None
    return {**data, "state": "running" if running else "interrupted"}


def _stale(root: Path, data: dict[str, Any], *, alive: bool) -> bool:
    """A dead writer's ordinary record whose journal entry says the run finished.

    A record naming an ``apply_commit`` is a commit-pipeline writer's: HEAD may hold its
    change while the work tree or the journal does not (a full disk can even stop it from
    marking the record). Its run finished only when the journal record says ``complete``
    with no error *and* HEAD holds that record - a record written to the work tree whose
    commit failed is not enough.
    """
    if alive or data.get("status", "running") != "running":
        return False
    record = finished_record(root, data)
    if record is None:
        return False
    if "apply_commit" not in data:
        return True  # the earlier tool's litter after a finished run
    return (
        record.get("phase") == "complete"
        and record.get("error_code") is None
        and _journal_tracked(root, str(data.get("run_id")))
    )


def _journal_tracked(root: Path, run_id: str) -> bool:
    from dsh_common.git import GitRunner  # noqa: PLC0415 - only on a dead writer's record

    try:
        result = GitRunner(root).run(
            ["cat-file", "-e", f"HEAD:{RUNS_DIR}/{run_id}.json"], check=False
        )
    except DshError:
        return False
    return result.returncode == 0


def _discard_stale_active_run(root: Path) -> None:
    """Remove an active-run record whose run the journal says finished (dead owner)."""
    try:
        data = read_json_file(root / ACTIVE_RUN_FILE)
    except (OSError, ValueError):
        return
    if not isinstance(data, dict):
        return
    pid = data.get("pid")
    alive = isinstance(pid, int) and not isinstance(pid, bool) and pid_alive(pid)
    if _stale(root, data, alive=alive):
        with contextlib.suppress(FileNotFoundError):
            (root / ACTIVE_RUN_FILE).unlink()


def _lock_age_seconds(root: Path) -> float:
    try:
        return _dt.datetime.now().timestamp() - os.lstat(root / LOCK_FILE).st_mtime
    except OSError:
        return 0.0


def dead_lock_message(root: Path, lock: dict[str, Any]) -> str:
    """What to tell a writer (and ``health()``) about a lock whose holder has died."""
    return (
        f"the memory operation lock is held by a dead process: {lock.get('operation')!s} run"
        f" {lock.get('runId')!s} (pid {lock.get('pid')!s}) is gone and no run is active."
        f" Recovery: check `dsh-memory health`, then delete {root / LOCK_FILE}"
        f" (it is taken over automatically {STALE_AFTER_SECONDS // 3600} hours after the"
        " holder died)"
    )


class OperationRun:
    """A held operation lock; ``set_phase`` keeps the active-run record current.

    ``record_commits`` adds the run's recovery and apply commits to the record *before*
    HEAD moves: a writer killed after the CAS (or whose journal commit fails) then leaves
    an active run that names the change HEAD holds, so it can be journaled with its
    commits and rolled back. ``keep_record`` leaves the record behind when the lock is
    released, marked ``unjournaled`` - the next writer and ``health()`` treat it like a
    dead writer's run.
    """

    def __init__(self, root: Path, operation: str, run_id: str, started_at: str) -> None:
        self.root = root
        self.operation = operation
        self.run_id = run_id
        self.started_at = started_at
        self.phase = "staging"
        self.commits: dict[str, str] = {}
        self.kept_status: str | None = None

    def set_phase(self, phase: str) -> None:
        self.phase = phase
        self._write("running")

    def record_commits(self, recovery_commit: str, apply_commit: str) -> None:
        self.commits = {"recovery_commit": recovery_commit, "apply_commit": apply_commit}
        self._write("running")

    def keep_record(self, error_code: str, status: str = "unjournaled") -> None:
        """Leave the active-run record in place at release: ``unjournaled`` (the journal
        commit failed) or ``unfinished`` (the work tree could not follow HEAD)."""
        self.kept_status = status
        self.commits["error_code"] = error_code
        self._write(self.kept_status)

    def _write(self, status: str) -> None:
        record = {
            "run_id": self.run_id,
            "operation": self.operation,
            "status": status,
            "phase": self.phase,
            "pid": os.getpid(),
            "started_at": self.started_at,
            **self.commits,
        }
        fsops.replace_file(self.root, ACTIVE_RUN_FILE, dumps(record).encode("utf-8"), mode=0o600)


@contextlib.contextmanager
def operation_lock(
    root: Path,
    operation: str,
    run_id: str,
    *,
    on_interrupted: Callable[[dict[str, Any]], None] | None = None,
) -> Iterator[OperationRun]:
    """Hold the operation lock for one run; always release it and clear the active run.

    ``on_interrupted`` is called with the dead run's record (to journal it) before
    InterruptedRunError is raised.
    """
    started_at = utc_iso()
    owner = {"operation": operation, "pid": os.getpid(), "runId": run_id, "startedAt": started_at}
    try:
        (root / ".sync").mkdir(mode=0o700, exist_ok=True)
    except OSError as exc:
        raise UnsafeLayoutError(f".sync cannot be created: {exc}") from exc
    _discard_stale_active_run(root)
    try:
        lock = acquire_lock(root / LOCK_FILE, owner_data=owner)
    except LockHeldError:
        active = read_active_run(root)
        if active is not None and active.get("state") == "interrupted":
            if on_interrupted is not None:
                on_interrupted(active)
            raise InterruptedRunError(
                f"run {active.get('run_id')} was interrupted (pid {active.get('pid')} is gone);"
                " inspect health() and recover the repository before another write"
            ) from None
        current = read_operation_lock(root)
        if (
            active is None
            and current is not None
            and not current["active"]
            and (
                _lock_age_seconds(root) > STALE_AFTER_SECONDS
                or finished_record(root, {"run_id": current.get("runId")}) is not None
            )
        ):
            # The earlier tool's staleRecovered path: dead owner, old lock, no run left.
            try:
                break_dead_lock(root / LOCK_FILE)  # re-checks that the owner is dead
                lock = acquire_lock(root / LOCK_FILE, owner_data=owner)
            except LockHeldError:
                raise OperationInProgressError("another writer took the lock") from None
        elif current is not None and not current["active"]:
            raise OperationInProgressError(dead_lock_message(root, current)) from None
        else:
            holder = current.get("operation") if current else "another process"
            raise OperationInProgressError(f"{holder} holds the memory operation lock") from None
    try:
        active = read_active_run(root)
        if active is not None and active.get("state") == "interrupted":
            # The lock was removed by hand but the dead run's record is still there.
            if on_interrupted is not None:
                on_interrupted(active)
            raise InterruptedRunError(
                f"run {active.get('run_id')} was interrupted; recover before another write"
            )
        run = OperationRun(root, operation, run_id, started_at)
        run.set_phase("staging")
        try:
            yield run
        finally:
            if run.kept_status is None:
                with contextlib.suppress(FileNotFoundError):
                    (root / ACTIVE_RUN_FILE).unlink()
    finally:
        lock.release()
