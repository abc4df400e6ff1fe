"""The usage sidecar ``.sync/usage.json``: metadata-only feedback that orders context reads.

Format (the earlier tool's, so either tool can read the other's file)::

    {"schema_version": 1, "records": {"handbook/x.md": {"usage_count": 3,
                                                        "last_usage": "2026-08-21T02:00:00.000Z"}}}

- at most 1 MiB, mode 0600, never committed (``.git/info/exclude`` gets
  ``.sync/usage.json``, ``.sync/usage.lock`` and ``.sync/.usage.*.tmp``);
- written atomically (:func:`dsh_common.io.atomic_write`): ``.sync/.usage.json.<random>.tmp``
  (exclusive create, 0600, fsync), then renamed over ``usage.json``;
- updates are serialised across processes by the directory lock ``.sync/usage.lock/``
  (``mkdir`` is atomic) holding ``owner.json`` ``{"pid", "started_at"}``: 400 attempts
  5 ms apart; a lock whose owner process is gone *and* whose directory is older than 30 s is
  removed and retried, any other held lock ends in ``usage-busy``. Inside one process a
  per-root ``threading.Lock`` queues callers first, as the earlier tool's promise queue did.
- keys must be record paths ``handbook|rollouts|archive/…/*.md``; anything else, a wrong
  schema version or a negative/non-integer count is ``usage-invalid``.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import stat
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from dsh_common import jsonio
from dsh_common.errors import InvalidJsonError, shown
from dsh_common.io import atomic_write, read_bounded
from dsh_common.locks import pid_alive
from dsh_memory.errors import UnsafeLayoutError, UsageBusyError, UsageInvalidError
from dsh_memory.store.frontmatter import is_record_path

USAGE_FILE = ".sync/usage.json"
USAGE_LOCK = ".sync/usage.lock"
USAGE_TMP_GLOB = ".sync/.usage.*.tmp"
USAGE_SCHEMA_VERSION = 1
MAX_USAGE_BYTES = 1024 * 1024
LOCK_ATTEMPTS = 400
LOCK_RETRY_SECONDS = 0.005
LOCK_STALE_SECONDS = 30.0
GIT_EXCLUDE_ENTRIES = (USAGE_FILE, USAGE_LOCK, USAGE_TMP_GLOB)
_MAX_SAFE_INTEGER = 2**53 - 1

_queues_guard = threading.Lock()
_queues: dict[str, threading.Lock] = {}

Usage = dict[str, Any]


def empty_usage() -> Usage:
    return {"schema_version": USAGE_SCHEMA_VERSION, "records": {}}


def iso_timestamp(moment: _dt.datetime) -> str:
    """JavaScript's ``toISOString``: UTC, milliseconds, ``Z``."""
    utc = moment.astimezone(_dt.UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def validate_usage(value: object) -> Usage:
    if not isinstance(value, dict) or value.get("schema_version") != USAGE_SCHEMA_VERSION:
        raise UsageInvalidError("usage.json has no schema_version 1")
    if type(value["schema_version"]) is not int:
        raise UsageInvalidError("usage.json schema_version is not an integer")
    records = value.get("records")
    if not isinstance(records, dict):
        raise UsageInvalidError("usage.json records is not an object")
    checked: dict[str, dict[str, Any]] = {}
    for path, entry in records.items():
        if not is_record_path(path) or not isinstance(entry, dict):
            raise UsageInvalidError(f"usage.json has an invalid entry for {shown(path)}")
        count = entry.get("usage_count")
        last = entry.get("last_usage")
        if type(count) is not int or not 0 <= count <= _MAX_SAFE_INTEGER:
            raise UsageInvalidError(f"usage.json has an invalid usage_count for {shown(path)}")
        if last is not None and not isinstance(last, str):
            raise UsageInvalidError(f"usage.json has an invalid last_usage for {shown(path)}")
        checked[path] = {"usage_count": count, "last_usage": last}
    return {"schema_version": USAGE_SCHEMA_VERSION, "records": checked}


def _sync_directory(root: Path) -> Path:
    sync = root / ".sync"
    try:
        info = sync.lstat()
    except FileNotFoundError:
        sync.mkdir(mode=0o700)
        return sync
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafeLayoutError(".sync is not a directory")
    return sync


def read_usage(root: Path) -> Usage:
    """The validated sidecar, or an empty one when it does not exist yet."""
    path = root / USAGE_FILE
    try:
        info = path.lstat()
    except FileNotFoundError:
        return empty_usage()
    if not stat.S_ISREG(info.st_mode):
        raise UnsafeLayoutError("usage.json is not a regular file")
    if info.st_size > MAX_USAGE_BYTES:
        raise UsageInvalidError("usage.json is larger than 1 MiB")
    try:
        data = read_bounded(path, MAX_USAGE_BYTES)
    except FileNotFoundError:
        return empty_usage()
    try:
        return validate_usage(jsonio.loads(data, what="usage.json"))
    except InvalidJsonError as exc:
        raise UsageInvalidError("usage.json is not valid JSON") from exc


def ensure_git_exclude(root: Path, entries: Iterable[str]) -> None:
    """Append missing lines to ``.git/info/exclude`` (only in a plain ``.git`` directory)."""
    git = root / ".git"
    try:
        if not stat.S_ISDIR(git.lstat().st_mode):
            return
    except FileNotFoundError:
        return
    info = git / "info"
    try:
        info_stat = info.lstat()
    except FileNotFoundError:
        info.mkdir(mode=0o700)
        info_stat = info.lstat()
    if not stat.S_ISDIR(info_stat.st_mode):
        raise UnsafeLayoutError(".git/info is not a directory")
    exclude = info / "exclude"
    try:
        # Bytes, not text: the user's exclude file need not be UTF-8, and is kept as it is.
        current = read_bounded(exclude, MAX_USAGE_BYTES)
    except FileNotFoundError:
        current = b""
    lines = [line.rstrip(b"\r") for line in current.split(b"\n")]
    missing = [entry.encode("utf-8") for entry in entries if entry.encode("utf-8") not in lines]
    if not missing:
        return
    separator = b"" if current == b"" or current.endswith(b"\n") else b"\n"
    atomic_write(exclude, current + separator + b"\n".join(missing) + b"\n", mode=0o600)


def _queue(root: Path) -> threading.Lock:
    with _queues_guard:
        return _queues.setdefault(str(root), threading.Lock())


def _lock_owner_alive(lock: Path) -> bool:
    try:
        owner = jsonio.loads(read_bounded(lock / "owner.json", 4096), what="usage lock owner")
    except (OSError, ValueError):
        return False
    pid = owner.get("pid") if isinstance(owner, dict) else None
    return type(pid) is int and pid > 0 and pid_alive(pid)


def _acquire_directory_lock(sync: Path) -> Path:
    lock = sync / "usage.lock"
    for _attempt in range(LOCK_ATTEMPTS):
        try:
            lock.mkdir(mode=0o700)
        except FileExistsError:
            try:
                age = time.time() - lock.lstat().st_mtime
            except FileNotFoundError:
                continue
            if age > LOCK_STALE_SECONDS and not _lock_owner_alive(lock):
                # The owner died without cleaning up: stealing is safe, nobody else writes.
                _remove_lock(lock)
                continue
            time.sleep(LOCK_RETRY_SECONDS)
            continue
        owner = {"pid": os.getpid(), "started_at": iso_timestamp(_dt.datetime.now(_dt.UTC))}
        descriptor = os.open(
            lock / "owner.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600
        )
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(jsonio.dumps_bytes(owner) + b"\n")
        return lock
    raise UsageBusyError("the usage sidecar lock is held by another process")


@contextlib.contextmanager
def usage_lock(root: Path) -> Iterator[Path]:
    """Hold the per-root in-process queue and the cross-process directory lock."""
    with _queue(root):
        sync = _sync_directory(root)
        lock = _acquire_directory_lock(sync)
        try:
            _remove_temporaries(sync)
            yield sync
        finally:
            _remove_lock(lock)


def _remove_lock(lock: Path) -> None:
    """Remove the lock directory, ignoring errors (``rmtree(ignore_errors=True)``).

    The lock holds only ``owner.json``: unlinking it and removing the directory is two
    system calls, where importing shutil would cost every ``context`` call ~1.5 ms.
    Anything else found in it is left to rmtree.
    """
    try:
        # O_NOFOLLOW: a lock replaced by a symbolic link is not followed (nor is it by rmtree).
        descriptor = os.open(lock, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.unlink("owner.json", dir_fd=descriptor)
    finally:
        os.close(descriptor)
    try:
        os.rmdir(lock)
    except FileNotFoundError:
        return
    except OSError:
        import shutil  # noqa: PLC0415 - only for a lock that holds more than its owner file

        shutil.rmtree(lock, ignore_errors=True)


def _remove_temporaries(sync: Path) -> None:
    # Only the lock holder writes a temporary, so any left now belongs to a dead writer.
    with os.scandir(sync) as iterator:
        for child in iterator:
            if child.name.startswith(".usage.") and child.name.endswith(".tmp"):
                with contextlib.suppress(OSError):
                    os.unlink(child.path)


def _serialise_within_budget(usage: Usage) -> bytes:
    data = jsonio.dumps_bytes(usage) + b"\n"
    if len(data) <= MAX_USAGE_BYTES:
        return data
    # Keep the most recently used entries: dropping the stalest keeps ordering meaningful
    # and the file readable (a sidecar over 1 MiB would be rejected on the next read).
    records: Mapping[str, dict[str, Any]] = usage["records"]
    ordered = sorted(records.items(), key=lambda item: item[1]["last_usage"] or "", reverse=True)
    while len(data) > MAX_USAGE_BYTES and ordered:
        ordered = ordered[: max(0, len(ordered) * 9 // 10)]
        usage = {"schema_version": USAGE_SCHEMA_VERSION, "records": dict(ordered)}
        data = jsonio.dumps_bytes(usage) + b"\n"
    return data


def record_usage(root: Path, paths: Iterable[str], now: _dt.datetime | None = None) -> Usage:
    """Add one use to each path (duplicates count once) and return the updated sidecar."""
    unique = list(dict.fromkeys(paths))
    if not all(isinstance(path, str) and is_record_path(path) for path in unique):
        raise UsageInvalidError("usage paths must be handbook|rollouts|archive/…/*.md")
    if not unique:
        return read_usage(root)
    timestamp = iso_timestamp(now or _dt.datetime.now(_dt.UTC))
    with usage_lock(root) as sync:
        usage = read_usage(root)
        records = usage["records"]
        for path in unique:
            previous = records.get(path, {"usage_count": 0, "last_usage": None})
            records[path] = {"usage_count": previous["usage_count"] + 1, "last_usage": timestamp}
        # Our own sidecar: a hard link to it is split, not refused (read_usage already
        # refused anything but a regular file).
        data = _serialise_within_budget(usage)
        atomic_write(sync / "usage.json", data, mode=0o600, refuse_hard_links=False)
    ensure_git_exclude(root, GIT_EXCLUDE_ENTRIES)
    return usage


def usage_of(usage: Usage, path: str) -> tuple[int, str]:
    """``(usage_count, last_usage or "")`` of one path (zero/empty when never used)."""
    entry = usage["records"].get(path)
    if entry is None:
        return 0, ""
    return entry["usage_count"], entry["last_usage"] or ""
