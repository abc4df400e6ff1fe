"""Apply a validated change set as one journaled transaction (sync, preview and edits).

Order, with the crash points tests kill the process at (``DSH_MEMORY_TEST_KILL_AT``):

1. recovery point: the clean HEAD, or a checkpoint commit of the dirty live payload
   ("DPSK memory recovery checkpoint: <run>")        -> ``applying:recovery``
2. apply commit on it ("DPSK memory sync applied: <run>"), live index for the touched
   paths, then ``update-ref HEAD <apply> <head>`` (compare-and-swap) -> ``applying:apply``
3. the work tree, written from the commit's blobs     -> ``finalizing:worktree``
4. the journal commit ("DPSK memory journal: <run>"), which also carries the advanced
   ``.last-sync`` watermark for a sync                 -> ``finalizing:journal``

A kill before step 2's CAS leaves HEAD and the work tree as they were (the checkpoint is
an unreferenced commit). A kill after it leaves HEAD on the apply commit and possibly a
stale work tree; ``dsh-memory recover`` sees the apply commit's message, rewrites the
payload from HEAD and journals the run, so nothing is lost or half-applied.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dsh_common.errors import DshError, GitError
from dsh_memory import fsops, journal
from dsh_memory.crashpoints import crash_point
from dsh_memory.errors import CommitFailedError, LiveMemoryChangedError
from dsh_memory.oplock import OperationRun
from dsh_memory.root import LAST_SYNC_FILE, README_FILE, RECORD_DIRS
from dsh_memory.staging import live_entries
from dsh_memory.transactions import FILE_MODE, Blob, GitTransactions
from dsh_memory.validation import ChangeSet


def staging_digest(manifest_entries: list[dict[str, Any]], change: ChangeSet) -> str:
    """``sha256:<hex>`` naming the proposed payload (baseline entries + the change)."""
    state = {e["path"]: e["sha256"] for e in manifest_entries if e["path"] != README_FILE}
    for path in change.deleted:
        state.pop(path, None)
    for path, data in change.contents.items():
        state[path] = hashlib.sha256(data).hexdigest()
    digest = hashlib.sha256()
    for path in sorted(state):
        digest.update(f"{path}\0{state[path]}\n".encode())
    return "sha256:" + digest.hexdigest()


def check_live_unchanged(tx: GitTransactions, manifest: Mapping[str, Any]) -> str:
    """HEAD and the live payload must still be the staging baseline; return HEAD."""
    head = tx.require_head()
    if manifest.get("head_sha") != head:
        raise LiveMemoryChangedError("memory was committed to since the staging copy was made")
    entries, _ = live_entries(tx.root)
    current = {e["path"]: e["sha256"] for e in entries if e["path"] != README_FILE}
    baseline = {
        e["path"]: e.get("sha256")
        for e in manifest.get("entries", [])
        if isinstance(e, dict) and e.get("path") != README_FILE
    }
    if current != baseline:
        raise LiveMemoryChangedError("live memory files changed since the staging copy was made")
    return head


def watermark_bytes(ns: int) -> bytes:
    """``.last-sync`` content: unix seconds (the earlier tool reads only the file's mtime)."""
    return f"{ns // 1_000_000_000}.{ns % 1_000_000_000:09d}\n".encode()


def journal_failure(
    tx: GitTransactions, run: OperationRun, clock: journal.RunClock, exc: DshError,
    fields: Mapping[str, Any] | None = None,
) -> None:  # fmt: skip
    """Best effort: a refused or failed run leaves a ``failed`` record with its code."""
    entry = journal.make_record(
        run_id=run.run_id, operation=run.operation, status="failed",
        started_at=clock.started_at, phase=run.phase, error_code=exc.code,
        duration_ms=clock.duration_ms(),
    )  # fmt: skip
    entry.update(fields or {})
    try:
        journal.journal_run(tx, entry)
    except (DshError, OSError):
        pass


def journal_outcome(
    tx: GitTransactions,
    entry: dict[str, Any],
    watermark_ns: int | None,
) -> str:
    """The journal commit, with the watermark when the run moves it."""
    extra: dict[str, bytes] = {}
    if watermark_ns is not None:
        extra[LAST_SYNC_FILE] = watermark_bytes(watermark_ns)
    commit = journal.journal_run(tx, entry, extra_files=extra)
    if watermark_ns is not None:
        # The earlier tool compares session logs with the marker's mtime (find -newer).
        os.utime(tx.root / LAST_SYNC_FILE, ns=(watermark_ns, watermark_ns))
    return commit


def apply_change_set(
    tx: GitTransactions,
    run: OperationRun,
    clock: journal.RunClock,
    *,
    head: str,
    change: ChangeSet,
    fields: Mapping[str, Any],
    watermark_ns: int | None = None,
    checkpoint: bool = True,
) -> dict[str, Any]:
    """Commit ``change`` on top of ``head`` (see the module docstring); return the record.

    ``checkpoint=False`` is for ``adopt``: the change *is* the dirty payload, so the
    recovery point is HEAD itself and rolling the run back returns to it.
    """
    run.set_phase("applying")
    root: Path = tx.root
    try:
        recovery, dirty = (
            tx.recovery_point(head, f"DPSK memory recovery checkpoint: {run.run_id}")
            if checkpoint
            else (head, [])
        )
        crash_point("applying:recovery")
        paths = sorted(change.contents)
        oids = tx.write_blobs([change.contents[p] for p in paths])
        changes: dict[str, Blob | None] = {
            p: Blob(FILE_MODE, oid) for p, oid in zip(paths, oids, strict=True)
        }
        changes.update(dict.fromkeys(change.deleted))
        tree = tx.build_tree(recovery, changes)
        commit = tx.commit_tree(tree, [recovery], f"DPSK memory sync applied: {run.run_id}")
    except (GitError, OSError) as exc:
        refused = CommitFailedError(f"the apply commit could not be built: {exc}")
        journal_failure(tx, run, clock, refused, fields)
        raise refused from exc
    except DshError as exc:
        journal_failure(tx, run, clock, exc, fields)
        raise
    try:
        # The commits go into the active-run record before the CAS, so a writer killed
        # right after it still leaves their names behind (the fix-memory rule).
        run.record_commits(recovery, commit)
        tx.advance_head(commit, head, set(dirty) | set(changes))
    except OSError as exc:
        unrecorded = CommitFailedError(f"the run's commits could not be recorded: {exc}")
        journal_failure(tx, run, clock, unrecorded, fields)
        raise unrecorded from exc
    except DshError as exc:
        journal_failure(tx, run, clock, exc, fields)
        raise
    crash_point("applying:apply")
    entry = journal.make_record(
        run_id=run.run_id, operation=run.operation, status="applied",
        started_at=clock.started_at, changed_paths=change.changed_paths,
        recovery_commit=recovery, apply_commit=commit, phase="complete",
    )  # fmt: skip
    entry.update(fields)
    run.set_phase("finalizing")
    contents = dict(zip(oids, (change.contents[p] for p in paths), strict=True))
    failure: BaseException | None = None
    try:
        tx.materialize(changes, contents)
        for name in RECORD_DIRS:
            fsops.prune_empty_directories(root, name)
    except (DshError, OSError) as exc:
        # HEAD holds the run: journal it as applied with the code; health shows the dirt.
        failure = exc
        entry["error_code"] = exc.code if isinstance(exc, DshError) else "finalize-failed"
        entry["phase"] = "finalizing"
    crash_point("finalizing:worktree")
    entry["duration_ms"] = clock.duration_ms()
    entry["journal_commit"] = journal_outcome(tx, entry, watermark_ns)
    crash_point("finalizing:journal")
    if failure is not None:
        raise failure
    return entry
