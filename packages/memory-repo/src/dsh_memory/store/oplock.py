"""One writer at a time: ``.sync/operation.lock`` plus the active-run record.

The lock is the earlier tool's file: JSON ``{operation, pid, runId, startedAt}`` created
exclusively with mode 0600; ours adds the writer's ``startTime`` and ``hostname`` (the
owner data every dsh lock carries). While a run holds it, ``.sync/active-run.json`` says
which phase it is in (written atomically). Both are removed when the run ends, whatever
the outcome.

**When a lock is held.** A lock of ours (it has ``startTime``) is held while the process
that wrote it runs: pid alive and started at the recorded time. A lock without one is the
earlier tool's, and its own rule decides: held while its pid runs *or* its ``startedAt``
is under six hours old. That rule is not a formality - the earlier sync writes the lock
through a helper process that exits at once, so a live sync's lock always names a dead
pid. A held lock is answered with ``operation-in-progress`` and nothing is written: no
journal record, no take-over (:func:`lock_held`).

**A writer that died.** A process that dies mid-run leaves lock and active run behind:
the next writer finds a lock that is no longer held plus an active run, journals that run
as ``interrupted`` and stops with ``interrupted-run`` - the operator inspects ``health()``
and recovers explicitly. Only a lock with no active run, no longer held *and* older than
six hours (or whose run the journal says finished) is taken over.

**Litter is not an interruption.** An active-run record whose journal record says the run
finished is stale litter. So is every record the earlier tool's host writes (migrate,
rollback, clear: its ``clearActiveRun`` compares ``runId`` with a record keyed ``run_id``
and never removes one) once no lock names its run: the host's ``finally`` released the
lock, so the run ended (:func:`is_earlier_host_litter`).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from dsh_common.errors import DshError, LockHeldError
from dsh_common.jsonio import dumps
from dsh_common.locks import (
    FileLock,
    acquire_lock,
    break_dead_lock,
    default_owner_data,
    owner_alive,
    pid_alive,
    read_lock_owner,
)
from dsh_memory.errors import InterruptedRunError, OperationInProgressError, UnsafeLayoutError
from dsh_memory.store import fsops
from dsh_memory.store.root import RUNS_DIR
from dsh_memory.write.journal import is_valid_run_id, read_json_file, read_run, utc_iso

LOCK_FILE = ".sync/operation.lock"
ACTIVE_RUN_FILE = ".sync/active-run.json"
#: A lock is stale only once it is this old (the earlier tool's DEFAULT_STALE_MS).
STALE_AFTER_SECONDS = 6 * 60 * 60
#: Journal statuses that mean a run ended. The earlier tool leaves ``active-run.json``
#: behind after a finished migrate, rollback or clear: such a record is stale litter, not
#: an interruption (``running``, ``pending`` and ``interrupted`` are not in this set).
FINISHED_STATUSES = frozenset(
    {"applied", "no_change", "failed", "rolled_back", "skipped-retry", "rejected", "deferred"}
)
#: The owner field only our locks carry (dsh_common's pid-reuse guard): a lock with it is
#: judged by its writer's liveness, a lock without it by the earlier tool's rule.
OWN_LOCK_KEY = "startTime"
EARLIER_TOOL = "seriousz158/dsh-memory"
#: ``startedAt`` as both earlier writers put it: its sync helper to the second, its host
#: with milliseconds (JavaScript's ``toISOString``).
_STARTED_AT = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,9})?Z")
#: The earlier host's run ids: ``<stamp>-<operation>-<pid>`` (its sync uses 8 hex instead).
_EARLIER_HOST_RUN = re.compile(r"[0-9]{8}T[0-9]{6}Z-(migrate|rollback|clear)-([0-9]+)")


def lock_owner(operation: str, run_id: str, started_at: str) -> dict[str, Any]:
    """What a writer of ours puts in the lock: the earlier tool's four fields first (it
    reads them by name), then the writer's start time and host."""
    ours = default_owner_data()
    return {
        "operation": operation,
        "pid": os.getpid(),
        "runId": run_id,
        "startedAt": started_at,
        OWN_LOCK_KEY: ours["startTime"],
        "hostname": ours["hostname"],
    }


