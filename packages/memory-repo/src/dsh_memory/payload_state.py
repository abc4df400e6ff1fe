"""A cheap "has any record changed?" key for the search index, from git and a few stats.

Walking 10,000 records and ``lstat``-ing each costs ~50 ms in Python, half a search's
budget. Git already tracks most of that: for a memory root that is a git repository the
key is a digest of

- the payload trees of ``HEAD`` (``git ls-tree HEAD -- handbook rollouts archive``): every
  committed change;
- ``git status --porcelain -z --untracked-files=no`` over the payload plus an ``lstat``
  signature of each path it lists: every edit, deletion or staging of a tracked file (git
  compares its stat cache in C and re-hashes only what looks changed);
- an ``lstat`` of every payload *directory* (mtime, inode): a file created, removed or
  renamed anywhere changes its directory;
- an ``lstat`` of every *untracked* record the index holds: in-place edits git cannot see.

Not detected (documented): files hidden from ``git status`` with ``update-index
--assume-unchanged`` / ``--skip-worktree``. A root without ``.git`` has no fast key and the
index falls back to the full walk fingerprint, which detects everything.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from dsh_common.errors import DshError
from dsh_common.git import GitRunner
from dsh_memory.records import RECORD_FOLDERS

GIT_TIMEOUT_SECONDS = 10.0


def _is_git_directory(root: Path) -> bool:
    try:
        return stat.S_ISDIR((root / ".git").lstat().st_mode)
    except OSError:
        return False


def _lstat_signature(path: Path) -> str:
    try:
        info = path.lstat()
    except OSError:
        return "missing"
    kind = stat.S_IFMT(info.st_mode)
    return f"{kind}:{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}:{info.st_ino}"


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


def tracked_records(root: Path) -> set[str] | None:
    """Payload paths in git's index, or None when the root is not a usable repository."""
    if not _is_git_directory(root):
        return None
    try:
        runner = GitRunner(root, timeout=GIT_TIMEOUT_SECONDS)
        output = runner.run(["ls-files", "-z", "--", *RECORD_FOLDERS]).stdout
    except (DshError, OSError):
        return None
    return {path.decode("utf-8", "surrogateescape") for path in output.split(b"\0") if path}


def fast_key(root: Path, directories: Iterable[str], untracked: Iterable[str]) -> str | None:
    """The change key described above, or None when git cannot provide one."""
    if not _is_git_directory(root):
        return None
    try:
        runner = GitRunner(root, timeout=GIT_TIMEOUT_SECONDS)
        trees = runner.run(["ls-tree", "-z", "HEAD", "--", *RECORD_FOLDERS], check=False)
        status = runner.run(
            [
                "status",
                "--porcelain=v1",
                "-z",
                "--untracked-files=no",
                "--no-renames",
                "--ignore-submodules=all",
                "--",
                *RECORD_FOLDERS,
            ]
        )
    except (DshError, OSError):
        return None
    digest = hashlib.sha256()
    digest.update(b"trees\0%d\0" % trees.returncode)
    digest.update(trees.stdout)
    digest.update(b"\0status\0")
    digest.update(status.stdout)
    for record in status.stdout.split(b"\0"):
        if len(record) > 3:
            path = record[3:].decode("utf-8", "surrogateescape")
            digest.update(
                f"\0{path}\0{_lstat_signature(root / path)}".encode("utf-8", "surrogateescape")
            )
    digest.update(b"\0directories\0")
    for directory in directories:
        digest.update(
            f"{directory}\0{_lstat_signature(root / directory)}\n".encode(
                "utf-8", "surrogateescape"
            )
        )
    digest.update(b"\0untracked\0")
    for path in untracked:
        digest.update(
            f"{path}\0{_lstat_signature(root / path)}\n".encode("utf-8", "surrogateescape")
        )
    return digest.hexdigest()
