"""Freshness keys of the search index: is the payload still the one the index was built from?

Three keys, cheapest first, each stored in the index meta by the build:

- the *listing key* (payloads of :data:`FAST_KEY_MIN_RECORDS` records or more, where a GNU
  ``find`` is installed): a digest of ``find -P <record folders> -printf '%y %i %C@ %p\\0'``,
  the type, inode, ctime and path of every entry under the record folders. ``find`` is a
  separate process, so it stats the files on the other core *while* the index is queried
  (:func:`start_check`): the answer is kept only when the key still matches. A Python thread
  cannot do that - every ``os.stat`` has to take the GIL back from the ranking, which made
  the overlap slower than doing both in turn. At 10,000 records the stats cost ~18 ms
  (one ``lstat`` is ~1.8 us on this kind of VM, in C or Python alike), the query ~12 ms.
  The build checks ``find``'s output against its own walk (every record's inode and ctime
  to the nanosecond) and stores the key only when they agree, so a ``find`` that formats
  differently, rounds times or skips files is never trusted;
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
import contextlib
import functools
import hashlib
import os
import re
import select
import stat
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dsh_common import jsonio
from dsh_memory import payload_state
from dsh_memory.records import RECORD_FOLDERS, PayloadEntry, fingerprint, walk_payload

#: Below this many records the payload is walked on every search (a few ms, and exact); from
#: it on the listing key (or the stat key) of the record folders is compared instead.
FAST_KEY_MIN_RECORDS = 3000
#: ``find -printf``: type, inode, ctime (seconds and nanoseconds) and path, NUL-terminated
#: (a file name can hold a newline, never a NUL).
LISTING_FORMAT = "%y %i %C@ %p\\0"
#: A listing that takes longer is abandoned (the index is then rebuilt with the stat key).
LISTING_TIMEOUT_SECONDS = 30.0
#: ``find`` reads the locale for its messages and number formats: a fixed one keeps the
#: listing of an unchanged payload byte-identical between the build and every search.
_LISTING_ENVIRONMENT = {"LC_ALL": "C"}


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


@functools.cache
def _find_program(root: Path) -> str | None:
    # Only an absolute path outside the memory root: a relative PATH entry ("." or "bin")
    # would be resolved again in the child's working directory - the memory root, where
    # anyone who can commit to the repository could have put a file named find.
    from dsh_common.programs import resolve_program  # noqa: PLC0415

    return resolve_program("find", outside=root)


class Listing:
    """A ``find`` listing of the record folders, running beside the caller."""

    def __init__(self, root: Path, states: bytes) -> None:
        self.states = states
        folders = [item.split(b"=")[0].decode() for item in states.split() if item[-1:] == b"d"]
        self.process: subprocess.Popen[bytes] | None = None
        #: No folder at all lists as nothing; otherwise find must run for there to be a key.
        self.available = not folders
        self.output = -1
        program = _find_program(root)
        if not folders or program is None:
            return
        self.output = _output_file()
        try:
            # Fixed folder names after -P (links never followed): no argument comes from
            # the payload, and find runs no filter or hook.
            self.process = subprocess.Popen(
                [program, "-P", *folders, "-printf", LISTING_FORMAT],
                cwd=root,
                stdin=subprocess.DEVNULL,
                stdout=self.output,
                stderr=subprocess.DEVNULL,
                env=_LISTING_ENVIRONMENT,
            )
        except OSError:
            self.close()
            return
        self.available = True

    def result(self) -> bytes | None:
        """The listing's bytes, or None when ``find`` is missing, failed or took too long."""
        try:
            if self.process is None:
                return b"" if self.available else None
            if not _exits_in_time(self.process):
                self.cancel()
                return None
            if self.process.wait() != 0:
                return None
            return os.pread(self.output, os.fstat(self.output).st_size, 0)
        finally:
            self.close()

    def cancel(self) -> None:
        if self.process is not None and self.process.returncode is None:
            with contextlib.suppress(OSError):
                self.process.kill()
            self.process.wait()
        self.close()

    def close(self) -> None:
        if self.output >= 0:
            os.close(self.output)
            self.output = -1


