"""Freshness keys of the search index: is the payload still the one the index was built from?

Three keys, cheapest first, each stored in the index meta by the build:

- the *listing key* (payloads of :data:`FAST_KEY_MIN_RECORDS` records or more, where a GNU
  ``find`` is installed): a digest of the ``find`` listing of the record folders - type,
  inode, ctime and path of every entry - taken by a separate process *while* the index is
  queried (:func:`start_check`), and trusted only when it agrees with the build's own walk
  (:mod:`dsh_memory.search.index_listing`);
- the *stat key* (:func:`stat_key`, same sizes, when the listing key cannot be had or the
  process may use a single CPU only):
  ``lstat`` of the indexed paths and directories from Python, in turn with the query;
- the payload *fingerprint* (small payloads, or a record folder that is a link): a full
  walk of the record folders, exact and a few milliseconds for a small payload.

What each key sees: a record edited in place (an editor's truncate-and-write) changes its
file's ctime; a record added, removed, renamed or replaced by a link changes its
directory's ctime and the listing's lines; a new sub-directory changes its parent's. The
kernel sets the ctime on every write, truncation, chmod, link or rename, and user space
cannot set it back (as it can the mtime). Like git's racy-entry rule, a change within the
same timestamp tick as the snapshot is the one case no key sees; the build confirms its
snapshot with a second walk. No key runs git or reads a file, so no filter ever runs.
"""

from __future__ import annotations

import array
import hashlib
import os
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dsh_common import jsonio
from dsh_memory.search.index_listing import Listing, listing_agrees
from dsh_memory.store import payload_state
from dsh_memory.store.records import RECORD_FOLDERS, PayloadEntry, fingerprint, walk_payload

#: Below this many records the payload is walked on every search (a few ms, and exact); from
#: it on the listing key (or the stat key) of the record folders is compared instead.
FAST_KEY_MIN_RECORDS = 3000


def stat_groups(directories: Iterable[str], paths: Iterable[str]) -> list[list[Any]]:
    """``[[folder, [names...]], ...]``: the payload directories (under ``""``, relative to the
    root), then each indexed record grouped by its folder - what :func:`stat_key` stats."""
    groups: dict[str, list[str]] = {"": list(directories)}
    for relative in paths:
        directory, _slash, name = relative.rpartition("/")
        groups.setdefault(directory, []).append(name)
    return [[directory, names] for directory, names in groups.items()]


def stat_key(root: Path, groups: list[list[Any]]) -> str:
    """A digest of ``lstat`` of every payload directory and every indexed record file.

    The paths come from the stored meta, so only their stat values are digested: the inode
    and the ctime.
    """
    values = array.array("q")
    stat_at = os.stat
    # Each file is stat'ed relative to its open directory (one path component to resolve,
    # not the whole root path), with the groups stored ready-made in the index meta.
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for directory, names in groups:
            try:
                fd = (
                    os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=root_fd)
                    if directory
                    else os.dup(root_fd)
                )
            except OSError:
                values.extend([-1] * len(names))
                continue
            try:
                for name in names:
                    try:
                        info = stat_at(name, dir_fd=fd, follow_symlinks=False)
                    except OSError:
                        values.append(-1)
                        continue
                    values.extend((info.st_ctime_ns, info.st_ino))
            finally:
                os.close(fd)
    finally:
        os.close(root_fd)
    return hashlib.sha256(values.tobytes()).hexdigest()


def folder_states(root: Path) -> bytes | None:
    """Which record folders exist (``b"handbook=d rollouts=- ..."``); None when one is a link
    or not a directory: a fast key would then stat the link, not the records behind it."""
    states = []
    for folder in RECORD_FOLDERS:
        try:
            info = (root / folder).lstat()
        except FileNotFoundError:
            states.append(f"{folder}=-")
            continue
        except OSError:
            return None
        if not stat.S_ISDIR(info.st_mode):
            return None
        states.append(f"{folder}=d")
    return " ".join(states).encode("ascii")


def usable_cores() -> int:
    """CPUs this process may run on: the listing only pays off beside the query, on another
    core (on one core it adds a process to the same stats)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _listing_digest(states: bytes, listing: bytes) -> str:
    digest = hashlib.sha256(states + b"\n")
    digest.update(listing)
    return digest.hexdigest()


def snapshot_keys(root: Path, entries: list[PayloadEntry]) -> tuple[dict[str, str], bytes | None]:
    """The fast key of the payload the walk ``entries`` came from (none for a small one), and
    the listing it was taken from when it is the listing key (kept for later updates)."""
    if len(entries) < FAST_KEY_MIN_RECORDS:
        return {}, None
    states = folder_states(root)
    if states is None:
        return {}, None
    if usable_cores() >= 2:
        listing = Listing(root, states)
        output = listing.result()
        if output is not None and listing_agrees(output, entries):
            return listing_meta(states, output), output
    groups = stat_groups(payload_state.payload_directories(root), [e.path for e in entries])
    return {"stat_key": stat_key(root, groups), "stat_groups": jsonio.dumps(groups)}, None


def listing_meta(states: bytes, listing: bytes) -> dict[str, str]:
    """The meta rows of a listing key: its digest and the folder states it covers."""
    return {"listing_key": _listing_digest(states, listing), "listing_states": states.decode()}


def listing_key_of(states: bytes, listing: bytes) -> str:
    return _listing_digest(states, listing)


@dataclass(frozen=True)
class Observed:
    """What a freshness check saw of the payload, for the update that follows a stale answer:
    the listing (with the folder states it covers) or the walk's entries."""

    listing: bytes | None = None
    states: bytes | None = None
    entries: list[PayloadEntry] | None = None


class Check:
    """A freshness check started before the index is queried and finished after it."""

    def __init__(self, finish: Callable[[], bool], cancel: Callable[[], None]) -> None:
        self._finish = finish
        self.cancel = cancel
        #: What the check saw, once :meth:`fresh` has answered (None: nothing reusable).
        self.observed: Observed | None = None

    def fresh(self) -> bool:
        return self._finish()


def _stat_key_matches(root: Path, meta: dict[str, str]) -> bool:
    groups = jsonio.loads(meta.get("stat_groups", "[]"), what="index stat groups")
    try:
        return stat_key(root, groups) == meta["stat_key"]
    except (TypeError, ValueError):
        return False  # a damaged meta row: rebuild, as for any unreadable index


def start_check(root: Path, meta: dict[str, str]) -> Check:
    """Start checking ``meta`` against the payload; the listing runs while the caller works."""
    if int(meta.get("record_count", "0")) >= FAST_KEY_MIN_RECORDS:
        stored_listing = meta.get("listing_key")
        if stored_listing:
            states = folder_states(root)
            if states is None:
                return Check(lambda: False, lambda: None)
            listing = Listing(root, states)

            def listed() -> bool:
                output = listing.result()
                if output is None:
                    return False
                check.observed = Observed(listing=output, states=states)
                return _listing_digest(states, output) == stored_listing

            check = Check(listed, listing.cancel)
            return check
        if meta.get("stat_key"):
            return Check(lambda: _stat_key_matches(root, meta), lambda: None)

    def walked() -> bool:
        entries = walk_payload(root, RECORD_FOLDERS)
        check.observed = Observed(entries=entries)
        return meta.get("fingerprint") == fingerprint(entries)

    check = Check(walked, lambda: None)
    return check
