"""Lock files that say who holds them.

A lock is a file created exclusively (``O_CREAT|O_EXCL``) whose content is JSON naming its
owner: process id, process start time, host and creation time. A second writer fails fast
with :class:`LockHeldError`, whose details say who holds the lock and whether that process
is still alive. Nobody but the owner removes a lock; a lock whose owner died stays until a
caller explicitly asks to break it (:func:`break_dead_lock`) - a crash must be looked at,
not papered over.

The start time guards against pid reuse: a pid that is alive but started at a different
time is a different process, so its lock's owner is dead.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import os
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from dsh_common.errors import DshError, LockHeldError
from dsh_common.io import OWNER_ONLY_FILE_MODE, create_exclusive, read_bounded

_LOCK_READ_LIMIT = 64 * 1024


def utc_now_iso() -> str:
    """ISO 8601 UTC with milliseconds and ``Z``, as JavaScript's ``toISOString`` writes it."""
    now = _dt.datetime.now(_dt.UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def _boot_time() -> float | None:
    try:
        with open("/proc/stat", "rb") as handle:
            for line in handle:
                if line.startswith(b"btime "):
                    return float(line.split()[1])
    except OSError:
        return None
    return None


def process_start_time(pid: int) -> str | None:
    """When process ``pid`` started, as ISO 8601 UTC; None where it cannot be known.

    Linux only (``/proc``); elsewhere liveness falls back to the pid alone.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read()
    except OSError:
        return None
    # The command name (field 2) may contain spaces and parentheses: split after the last ')'.
    fields = raw[raw.rfind(b")") + 2 :].split()
    boot = _boot_time()
    if boot is None or len(fields) < 20:
        return None
    ticks = int(fields[19])
    started = boot + ticks / os.sysconf("SC_CLK_TCK")
    moment = _dt.datetime.fromtimestamp(started, _dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def pid_alive(pid: int) -> bool:
    """True if a process with ``pid`` exists (signal 0 probes without sending anything)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    except OSError as exc:
        return exc.errno == errno.EPERM
    return True


def owner_alive(owner: Mapping[str, Any]) -> bool | None:
    """Whether the process that wrote ``owner`` still runs; None if the data cannot tell.

    A lock from another host cannot be probed from here, so it counts as alive (the safe
    answer: nobody will be invited to break it).
    """
    pid = owner.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool):
        return None
    host = owner.get("hostname")
    if isinstance(host, str) and host and host != _hostname():
        return True
    if not pid_alive(pid):
        return False
    recorded = owner.get("startTime")
    if isinstance(recorded, str):
        actual = process_start_time(pid)
        # Clock-tick rounding can move the computed time by a few ms between reads.
        if actual is not None and abs(_iso_seconds(actual) - _iso_seconds(recorded)) > 1.0:
            return False
    return True


def _hostname() -> str:
    # socket is imported here, not at the top: it costs ~1.5 ms of every start-up, and only
    # a lock's owner data needs it.
    import socket  # noqa: PLC0415

    return socket.gethostname()


def _iso_seconds(text: str) -> float:
    try:
        return _dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def default_owner_data() -> dict[str, Any]:
    """``{"pid", "startTime", "hostname", "createdAt"}`` for the current process."""
    pid = os.getpid()
    return {
        "pid": pid,
        "startTime": process_start_time(pid),
        "hostname": _hostname(),
        "createdAt": utc_now_iso(),
    }


def read_lock_owner(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The JSON owner data in a lock file, ``{}`` if unreadable/malformed, None if absent."""
    try:
        raw = read_bounded(path, _LOCK_READ_LIMIT)
    except FileNotFoundError:
        return None
    except (OSError, DshError):
        return {}
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}


def _held_error(path: Path, owner: dict[str, Any] | None) -> LockHeldError:
    data = owner or {}
    alive = owner_alive(data) if data else None
    state = {True: "alive", False: "no longer running", None: "unknown"}[alive]
    who = f"pid {data.get('pid')}" if "pid" in data else "an unknown owner"
    started = data.get("startTime") or data.get("startedAt")
    since = f" (started {started})" if started else ""
    return LockHeldError(
        f"lock {path} is held by {who}{since}, which is {state}; "
        + (
            "remove the lock by hand only after confirming no writer is active"
            if alive is not True
            else "wait for it to finish"
        ),
        details={"lock": str(path), "owner": data, "ownerAlive": alive},
    )


class FileLock:
    """An acquired lock file; release it exactly once (``with`` does so in ``finally``)."""

    def __init__(self, path: Path, owner: dict[str, Any]) -> None:
        self.path = path
        self.owner = owner
        self._released = False

    def release(self) -> None:
        """Remove the lock, but only if it still holds the data we wrote."""
        if self._released:
            return
        self._released = True
        current = read_lock_owner(self.path)
        if current == self.owner:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()

    def __enter__(self) -> FileLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def acquire_lock(
    path: str | os.PathLike[str],
    *,
    owner_data: Mapping[str, Any] | None = None,
    wait_seconds: float = 0.0,
    mode: int = OWNER_ONLY_FILE_MODE,
) -> FileLock:
    """Create the lock file at ``path`` or raise LockHeldError naming its holder.

    ``owner_data`` replaces the default owner fields (a product whose on-disk lock format is
    fixed by its contract, docs/compatibility/, passes its own). With ``wait_seconds`` > 0 the call
    retries with
    backoff (20 ms doubling to 200 ms) before giving up; it never removes the lock.
    """
    lock_path = Path(path)
    owner = dict(owner_data) if owner_data is not None else default_owner_data()
    payload = orjson.dumps(owner)
    deadline = time.monotonic() + wait_seconds
    delay = 0.02
    while True:
        try:
            create_exclusive(lock_path, payload, mode=mode, durable=False)
        except FileExistsError:
            if time.monotonic() >= deadline:
                raise _held_error(lock_path, read_lock_owner(lock_path)) from None
            time.sleep(delay)
            delay = min(delay * 2, 0.2)
            continue
        return FileLock(lock_path, owner)


@contextlib.contextmanager
def locked(
    path: str | os.PathLike[str],
    *,
    owner_data: Mapping[str, Any] | None = None,
    wait_seconds: float = 0.0,
) -> Iterator[FileLock]:
    """``with locked(path): ...`` - acquire, and release in ``finally``."""
    lock = acquire_lock(path, owner_data=owner_data, wait_seconds=wait_seconds)
    try:
        yield lock
    finally:
        lock.release()


def break_dead_lock(path: str | os.PathLike[str]) -> bool:
    """Remove a lock whose owner is known to be dead. Returns False if there was none.

    Raises LockHeldError if the owner is alive or its liveness cannot be established:
    only an explicit caller decision, on a provably dead owner, removes someone's lock.
    """
    lock_path = Path(path)
    owner = read_lock_owner(lock_path)
    if owner is None:
        return False
    if owner_alive(owner) is not False:
        raise _held_error(lock_path, owner)
    with contextlib.suppress(FileNotFoundError):
        lock_path.unlink()
    return True