def _started_at(owner: dict[str, Any]) -> float | None:
    value = owner.get("startedAt")
    if not isinstance(value, str) or not _STARTED_AT.fullmatch(value):
        return None
    try:
        return _dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _lock_age_seconds(root: Path) -> float:
    try:
        return _dt.datetime.now().timestamp() - os.lstat(root / LOCK_FILE).st_mtime
    except OSError:
        return 0.0


def lock_held(root: Path, owner: dict[str, Any]) -> bool:
    """Whether the lock with ``owner`` data is held (see the module docstring).

    Ours: its writer still runs (pid and start time; another host's counts as running).
    The earlier tool's: its pid runs, or it is under six hours old - by ``startedAt``, or
    by the file's age when ``startedAt`` cannot be read (a lock still being written).
    """
    if OWN_LOCK_KEY in owner:
        return owner_alive(owner) is True
    pid = owner.get("pid")
    if isinstance(pid, int) and not isinstance(pid, bool) and pid_alive(pid):
        return True
    started = _started_at(owner)
    age = _lock_age_seconds(root) if started is None else _dt.datetime.now().timestamp() - started
    return age < STALE_AFTER_SECONDS


def read_operation_lock(root: Path) -> dict[str, Any] | None:
    """The lock's owner data plus ``active`` (the lock is held); None when unlocked.

    ``own`` says whether one of our writers wrote it (else the earlier tool did).
    """
    owner = read_lock_owner(root / LOCK_FILE)
    if owner is None:
        return None
    return {
        "operation": owner.get("operation"),
        "pid": owner.get("pid"),
        "runId": owner.get("runId"),
        "startedAt": owner.get("startedAt"),
        "active": lock_held(root, owner),
        "own": OWN_LOCK_KEY in owner,
    }


def public_lock(lock: dict[str, Any] | None) -> dict[str, Any] | None:
    """``health().operationLock``: the contract's five fields (docs/compatibility/memory.md)."""
    if lock is None:
        return None
    return {key: lock[key] for key in ("operation", "pid", "runId", "startedAt", "active")}


def held_lock_message(root: Path, lock: dict[str, Any]) -> str:
    """What to tell a writer (and ``recover``) about a held lock."""
    what = f"{lock.get('operation')!s} run {lock.get('runId')!s}"
    if lock.get("own"):
        return f"{what} (pid {lock.get('pid')!s}) holds the memory operation lock"
    return (
        f"{what} of {EARLIER_TOOL} holds the memory operation lock (since"
        f" {lock.get('startedAt')!s}). That tool counts its lock as held until its pid"
        f" {lock.get('pid')!s} is gone and the lock is {STALE_AFTER_SECONDS // 3600} hours old"
        " - its sync writes the pid of a helper that exits at once - so nothing was changed."
        f" Wait for that run to finish; only if you know no {EARLIER_TOOL} process is at"
        f" work on this memory, delete {root / LOCK_FILE}"
    )


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


def is_earlier_host_litter(data: dict[str, Any], lock: dict[str, Any] | None) -> bool:
    """An active-run record the earlier tool's host left behind after its run ended.

    Its host writes ``{schema_version: 1, run_id: <stamp>-<operation>-<pid>, operation,
    status: "running", phase, pid, started_at}`` for migrate, rollback and clear and never
    removes it; while the run lasts the lock names it. Our records carry no
    ``schema_version``, and the earlier sync's run ids are ``<stamp>-<8 hex>``.
    """
    match = _EARLIER_HOST_RUN.fullmatch(str(data.get("run_id")))
    return (
        match is not None
        and data.get("schema_version") == 1
        and data.get("operation") == match.group(1)
        and str(data.get("pid")) == match.group(2)
        and data.get("status", "running") == "running"
        and (lock is None or lock.get("runId") != data.get("run_id"))
    )


