"""The payload's state without running anything the repository chooses.

:func:`payload_directories` lists every directory under the record folders (the search
index's stat key, used where no ``find`` listing can be had, stats them: a file created,
removed or renamed anywhere changes its directory).

**No filter ever runs.** ``git status`` would re-hash a stat-dirty file *through the clean
or process filter* that the repository's config names and a ``.gitattributes`` in the
payload selects - a program of the repository's choosing. :func:`payload_dirty_paths` (the
exact "is the payload dirty?" answer of status, health, clear, migrate and rollback)
therefore reads the index with ``ls-files -s``, the work tree with ``lstat``, and hashes
contents in Python (git's blob id, no filters) or, for many or large files, with
``hash-object --no-filters``. A file a built-in conversion
(``core.autocrlf``, ``text``/``eol``) or a filter would store differently therefore reads
as dirty: a redundant checkpoint, never a lost change.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from dsh_common.errors import GitError
from dsh_common.git import GitRunner
from dsh_memory.store.records import RECORD_FOLDERS

GIT_TIMEOUT_SECONDS = 10.0
#: Up to this many files (and :data:`PYTHON_HASH_MAX_BYTES` in all) are hashed in this
#: process: a small memory's status would otherwise spend a git process (several ms) on a
#: few dozen small files. Past either bound one ``hash-object`` process does it.
PYTHON_HASH_MAX_FILES = 256
PYTHON_HASH_MAX_BYTES = 4 * 1024 * 1024
_READ_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


def payload_directories(root: Path) -> list[str]:
    """Every directory under the record folders (the folders included), links not followed."""
    directories: list[str] = []
    stack = list(RECORD_FOLDERS)
    while stack:
        relative = stack.pop()
        directories.append(relative)
        try:
            with os.scandir(root / relative) as iterator:
                for child in iterator:
                    if child.is_dir(follow_symlinks=False):
                        stack.append(f"{relative}/{child.name}")
        except OSError:
            continue
    directories.sort()
    return directories


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


# -- exact dirtiness, without git status ------------------------------------------------------

#: Index modes of regular files; a gitlink (160000) is a submodule and is not payload.
_FILE_MODES = frozenset({"100644", "100755"})
_SYMLINK_MODE = "120000"


@dataclass(frozen=True)
class ListingEntry:
    mode: str
    oid: str


def parse_listing(output: bytes, *, staged: bool) -> tuple[dict[str, ListingEntry], set[str]]:
    """``ls-tree -r -z`` or ``ls-files -s -z`` output: path -> entry, and unmerged paths."""
    entries: dict[str, ListingEntry] = {}
    unmerged: set[str] = set()
    for record in output.split(b"\0"):
        meta, tab, raw_path = record.partition(b"\t")
        if not tab:
            continue
        fields = meta.decode("ascii", "replace").split(" ")
        path = raw_path.decode("utf-8", "surrogateescape")
        if staged:
            mode, oid, stage = fields[0], fields[1], fields[2]
            if stage != "0":
                unmerged.add(path)
                continue
        else:
            mode, oid = fields[0], fields[2]
        entries[path] = ListingEntry(mode, oid)
    return entries, unmerged


def blob_id(data: bytes, oid_length: int) -> str:
    """Git's blob id of ``data`` (SHA-1, or SHA-256 in a sha256 repository), no filters."""
    header = b"blob %d\0" % len(data)
    algorithm = hashlib.sha256 if oid_length == 64 else hashlib.sha1
    return algorithm(header + data).hexdigest()


def _hash_in_process(root: Path, paths: Sequence[str], oid_length: int) -> dict[str, str]:
    """Blob ids of the files of ``paths`` that fit the Python bounds; the rest are left out.

    Each file is opened without following a link and without blocking (a FIFO swapped in
    after the caller's ``lstat`` must not hang status), and must still be a regular file;
    anything else is left to ``hash-object``, whose process has a timeout.
    """
    ids: dict[str, str] = {}
    if len(paths) > PYTHON_HASH_MAX_FILES:
        return ids
    budget = PYTHON_HASH_MAX_BYTES
    for path in paths:
        try:
            descriptor = os.open(root / path, _READ_FLAGS)
        except OSError:
            continue
        with os.fdopen(descriptor, "rb") as handle:
            info = os.fstat(descriptor)
            if not stat.S_ISREG(info.st_mode) or info.st_size > budget:
                continue
            data = handle.read(budget + 1)
        budget -= len(data)
        if budget < 0:
            break  # it grew while read: this file and the rest go to one hash-object process
        ids[path] = blob_id(data, oid_length)
    return ids


