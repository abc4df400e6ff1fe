"""The ``find`` listing of the record folders: run beside the caller, checked, compared.

The listing key of :mod:`dsh_memory.search.index_key` is a digest of
``find -P <record folders> -printf '%y %i %C@ %p\\0'``: the type, inode, ctime and path of
every entry under the record folders. ``find`` is a separate process, so it stats the files
on the other core *while* the index is queried (:class:`Listing`): the answer is kept only
when the key still matches. A Python thread cannot do that - every ``os.stat`` has to take
the GIL back from the ranking, which made the overlap slower than doing both in turn. At
10,000 records the stats cost ~18 ms (one ``lstat`` is ~1.8 us on this kind of VM, in C or
Python alike), the query ~12 ms.

The build checks ``find``'s output against its own walk (:func:`listing_agrees`: every
record's inode and ctime to the nanosecond) and stores the key only when they agree, so a
``find`` that formats differently, rounds times or skips files is never trusted. The index
keeps the listing it was keyed by in chunks (:func:`listing_chunks`); after a change the
chunks that differ name the records that changed (:func:`listing_changes`).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import select
import subprocess
from collections.abc import Iterable
from pathlib import Path

from dsh_memory.store.records import PayloadEntry

#: ``find -printf``: type, inode, ctime (seconds and nanoseconds) and path, NUL-terminated
#: (a file name can hold a newline, never a NUL).
LISTING_FORMAT = "%y %i %C@ %p\\0"
#: A listing that takes longer is abandoned (the index is then rebuilt with the stat key).
LISTING_TIMEOUT_SECONDS = 30.0
#: ``find`` reads the locale for its messages and number formats: a fixed one keeps the
#: listing of an unchanged payload byte-identical between the build and every search.
_LISTING_ENVIRONMENT = {"LC_ALL": "C"}


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
