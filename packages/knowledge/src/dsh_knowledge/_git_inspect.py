"""Batched, read-only comparison of recorded Git snapshots with the live repository.

This is the engine behind provenance capture (M3), freshness (M3) and health (M5). It answers,
for many ``(commit, path)`` pairs at once, "does the file at ``path`` in the work tree and in
the index still hold the blob that ``commit`` recorded?" with a closed set of reason codes.

Why it is shaped like this:

* **A constant number of git processes.** The earlier tool ran a few commands per commit
  group; checking 16 items x 16 evidence that way costs hundreds of processes. Here one
  ``cat-file --batch-check`` answers every commit and every ``commit:path`` blob, one
  ``ls-files -v -s`` reads index flags and staged blob ids, two ``check-attr --stdin`` calls read
  filter/conversion attributes, and one ``hash-object --no-filters --stdin-paths`` hashes the
  work-tree files. The count does not grow with the number of evidence entries.
* **Nothing the repository names is ever executed.** None of those commands runs a clean,
  smudge or process filter (``hash-object`` gets ``--no-filters``; ``git diff``, which would run
  a clean filter on a stat-dirty file, is never used). ``dsh_common.git.GitRunner`` also turns
  off fsmonitor and hooks and strips every ``GIT_*`` variable.
* **Bounded.** Per-command timeout (at most 1.5 s), one total budget (at most 8 s), and stdout
  capped at 64 KiB per 16 checks in the batch (the earlier tool's 64 KiB per command, scaled to
  the batch so a 256-check batch is not refused for being a batch).
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import stat
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from dsh_common.errors import DshError, GitError, GitOutputTooLargeError, GitTimeoutError
from dsh_common.git import GitResult, GitRunner
from dsh_common.io import read_bounded
from dsh_knowledge.errors import ValidationError

#: Evidence entries one freshness report checks; also the health batch and detail limits.
MAX_GIT_EVIDENCE_CHECKS = 16
#: Longest repository-relative path accepted in provenance.
MAX_GIT_PATH_CHARS = 4096
#: Hard maxima; callers may lower them, never raise them.
DEFAULT_GIT_COMMAND_TIMEOUT_MS = 1500
DEFAULT_GIT_OPERATION_BUDGET_MS = 8000
#: stdout cap for one git command per 16 checks it covers.
MAX_GIT_OUTPUT_BYTES = 64 * 1024

FreshnessStatus = Literal["current", "potentially_stale", "unverifiable"]

#: Every reason a Git inspection can give (the earlier tool's ``GitOperationReason``).
GIT_OPERATION_REASONS: tuple[str, ...] = (
    "invalid_workspace",
    "invalid_path",
    "not_repository",
    "git_unavailable",
    "missing_head",
    "file_not_in_head",
    "working_tree_changed",
    "unsafe_path",
    "unsafe_index_state",
    "unsafe_filter",
    "invalid_commit",
    "missing_commit",
    "missing_path_at_commit",
    "timeout",
    "cancelled",
    "operation_budget_exceeded",
    "command_failed",
    "malformed_output",
)

# Attributes whose value changes the bytes git would store for a work-tree file. ``filter``
# names a program (never run, always unsafe); the others are built-in conversions that make a
# raw ``--no-filters`` hash differ from the stored blob without the content having changed.
_FILTER_ATTRIBUTE = "filter"
# Line-ending conversion only turns CRLF into LF on the way in: we can redo that in Python.
_LINE_ENDING_ATTRIBUTES = ("text", "eol", "crlf")
# These rewrite content in ways we do not reproduce ($Id$ collapsing, re-encoding).
_OPAQUE_ATTRIBUTES = ("ident", "working-tree-encoding")
_CHECKED_ATTRIBUTES = (_FILTER_ATTRIBUTE, *_LINE_ENDING_ATTRIBUTES, *_OPAQUE_ATTRIBUTES)
#: Largest work-tree file re-hashed in Python to see through a CRLF-only difference.
MAX_LINE_ENDING_REHASH_BYTES = 32 * 1024 * 1024
_UNSET_ATTRIBUTE_VALUES = frozenset({"unspecified", "unset"})

_FULL_COMMIT = re.compile(r"(?:[0-9a-fA-F]{40}|[0-9a-fA-F]{64})")
_DRIVE_PREFIX = re.compile(r"[A-Za-z]:")


class InvalidGitValueError(ValueError):
    """A commit or path fails the lexical provenance rules (internal; callers map it)."""


def normalize_repository_relative_path(raw: str) -> str:
    """A repository-relative path with ``/`` separators, or InvalidGitValueError.

    Rejects empty, longer than 4096 characters, NUL, a leading ``/`` or ``\\``, a drive
    (``C:``), and any ``..`` segment; converts ``\\`` to ``/`` and drops empty and ``.``
    segments (the earlier tool's ``normalizeRepositoryRelativePath``).
    """
    if not isinstance(raw, str) or not raw or len(raw) > MAX_GIT_PATH_CHARS or "\0" in raw:
        raise InvalidGitValueError("Git path must be a non-empty path without NUL characters.")
    if raw.startswith(("/", "\\")) or _DRIVE_PREFIX.match(raw) or os.path.isabs(raw):
        raise InvalidGitValueError("Git path must be repository-relative.")
    segments = raw.replace("\\", "/").split("/")
    if ".." in segments:
        raise InvalidGitValueError("Git path must not traverse outside the repository.")
    normalized = "/".join(s for s in segments if s and s != ".")
    if not normalized:
        raise InvalidGitValueError("Git path must identify a file.")
    return normalized


def normalize_git_commit(raw: str) -> str:
    """A full 40- or 64-hex object id in lowercase, or InvalidGitValueError."""
    if not isinstance(raw, str) or not _FULL_COMMIT.fullmatch(raw):
        raise InvalidGitValueError("Git commit must be a full SHA-1 or SHA-256 object ID.")
    return raw.lower()


def clamp_limits(
    command_timeout_ms: float | None, operation_budget_ms: float | None
) -> tuple[float, float]:
    """(per-command timeout, total budget) in seconds, clamped to the hard maxima."""
    timeout = DEFAULT_GIT_COMMAND_TIMEOUT_MS if command_timeout_ms is None else command_timeout_ms
    budget = DEFAULT_GIT_OPERATION_BUDGET_MS if operation_budget_ms is None else operation_budget_ms
    for name, value in (("timeout", timeout), ("budget", budget)):
        if not math.isfinite(value) or value < 1:
            raise ValidationError(f"Git command {name} must be a positive finite number of ms.")
    return (
        min(timeout, DEFAULT_GIT_COMMAND_TIMEOUT_MS) / 1000.0,
        min(budget, DEFAULT_GIT_OPERATION_BUDGET_MS) / 1000.0,
    )


@dataclass(frozen=True)
class SnapshotCheck:
    """The answer for one ``(commit, path)`` pair; ``reason`` is None only for ``current``."""

    status: FreshnessStatus
    reason: str | None


@dataclass(frozen=True)
class SnapshotInspection:
    """Answers in input order, plus facts for callers that prove batching."""

    checks: list[SnapshotCheck]
    commands_run: int
    #: Distinct valid ``(commit, path)`` pairs actually compared (duplicates share one check).
    distinct_checks: int = 0
    head: str | None = None
    root: str | None = None


class _GitFailure(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _unverifiable(reason: str) -> SnapshotCheck:
    return SnapshotCheck("unverifiable", reason)


class _Session:
    """Runs hardened git commands under one shared budget and maps failures to reasons."""

    def __init__(
        self,
        *,
        command_timeout: float,
        operation_budget: float,
        output_cap: int,
        cancel: threading.Event | None,
        git: str,
    ) -> None:
        self.command_timeout = command_timeout
        self.operation_budget = operation_budget
        self.output_cap = output_cap
        self.cancel = cancel
        self.git = git
        self.started = time.monotonic()
        self.commands_run = 0

    def run(self, cwd: str, args: Sequence[str], *, input: bytes | None = None) -> GitResult:
        if self.cancel is not None and self.cancel.is_set():
            raise _GitFailure("cancelled")
        remaining = self.operation_budget - (time.monotonic() - self.started)
        if remaining <= 0:
            raise _GitFailure("operation_budget_exceeded")
        runner = GitRunner(
            cwd,
            timeout=min(self.command_timeout, remaining),
            budget=remaining,
            max_output=self.output_cap,
            git=self.git,
        )
        try:
            return runner.run(args, input=input, check=False)
        except GitOutputTooLargeError:
            raise _GitFailure("command_failed") from None
        except GitTimeoutError:
            # The command was cut at min(timeout, remaining budget): say which one bit.
            spent = time.monotonic() - self.started
            over_budget = spent >= self.operation_budget
            raise _GitFailure("operation_budget_exceeded" if over_budget else "timeout") from None
        except GitError as exc:
            # With check=False a GitError only means git could not be started at all.
            raise _GitFailure(
                "git_unavailable" if exc.exit_code is None else "command_failed"
            ) from None
        finally:
            self.commands_run += runner.commands_run

    def run_ok(self, cwd: str, args: Sequence[str], *, input: bytes | None = None) -> GitResult:
        result = self.run(cwd, args, input=input)
        if result.returncode != 0:
            raise _GitFailure("command_failed")
        return result


def _split_nul(data: bytes) -> list[bytes]:
    if not data:
        return []
    if not data.endswith(b"\0"):
        raise _GitFailure("malformed_output")
    return data[:-1].split(b"\0")


def _local_state(root: str, path: str) -> Literal["present", "missing", "unsafe"]:
    """lstat every segment: a symlink anywhere is unsafe; the last must be a regular file."""
    current = root
    segments = path.split("/")
    for index, segment in enumerate(segments):
        current = os.path.join(current, segment)
        try:
            # lstat, not stat: a symlinked directory must not be followed into.
            info = os.lstat(current)
        except FileNotFoundError:
            return "missing"
        except NotADirectoryError:
            return "missing"
        except OSError:
            return "unsafe"
        if stat.S_ISLNK(info.st_mode):
            return "unsafe"
        final = index == len(segments) - 1
        if final and not stat.S_ISREG(info.st_mode):
            return "unsafe"
        if not final and not stat.S_ISDIR(info.st_mode):
            return "missing"
    return "present"


def discover_root(session: _Session, workspace: str) -> str:
    """The work tree top level for ``workspace`` or a _GitFailure with the reason."""
    if not workspace or "\0" in workspace:
        raise _GitFailure("invalid_workspace")
    absolute = os.path.abspath(workspace)
    if not os.path.isdir(absolute):
        raise _GitFailure("invalid_workspace")
    result = session.run(absolute, ["rev-parse", "--show-toplevel"])
    if result.returncode != 0:
        raise _GitFailure("not_repository")
    root = result.stdout.decode("utf-8", "replace")
    root = root[:-1] if root.endswith("\n") else root
    if not root or "\n" in root or "\0" in root or not os.path.isabs(root):
        # Also a bare repository or a .git directory: there is no work tree to compare.
        raise _GitFailure("malformed_output" if root else "not_repository")
    return root


def _index_entries(
    session: _Session, root: str, paths: Sequence[str]
) -> tuple[dict[str, str], set[str]]:
    """(path -> staged blob id, paths whose index state makes a comparison unsafe)."""
    staged: dict[str, str] = {}
    unsafe: set[str] = set()
    if not paths:
        return staged, unsafe
    wanted = set(paths)
    result = session.run_ok(root, ["ls-files", "-v", "-s", "-z", "--", *paths])
    for record in _split_nul(result.stdout):
        meta, tab, raw_path = record.partition(b"\t")
        fields = meta.split(b" ")
        if not tab or len(fields) != 4 or len(fields[0]) != 1:
            raise _GitFailure("malformed_output")
        path = raw_path.decode("utf-8", "surrogateescape")
        if path not in wanted:
            # --literal-pathspecs on a regular file matches only itself; anything else is odd.
            raise _GitFailure("malformed_output")
        tag, object_id, stage = fields[0].decode(), fields[2].decode(), fields[3].decode()
        # `ls-files -v` prints "H" for an ordinary cached entry; lowercase for
        # assume-unchanged, "S"/"s" for skip-worktree, "M" for unmerged. Their work-tree state
        # cannot be trusted, and a second entry for one path means a merge in progress.
        if tag != "H" or stage != "0" or path in staged:
            unsafe.add(path)
        staged[path] = object_id
    return staged, unsafe


@dataclass
class _Attributes:
    filtered: set[str]
    line_endings: set[str]
    opaque: set[str]


def _attributes(session: _Session, root: str, paths: Sequence[str]) -> _Attributes:
    """Which paths have a filter driver, a line-ending conversion, or another conversion.

    Both the work-tree and the index ``.gitattributes`` are read (``--cached``), as the earlier
    tool did: either one could make git run a filter on this path.
    """
    found = _Attributes(set(), set(), set())
    if not paths:
        return found
    payload = b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths)
    per_path = 3 * len(_CHECKED_ATTRIBUTES)
    for cached in (False, True):
        args = ["check-attr", "--stdin", "-z", *(["--cached"] if cached else [])]
        result = session.run_ok(root, [*args, *_CHECKED_ATTRIBUTES], input=payload)
        fields = _split_nul(result.stdout)
        if len(fields) != per_path * len(paths):
            raise _GitFailure("malformed_output")
        for offset in range(0, len(fields), 3):
            raw_path, raw_attribute, value = fields[offset : offset + 3]
            path = paths[offset // per_path]
            if raw_path.decode("utf-8", "surrogateescape") != path:
                raise _GitFailure("malformed_output")
            if value.decode("utf-8", "replace") in _UNSET_ATTRIBUTE_VALUES:
                continue
            attribute = raw_attribute.decode("utf-8", "replace")
            if attribute == _FILTER_ATTRIBUTE:
                found.filtered.add(path)
            elif attribute in _LINE_ENDING_ATTRIBUTES:
                found.line_endings.add(path)
            else:
                found.opaque.add(path)
    return found


_BINARY = "binary"


def _lf_blob_id(root: str, path: str, object_id_length: int) -> str | None:
    """The blob id of the work-tree file with CRLF turned into LF, or None if unreadable.

    Returns ``_BINARY`` for content git would not convert (it holds a NUL byte).

    This is the only conversion ``text``/``eol``/``crlf``/``core.autocrlf`` apply when git
    stores a file, so redoing it here sees through a checkout's line endings without asking
    git to convert (and so without any chance of running a configured program).
    """
    try:
        data = read_bounded(os.path.join(root, path), MAX_LINE_ENDING_REHASH_BYTES)
    except (OSError, DshError):
        return None
    if b"\0" in data:
        return _BINARY
    converted = data.replace(b"\r\n", b"\n")
    digest = hashlib.sha256 if object_id_length == 64 else hashlib.sha1
    return digest(b"blob %d\0" % len(converted) + converted).hexdigest()


def _autocrlf_enabled(session: _Session, root: str) -> bool:
    result = session.run(root, ["config", "--get", "core.autocrlf"])
    if result.returncode == 1:  # unset
        return False
    if result.returncode != 0:
        raise _GitFailure("command_failed")
    return result.text.strip().lower() in {"true", "input", "yes", "on", "1"}


def _hash_worktree(session: _Session, root: str, paths: Sequence[str]) -> dict[str, str]:
    if not paths:
        return {}
    data = ("\n".join(paths) + "\n").encode("utf-8", "surrogateescape")
    # --no-filters: a clean filter is a program the repository names; it must never run.
    result = session.run_ok(root, ["hash-object", "--no-filters", "--stdin-paths"], input=data)
    ids = result.text.split()
    if len(ids) != len(paths) or not all(_FULL_COMMIT.fullmatch(i) for i in ids):
        raise _GitFailure("malformed_output")
    return dict(zip(paths, ids, strict=True))


def _object_types(session: _Session, root: str, names: Sequence[str]) -> list[tuple[str, str]]:
    """(object id, type) per name via one ``cat-file --batch-check``; type "missing" if absent."""
    payload = ("\n".join(names) + "\n").encode("utf-8", "surrogateescape")
    result = session.run_ok(root, ["cat-file", "--batch-check"], input=payload)
    lines = result.stdout.decode("utf-8", "surrogateescape").split("\n")
    if len(lines) != len(names) + 1 or lines[-1] != "":
        raise _GitFailure("malformed_output")
    answers: list[tuple[str, str]] = []
    for name, line in zip(names, lines, strict=False):
        if line in (f"{name} missing", f"{name} ambiguous"):
            answers.append(("", "missing"))
            continue
        parts = line.split(" ")
        if len(parts) != 3 or not _FULL_COMMIT.fullmatch(parts[0]):
            raise _GitFailure("malformed_output")
        answers.append((parts[0].lower(), parts[1]))
    return answers


def inspect_snapshots(
    workspace: str | os.PathLike[str],
    provenances: Sequence[tuple[object, object]],
    *,
    command_timeout_ms: float | None = None,
    operation_budget_ms: float | None = None,
    missing_path_reason: str = "working_tree_changed",
    cancel: threading.Event | None = None,
    git: str = "git",
) -> SnapshotInspection:
    """Compare every ``(commit, path)`` with the work tree and index of ``workspace``.

    Identical pairs are checked once. ``missing_path_reason`` is what a file deleted from
    the work tree reports (freshness says ``working_tree_changed``, health
    ``source_path_missing``).
    """
    command_timeout, operation_budget = clamp_limits(command_timeout_ms, operation_budget_ms)
    checks: list[SnapshotCheck | None] = [None] * len(provenances)
    pairs: dict[tuple[str, str], list[int]] = {}
    for index, (raw_commit, raw_path) in enumerate(provenances):
        try:
            commit = normalize_git_commit(raw_commit)  # type: ignore[arg-type]
        except InvalidGitValueError:
            checks[index] = _unverifiable("invalid_commit")
            continue
        try:
            path = normalize_repository_relative_path(raw_path)  # type: ignore[arg-type]
        except InvalidGitValueError:
            checks[index] = _unverifiable("invalid_path")
            continue
        pairs.setdefault((commit, path), []).append(index)

    output_cap = MAX_GIT_OUTPUT_BYTES * max(1, math.ceil(len(pairs) / MAX_GIT_EVIDENCE_CHECKS))
    session = _Session(
        command_timeout=command_timeout,
        operation_budget=operation_budget,
        output_cap=output_cap,
        cancel=cancel,
        git=git,
    )
    answers: dict[tuple[str, str], SnapshotCheck] = {}
    root: str | None = None
    head: str | None = None
    if pairs:
        try:
            root = discover_root(session, os.fspath(workspace))
            head = _compare_pairs(session, root, list(pairs), answers, missing_path_reason)
        except _GitFailure as failure:
            for pair in pairs:
                answers.setdefault(pair, _unverifiable(failure.reason))
    for pair, indexes in pairs.items():
        for index in indexes:
            checks[index] = answers[pair]
    return SnapshotInspection(
        checks=[c if c is not None else _unverifiable("command_failed") for c in checks],
        commands_run=session.commands_run,
        distinct_checks=len(pairs),
        head=head,
        root=root,
    )


def _compare_pairs(
    session: _Session,
    root: str,
    pairs: list[tuple[str, str]],
    answers: dict[tuple[str, str], SnapshotCheck],
    missing_path_reason: str,
) -> str:
    """Fill ``answers`` for ``pairs``; return HEAD's commit id. Raises _GitFailure for the rest."""
    # 1. One cat-file answers HEAD, every commit and every commit:path blob.
    commits = sorted({commit for commit, _ in pairs})
    queryable = [pair for pair in pairs if "\n" not in pair[1] and "\r" not in pair[1]]
    for pair in pairs:
        if pair not in queryable:
            # The batch protocols are line-based; such a path cannot be asked about safely.
            answers[pair] = _unverifiable("unsafe_path")
    names = ["HEAD^{commit}", *(f"{c}^{{commit}}" for c in commits)]
    names += [f"{commit}:{path}" for commit, path in queryable]
    objects = _object_types(session, root, names)
    head_id, head_type = objects[0]
    if head_type != "commit":
        raise _GitFailure("missing_head")
    commit_ok = {c: objects[1 + i][1] == "commit" for i, c in enumerate(commits)}
    recorded_blob: dict[tuple[str, str], str] = {}
    for offset, pair in enumerate(queryable):
        object_id, kind = objects[1 + len(commits) + offset]
        if not commit_ok[pair[0]]:
            # A shallow clone or a pruned history: we never fetch missing objects.
            answers[pair] = _unverifiable("missing_commit")
        elif kind != "blob":
            answers[pair] = _unverifiable("missing_path_at_commit")
        else:
            recorded_blob[pair] = object_id

    # 2. lstat walk of the work tree, once per path.
    paths = sorted({path for _, path in recorded_blob})
    local = {path: _local_state(root, path) for path in paths}
    for pair in recorded_blob:
        state = local[pair[1]]
        if state == "missing":
            answers[pair] = SnapshotCheck("potentially_stale", missing_path_reason)
        elif state == "unsafe":
            answers[pair] = _unverifiable("unsafe_path")
    present = [path for path in paths if local[path] == "present"]
    if not present:
        return head_id

    # 3. Index flags and staged blob ids, then attributes, then the work-tree hashes.
    staged, unsafe_index = _index_entries(session, root, present)
    attributes = _attributes(session, root, present)
    to_hash = [
        p for p in present if p in staged and p not in unsafe_index and p not in attributes.filtered
    ]
    worktree = _hash_worktree(session, root, to_hash)
    autocrlf: bool | None = None
    for pair, blob in recorded_blob.items():
        if pair in answers:
            continue
        path = pair[1]
        if path not in staged:
            # Removed from the index (git rm --cached) while the file stays: not the snapshot.
            answers[pair] = SnapshotCheck("potentially_stale", "working_tree_changed")
        elif path in unsafe_index:
            answers[pair] = _unverifiable("unsafe_index_state")
        elif path in attributes.filtered:
            answers[pair] = _unverifiable("unsafe_filter")
        elif staged[path] != blob:
            answers[pair] = SnapshotCheck("potentially_stale", "working_tree_changed")
        elif worktree[path] == blob:
            answers[pair] = SnapshotCheck("current", None)
        elif path in attributes.opaque:
            # Git would rewrite the content ($Id$, encodings) before hashing; a raw hash
            # cannot tell a real edit from that, and we will not ask git to convert.
            answers[pair] = _unverifiable("unsafe_filter")
        else:
            # Git stores either the raw bytes or the bytes with CRLF turned into LF. If
            # neither matches, the content changed; if only the LF form matches, it is
            # current exactly when a line-ending conversion applies to this path.
            lf_blob = _lf_blob_id(root, path, len(blob))
            if lf_blob is not None and lf_blob != blob:
                answers[pair] = SnapshotCheck("potentially_stale", "working_tree_changed")
                continue
            if path not in attributes.line_endings and autocrlf is None:
                autocrlf = _autocrlf_enabled(session, root)
            converts = path in attributes.line_endings or bool(autocrlf)
            if lf_blob is None:
                # Too large or unreadable to redo the conversion: only sure without one.
                answers[pair] = (
                    _unverifiable("unsafe_filter")
                    if converts
                    else SnapshotCheck("potentially_stale", "working_tree_changed")
                )
            else:
                answers[pair] = (
                    SnapshotCheck("current", None)
                    if converts
                    else SnapshotCheck("potentially_stale", "working_tree_changed")
                )
    return head_id