def _hash_files(runner: GitRunner, root: Path, paths: Sequence[str], oid_length: int) -> list[str]:
    """Blob ids of work-tree files, never through a filter.

    A few small files are hashed here; otherwise one ``hash-object --no-filters
    --stdin-paths`` process takes the ordinary names, and a name that process would misread
    (a newline, or a leading quote it would C-unquote) is hashed here.
    """
    ids = _hash_in_process(root, paths, oid_length)
    ordinary = [
        p
        for p in paths
        if p not in ids and "\n" not in p and "\r" not in p and not p.startswith('"')
    ]
    if ordinary:
        data = b"".join(_encode(p) + b"\n" for p in ordinary)
        timeout = max(GIT_TIMEOUT_SECONDS, len(ordinary) / 2000)
        lines = runner.run(
            ["hash-object", "--no-filters", "--stdin-paths"], input=data, timeout=timeout
        ).text.split()
        if len(lines) != len(ordinary):
            raise GitError("hash-object answered a different number of ids")
        ids.update(zip(ordinary, lines, strict=True))
    for path in paths:
        if path not in ids:
            with open(root / path, "rb") as handle:
                ids[path] = blob_id(handle.read(), oid_length)
    return [ids[p] for p in paths]


def _index_and_untracked(
    runner: GitRunner, paths: Sequence[str]
) -> tuple[dict[str, ListingEntry], set[str], list[str]]:
    """Index entries, unmerged paths and untracked (not ignored) files under ``paths``.

    One ``ls-files -s --others`` process when its two kinds of line cannot be confused: an
    index line starts with its mode (a digit ``1``), an untracked line with its path, i.e.
    with one of ``paths`` - so every pathspec must be a plain relative path starting with a
    letter (``./1x`` or ``a/../1x`` would list as ``1x``). Otherwise two processes, as the
    general case needs.
    """
    if paths and all(p[:1].isalpha() and ".." not in p.split("/") for p in paths):
        output = runner.run(
            ["ls-files", "-z", "-s", "--others", "--exclude-standard", "--", *paths]
        ).stdout
        index_lines: list[bytes] = []
        untracked: list[str] = []
        for record in output.split(b"\0"):
            if record[:1] == b"1":
                index_lines.append(record)
            elif record:
                untracked.append(record.decode("utf-8", "surrogateescape"))
        staged, unmerged = parse_listing(b"\0".join(index_lines), staged=True)
        return staged, unmerged, untracked
    staged, unmerged = parse_listing(
        runner.run(["ls-files", "-z", "-s", "--", *paths]).stdout, staged=True
    )
    others = runner.run(["ls-files", "-z", "--others", "--exclude-standard", "--", *paths])
    untracked = [p.decode("utf-8", "surrogateescape") for p in others.stdout.split(b"\0") if p]
    return staged, unmerged, untracked


def payload_dirty_paths(
    runner: GitRunner, root: Path, paths: Sequence[str], *, head: str | None = "HEAD"
) -> list[str]:
    """Paths under ``paths`` whose index or work-tree state differs from ``head``, plus
    untracked files that are not ignored - what ``git status --untracked-files=all`` lists,
    computed without ever running a filter (see the module docstring).

    Names are decoded with ``surrogateescape``: a name that is not UTF-8 comes back as a
    ``str`` holding lone surrogates, never as an exception.
    """
    committed: dict[str, ListingEntry] = {}
    if head is not None:
        listing = runner.run(
            ["ls-tree", "-r", "-z", "--full-tree", head, "--", *paths], check=False
        )
        if listing.returncode == 0:
            committed, _ = parse_listing(listing.stdout, staged=False)
    staged, unmerged, untracked = _index_and_untracked(runner, paths)
    dirty: set[str] = set(unmerged)
    dirty.update(untracked)
    dirty.update(p for p in committed if p not in staged and p not in unmerged)
    to_hash: list[str] = []
    for path, entry in staged.items():
        if committed.get(path) != entry:
            dirty.add(path)
            continue
        if entry.mode not in _FILE_MODES and entry.mode != _SYMLINK_MODE:
            continue  # a submodule: not payload, and git status ignores it here too
        try:
            info = os.lstat(root / path)
        except (FileNotFoundError, NotADirectoryError):
            dirty.add(path)
            continue
        if entry.mode == _SYMLINK_MODE:
            if (
                not stat.S_ISLNK(info.st_mode)
                or blob_id(os.fsencode(os.readlink(root / path)), len(entry.oid)) != entry.oid
            ):
                dirty.add(path)
            continue
        executable = bool(info.st_mode & 0o100)
        if not stat.S_ISREG(info.st_mode) or executable != (entry.mode == "100755"):
            dirty.add(path)
            continue
        to_hash.append(path)
    if to_hash:
        oid_length = len(staged[to_hash[0]].oid)
        hashes = _hash_files(runner, root, to_hash, oid_length)
        dirty.update(p for p, oid in zip(to_hash, hashes, strict=True) if oid != staged[p].oid)
    return sorted(dirty)


def live_blob_ids(runner: GitRunner, root: Path, paths: Sequence[str]) -> dict[str, str | None]:
    """The blob id each work-tree file would have (no filters), None when it is absent or
    not a regular file."""
    present: list[str] = []
    result: dict[str, str | None] = {}
    for path in paths:
        try:
            info = os.lstat(root / path)
        except (FileNotFoundError, NotADirectoryError):
            result[path] = None
            continue
        if stat.S_ISREG(info.st_mode):
            present.append(path)
        else:
            result[path] = None
    oid_length = len(runner.rev_parse("HEAD") or "0" * 40)
    result.update(zip(present, _hash_files(runner, root, present, oid_length), strict=True))
    return result