def _classify(root: Path, data: dict[str, Any]) -> str | None:
    """``running``, ``interrupted``, or None for litter (a run that ended)."""
    lock = read_operation_lock(root)
    if lock is not None and lock["active"] and lock.get("runId") == data.get("run_id"):
        return "running"  # its lock is held (the earlier sync's record names a dead helper)
    if is_earlier_host_litter(data, lock):
        return None
    pid = data.get("pid")
    alive = isinstance(pid, int) and not isinstance(pid, bool) and pid_alive(pid)
    ordinary = data.get("status", "running") == "running"
    if _stale(root, data, alive=alive):
        return None
    # A record left on purpose (``unjournaled``) is interrupted even while its pid runs.
    return "running" if alive and ordinary else "interrupted"


def read_active_run(root: Path) -> dict[str, Any] | None:
    """The active-run record plus ``state`` (running / interrupted).

    None when there is no record, and also when it is litter of a run that ended (see the
    module docstring): never an interruption.
    """
    try:
        data = read_json_file(root / ACTIVE_RUN_FILE)
    except (OSError, ValueError):
        return {"state": "interrupted", "status": "unreadable"}
    if not isinstance(data, dict):
        return None
    state = _classify(root, data)
    return None if state is None else {**data, "state": state}


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
    """Remove an active-run record that is litter of a run that ended."""
    try:
        data = read_json_file(root / ACTIVE_RUN_FILE)
    except (OSError, ValueError):
        return
    if isinstance(data, dict) and _classify(root, data) is None:
        with contextlib.suppress(FileNotFoundError):
            (root / ACTIVE_RUN_FILE).unlink()


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
        # No ``schema_version``: that key (with a ``<stamp>-<operation>-<pid>`` run id) is
        # how the earlier host's never-removed records are told apart (is_earlier_host_litter).
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
    owner = lock_owner(operation, run_id, started_at)
    try:
        (root / ".sync").mkdir(mode=0o700, exist_ok=True)
    except OSError as exc:
        raise UnsafeLayoutError(f".sync cannot be created: {exc}") from exc
    _discard_stale_active_run(root)
    try:
        lock = acquire_lock(root / LOCK_FILE, owner_data=owner)
    except LockHeldError:
        lock = _when_locked(root, owner, on_interrupted)
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


def _when_locked(
    root: Path,
    owner: dict[str, Any],
    on_interrupted: Callable[[dict[str, Any]], None] | None,
) -> FileLock:
    """The lock exists: refuse (held, or a dead run to recover) or take a stale one over.

    A held lock comes first and changes nothing - not even the journal: its holder may be a
    live run of the earlier tool whose records name a helper process that already exited.
    """
    current = read_operation_lock(root)
    if current is None or current["active"]:
        holder = held_lock_message(root, current) if current else "another writer holds the lock"
        raise OperationInProgressError(holder)
    active = read_active_run(root)
    if active is not None and active.get("state") == "interrupted":
        if on_interrupted is not None:
            on_interrupted(active)
        raise InterruptedRunError(
            f"run {active.get('run_id')} was interrupted (pid {active.get('pid')} is gone);"
            " inspect health() and recover the repository before another write"
        )
    if active is None and (
        _lock_age_seconds(root) > STALE_AFTER_SECONDS
        or finished_record(root, {"run_id": current.get("runId")}) is not None
    ):
        # The earlier tool's staleRecovered path: owner gone, old lock, no run left.
        try:
            break_dead_lock(root / LOCK_FILE)  # re-checks that the owner is dead
            return acquire_lock(root / LOCK_FILE, owner_data=owner)
        except LockHeldError:
            raise OperationInProgressError("another writer took the lock") from None
    raise OperationInProgressError(dead_lock_message(root, current))
