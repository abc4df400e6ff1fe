"""The staging copy an agent edits instead of live memory, and its baseline manifest.

A sync run works in a private temporary folder (mode 0700, ``dsh-memory-sync-*``):

```
<private>/staging/      a copy of the live payload (summary.md, handbook/, rollouts/,
                        archive/) plus README.md as a read-only reference
<private>/sessions/     the redacted transcripts, one Markdown file per candidate
<private>/agent-home/   TMPDIR and scratch space of the agent
```

The manifest is the earlier tool's (docs/compatibility/memory.md, Previews), so a preview
written by either tool can be applied by the other:
``{"schema_version": 1, "created_at", "head_sha", "entries": [{"path", "mode", "size",
"sha256"}]}`` - every live payload file and README.md, compact JSON.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dsh_memory.errors import StagingInvalidError, UnsafeLayoutError
from dsh_memory.store import fsops
from dsh_memory.store.root import (
    README_FILE,
    RECORD_DIRS,
    SUMMARY_FILE,
    escape_name,
    is_utf8_name,
    live_payload_files,
)

MAX_STAGED_FILE_BYTES = 1024 * 1024
#: Live files larger than this cannot be staged at all (the agent could not keep them).
MAX_LIVE_FILE_BYTES = 8 * 1024 * 1024
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def private_directory(prefix: str = "dsh-memory-sync-") -> Path:
    """A fresh owner-only folder in the system temp folder (mkdtemp creates it 0700)."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    os.chmod(path, 0o700)
    return path


def remove_private_directory(path: Path) -> None:
    """Remove a private folder; folders the agent made read-only are opened up first."""
    for current, directories, _files in os.walk(path):
        for name in directories:
            target = os.path.join(current, name)
            if not os.path.islink(target):
                os.chmod(target, 0o700)
    shutil.rmtree(path, ignore_errors=True)


def _write_all(directory: Path, contents: dict[str, bytes]) -> None:
    """Create every file once, one folder descriptor per folder (a thousand records would
    otherwise cost a path walk and a mkdir attempt each)."""
    by_parent: dict[str, list[str]] = {}
    for relative in contents:
        parent, _, _name = relative.rpartition("/")
        by_parent.setdefault(parent, []).append(relative)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW
    for parent, paths in sorted(by_parent.items()):
        folder = directory / parent if parent else directory
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        dir_fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW)
        try:
            for relative in paths:
                fd = os.open(relative.rpartition("/")[2], flags, 0o600, dir_fd=dir_fd)
                with os.fdopen(fd, "wb") as handle:
                    handle.write(contents[relative])
        finally:
            os.close(dir_fd)


def git_mode(mode: int) -> str:
    return "100755" if mode & 0o111 else "100644"


def live_entries(root: Path) -> tuple[list[dict[str, Any]], dict[str, bytes]]:
    """Manifest entries and contents of the live payload plus README.md.

    A live name that is not UTF-8 is left out (and so left alone, as clear leaves it): no
    manifest, digest or journal record can carry it, and an agent never sees it.
    """
    paths = [p for p in live_payload_files(root) if is_utf8_name(p)]
    if (root / README_FILE).is_file() and not (root / README_FILE).is_symlink():
        paths.append(README_FILE)
    entries: list[dict[str, Any]] = []
    contents: dict[str, bytes] = {}
    for relative in sorted(paths):
        data = fsops.read_file_nofollow(root, relative, MAX_LIVE_FILE_BYTES)
        mode = fsops.file_mode(root, relative) or 0o644
        entries.append(
            {
                "path": relative,
                "mode": git_mode(mode),
                "size": len(data),
                "sha256": hashlib.sha256(data).hexdigest(),
            }
        )
        contents[relative] = data
    return entries, contents


def stage_copy(root: Path, staging: Path, head: str | None) -> dict[str, Any]:
    """Copy the live payload into ``staging`` (which must not exist); return the manifest."""
    staging.mkdir(mode=0o700)
    for name in RECORD_DIRS:
        (staging / name).mkdir(mode=0o700)
    entries, contents = live_entries(root)
    _write_all(staging, contents)
    return {
        "schema_version": 1,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "head_sha": head,
        "entries": entries,
    }


def _is_payload(relative: str) -> bool:
    return relative == SUMMARY_FILE or relative.split("/", 1)[0] in RECORD_DIRS


def walk_staging(staging: Path) -> Iterator[tuple[str, os.stat_result]]:
    """Every file of the staging folder; anything but payload files and README.md is refused.

    A symlink, hard link or special file anywhere is ``unsafe-layout``: applying it could
    make live memory point outside the repository or import a file it shares. A file
    outside the payload is ``staging-invalid``.
    """
    stack = [""]
    while stack:
        prefix = stack.pop()
        directory = staging / prefix if prefix else staging
        with os.scandir(directory) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                relative = f"{prefix}/{entry.name}" if prefix else entry.name
                shown = escape_name(relative)  # messages are JSON: never a lone surrogate
                info = os.lstat(entry.path)
                if stat.S_ISLNK(info.st_mode):
                    raise UnsafeLayoutError(f"the agent left a symbolic link at {shown}")
                if stat.S_ISDIR(info.st_mode):
                    if not prefix and entry.name not in RECORD_DIRS:
                        raise StagingInvalidError(f"{shown}/ is not a payload folder")
                    stack.append(relative)
                elif stat.S_ISREG(info.st_mode):
                    if not (_is_payload(relative) or relative == README_FILE):
                        raise StagingInvalidError(f"{shown} is outside the payload")
                    if info.st_nlink > 1:
                        # A hard link would import whatever file it shares (a key, a config)
                        # and let later edits of that file look like memory edits.
                        raise UnsafeLayoutError(f"the agent left a hard link at {shown}")
                    yield relative, info
                else:
                    raise UnsafeLayoutError(f"{shown} is not a regular file")


def read_staged(staging: Path, relative: str, limit: int) -> bytes:
    """A staged file's bytes, without following links, at most ``limit`` + 1 bytes read."""
    fd = os.open(staging / relative, os.O_RDONLY | _NOFOLLOW)
    with os.fdopen(fd, "rb") as handle:
        return handle.read(limit + 1)