def _exits_in_time(process: subprocess.Popen[bytes]) -> bool:
    """Whether ``process`` ends within LISTING_TIMEOUT_SECONDS.

    ``Popen.wait(timeout)`` polls with sleeps that grow to 50 ms - longer than the whole
    listing - so the exit is awaited on a pidfd where the platform has one.
    """
    if not hasattr(os, "pidfd_open"):
        try:
            process.wait(LISTING_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            return False
        return True
    try:
        descriptor = os.pidfd_open(process.pid)
    except OSError:
        process.wait()  # pidfds unsupported by this kernel: a plain blocking wait
        return True
    try:
        ready, _w, _x = select.select([descriptor], [], [], LISTING_TIMEOUT_SECONDS)
    finally:
        os.close(descriptor)
    return bool(ready)


def _listing_digest(states: bytes, listing: bytes) -> str:
    digest = hashlib.sha256(states + b"\n")
    digest.update(listing)
    return digest.hexdigest()


def _output_file() -> int:
    """A file descriptor ``find`` writes into without ever blocking (a pipe would fill up)."""
    if hasattr(os, "memfd_create"):
        return os.memfd_create("dsh-memory-listing", os.MFD_CLOEXEC)
    import tempfile  # noqa: PLC0415 - only where there is no memfd

    descriptor, name = tempfile.mkstemp(prefix="dsh-memory-listing-")
    os.unlink(name)
    return descriptor


def _parse_ctime(text: str) -> int:
    seconds, _dot, fraction = text.partition(".")
    return int(seconds) * 1_000_000_000 + int(fraction[:9].ljust(9, "0"))


def listing_agrees(listing: bytes, entries: list[PayloadEntry]) -> bool:
    """Whether ``find`` listed exactly the walked records, each with its inode and ctime."""
    wanted = {}
    for entry in entries:
        _size, _mtime, changed, number = entry.signature.split(":")
        wanted[entry.path] = (int(number), int(changed))
    lines = listing.split(b"\0")
    if lines.pop() != b"":
        return False  # not NUL-terminated: not the format asked for
    seen = 0
    try:
        for line in lines:
            kind, inode, ctime, path = line.split(b" ", 3)
            if kind != b"f" or not path.endswith(b".md"):
                continue
            try:
                name = path.decode("utf-8")
            except UnicodeDecodeError:
                continue  # the walk skips names that are not UTF-8 too
            if wanted.get(name) != (int(inode), _parse_ctime(ctime.decode("ascii"))):
                return False
            seen += 1
    except (UnicodeDecodeError, ValueError):
        return False
    return seen == len(wanted)


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


#: Where a listing is cut into chunks: before each line whose inode ends in 00 (one line in
#: a hundred). The cut depends on the line itself, not on its position, so an added or
#: removed line changes its own chunk only; an edit keeps the inode and so every boundary.
_CHUNK_BOUNDARY = re.compile(rb"\0(?=\S \d*00 )")


def listing_chunks(listing: bytes) -> dict[bytes, bytes]:
    """The listing cut into chunks of about a hundred lines, by their digest.

    The index keeps them (compressed): after a change the chunks that differ are the only
    part of the old and new listings compared line by line. Each chunk holds distinct
    paths, so no two chunks are equal.
    """
    return {
        hashlib.blake2b(chunk, digest_size=16).digest(): chunk
        for chunk in _CHUNK_BOUNDARY.split(listing)
        if chunk
    }


def chunks_digest(digests: Iterable[bytes]) -> str:
    """One digest over a set of chunk digests: the stored chunks are those of the listing
    the key was taken from exactly when this matches the value stored beside the key."""
    return hashlib.sha256(b"".join(sorted(digests))).hexdigest()


def listing_changes(
    before: Iterable[bytes], after: Iterable[bytes]
) -> tuple[set[str], dict[str, tuple[int, int]]] | None:
    """What differs between the old and new chunks of a listing, as records.

    Returns the paths whose line left (removed, or changed: their new line came) and, for
    every line that came, the record path with its inode and ctime. Only the chunks that
    differ are given and parsed: an edit changes one chunk of a 10,000-record listing,
    an added or removed record two or three. None when a changed line is not in the
    expected format (the caller then walks the payload).
    """
    old_lines = {line for chunk in before for line in chunk.split(b"\0")}
    new_lines = {line for chunk in after for line in chunk.split(b"\0")}
    gone: set[str] = set()
    came: dict[str, tuple[int, int]] = {}
    try:
        for line in old_lines - new_lines:
            parsed = _record_line(line)
            if parsed is not None:
                gone.add(parsed[0])
        for line in new_lines - old_lines:
            parsed = _record_line(line)
            if parsed is not None:
                came[parsed[0]] = (parsed[1], parsed[2])
    except ValueError:
        return None
    return gone, came


def _record_line(line: bytes) -> tuple[str, int, int] | None:
    """``(path, inode, ctime)`` of a listing line naming a record file; None for other lines
    (directories, links, other files, names that are not UTF-8 - the walk skips them too).
    Raises ValueError for a line in another format."""
    if not line:
        return None
    kind, inode, ctime, path = line.split(b" ", 3)
    if kind != b"f" or not path.endswith(b".md"):
        return None
    try:
        name = path.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return name, int(inode), _parse_ctime(ctime.decode("ascii"))


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
