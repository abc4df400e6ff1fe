"""What an agent (or a person) may change in memory, checked before anything is applied.

The staging limits are the earlier tool's (docs/compatibility/memory.md, Staging limits), with its
codes:

| rule | code |
|---|---|
| payload paths only (summary.md, handbook/ ...); README.md unchanged | ``staging-invalid`` |
| a new or changed file's name passes :mod:`dsh_memory.store.payload_names` | ``staging-invalid`` |
| no symbolic link or special file | ``unsafe-layout`` |
| a file is at most 1 MiB | ``file-too-large`` |
| UTF-8 text without NUL | ``binary-file`` |
| a record's front matter parses | its own code (``invalid-metadata``, ``invalid-id``, ...) |
| no two records share an id | ``duplicate-id`` |
| at most 50 added files | ``too-many-files`` |
| added + modified bytes at most 5 MiB | ``change-too-large`` |
| no new or changed file holds a secret (:mod:`dsh_common.secrets`) | ``secret-in-content`` |

The same :func:`check_files` serves the sync, preview apply and a person's own edits, so
``dsh-memory write`` accepts exactly what a sync would. The secret rule is ours (the earlier
tool has none): the transcripts an agent reads are redacted, but what it - or a person, or
another agent through ``write`` - puts into a record would otherwise reach the memory's
history, where only a history rewrite could take it out again. Files that do not change are
not scanned, so an old record never blocks a run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dsh_common.errors import DshError
from dsh_common.secrets import find_secrets
from dsh_memory.errors import (
    BinaryFileError,
    ChangeTooLargeError,
    DuplicateIdError,
    FileTooLargeError,
    SecretInContentError,
    StagingInvalidError,
    TooManyFilesError,
)
from dsh_memory.store import frontmatter
from dsh_memory.store.payload_names import name_problem
from dsh_memory.store.root import README_FILE, escape_name
from dsh_memory.write.staging import git_mode, read_staged, walk_staging

MAX_FILE_BYTES = 1024 * 1024
MAX_ADDED_FILES = 50
MAX_TOTAL_CHANGE_BYTES = 5 * 1024 * 1024


@dataclass
class ChangeSet:
    """A validated difference between a baseline and a proposed payload."""

    added: list[str] = field(default_factory=list)
    modified: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    contents: dict[str, bytes] = field(default_factory=dict)  # added + modified
    modes: dict[str, str] = field(default_factory=dict)
    changed_bytes: int = 0

    @property
    def changed_paths(self) -> list[str]:
        return sorted(self.added + self.modified + self.deleted)

    def describe(self) -> dict[str, Any]:
        return {
            "changedPaths": self.changed_paths,
            "added": self.added,
            "modified": self.modified,
            "deleted": self.deleted,
            "changedBytes": self.changed_bytes,
        }


def check_name(relative: str) -> None:
    """A file this change writes must have a name that can be committed and written back
    (:func:`dsh_memory.store.payload_names.name_problem`); refused before anything else runs."""
    problem = name_problem(relative)
    if problem is not None:
        raise StagingInvalidError(f"{escape_name(relative)}: {problem}")


def check_text(relative: str, data: bytes) -> str:
    """One file's own rules: size, UTF-8 without NUL, valid front matter for a record."""
    if len(data) > MAX_FILE_BYTES:
        raise FileTooLargeError(f"{relative} is larger than 1 MiB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BinaryFileError(f"{relative} is not UTF-8 text") from exc
    if "\x00" in text:
        raise BinaryFileError(f"{relative} holds a NUL byte")
    return text


def check_no_secret(relative: str, data: bytes) -> None:
    """Refuse a file that holds a secret; the message names its kind and line, never it."""
    text = data.decode("utf-8", "replace")
    spans = find_secrets(text)
    if spans:
        first = spans[0]
        line = text.count("\n", 0, first.start) + 1
        raise SecretInContentError(
            f"{escape_name(relative)}: line {line} holds what looks like a secret ({first.kind});"
            " secrets never enter the memory's history - remove it, or write where it is"
            " kept instead (a password manager, an environment variable)"
        )


def record_id(relative: str, text: str) -> str | None:
    """The front matter id of a record (None for summary.md and legacy records)."""
    if not frontmatter.is_record_path(relative):
        return None
    try:
        metadata = frontmatter.parse(text, path=relative)
    except DshError as exc:
        # The front matter error's own code (invalid-metadata, invalid-id ...) is refused.
        raise type(exc)(f"{relative}: {exc.message}", code=exc.code) from exc
    if metadata is None:
        return None
    value = metadata.get("id")
    return value if isinstance(value, str) else None


def check_files(files: Mapping[str, bytes]) -> None:
    """Every file's own rules plus unique ids across the whole proposed payload."""
    seen: dict[str, str] = {}
    for relative in sorted(files):
        text = check_text(relative, files[relative])
        identifier = record_id(relative, text)
        if identifier is None:
            continue
        if identifier in seen:
            raise DuplicateIdError(
                f"{relative} and {seen[identifier]} both carry the id {identifier}"
            )
        seen[identifier] = relative


def diff(
    baseline: Mapping[str, str], proposed: Mapping[str, bytes], modes: Mapping[str, str]
) -> ChangeSet:
    """The change set from ``baseline`` (path -> sha256) to ``proposed`` (path -> bytes),
    with the count and size limits applied."""
    change = ChangeSet()
    for relative in sorted(proposed):
        digest = hashlib.sha256(proposed[relative]).hexdigest()
        if baseline.get(relative) != digest:
            check_name(relative)
        if relative not in baseline:
            change.added.append(relative)
        elif baseline[relative] != digest:
            change.modified.append(relative)
        else:
            continue
        change.contents[relative] = proposed[relative]
        change.modes[relative] = modes.get(relative, "100644")
    change.deleted = sorted(set(baseline) - set(proposed))
    for relative, data in change.contents.items():
        check_no_secret(relative, data)
    if len(change.added) > MAX_ADDED_FILES:
        raise TooManyFilesError(f"{len(change.added)} files added; at most {MAX_ADDED_FILES}")
    change.changed_bytes = sum(len(data) for data in change.contents.values())
    if change.changed_bytes > MAX_TOTAL_CHANGE_BYTES:
        raise ChangeTooLargeError(f"{change.changed_bytes} bytes changed; at most 5 MiB")
    return change


def validate_staging(staging: Path, manifest: Mapping[str, Any]) -> ChangeSet:
    """Check the agent's staging folder against the manifest; return what it changed."""
    entries = manifest.get("entries")
    if not isinstance(entries, list):
        raise StagingInvalidError("the staging manifest has no entries")
    baseline: dict[str, str] = {}
    readme_digest: str | None = None
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            raise StagingInvalidError("the staging manifest is malformed")
        if entry["path"] == README_FILE:
            readme_digest = str(entry.get("sha256"))
        else:
            baseline[entry["path"]] = str(entry.get("sha256"))
    proposed: dict[str, bytes] = {}
    modes: dict[str, str] = {}
    readme: bytes | None = None
    for relative, info in walk_staging(staging):
        if info.st_size > MAX_FILE_BYTES:
            raise FileTooLargeError(f"{relative} is larger than 1 MiB")
        data = read_staged(staging, relative, MAX_FILE_BYTES)
        if relative == README_FILE:
            readme = data
            continue
        proposed[relative] = data
        modes[relative] = git_mode(info.st_mode)
    if readme_digest is not None and (
        readme is None or hashlib.sha256(readme).hexdigest() != readme_digest
    ):
        raise StagingInvalidError("README.md is read-only and was changed")
    for relative, data in proposed.items():
        if baseline.get(relative) != hashlib.sha256(data).hexdigest():
            check_name(relative)  # before any message quotes the name (it may not be UTF-8)
    check_files(proposed)
    return diff(baseline, proposed, modes)
