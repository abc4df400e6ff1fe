"""A validated change set as one run of the commit pipeline (sync, preview apply, edits).

:func:`apply_change_set` turns a :class:`~dsh_memory.write.validation.ChangeSet` into tree changes
("DPSK memory sync applied: <run>" on the recovery point) and hands them to
:func:`dsh_memory.write.pipeline.commit_run`, which owns the order, the crash points and what a
failure leaves behind. The helpers around it are the sync side's: the staging digest, the
live-memory check against a staging baseline, and the ``.last-sync`` watermark a sync's
journal commit carries.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from typing import Any

from dsh_memory.errors import LiveMemoryChangedError
from dsh_memory.store.oplock import OperationRun
from dsh_memory.store.root import LAST_SYNC_FILE, README_FILE
from dsh_memory.write import journal
from dsh_memory.write.pipeline import Outcome, Proposal, commit_journal, commit_run
from dsh_memory.write.staging import live_entries
from dsh_memory.write.transactions import FILE_MODE, Blob, GitTransactions
from dsh_memory.write.validation import ChangeSet


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


def watermark_files(watermark_ns: int | None) -> dict[str, bytes]:
    """The journal commit's extra files: the advanced ``.last-sync`` when the run moves it."""
    return {} if watermark_ns is None else {LAST_SYNC_FILE: watermark_bytes(watermark_ns)}


def touch_watermark(tx: GitTransactions, watermark_ns: int | None) -> None:
    """Date ``.last-sync`` at the watermark once its journal commit is made."""
    if watermark_ns is not None:
        # The earlier tool compares session logs with the marker's mtime (find -newer).
        os.utime(tx.root / LAST_SYNC_FILE, ns=(watermark_ns, watermark_ns))


def journal_outcome(
    tx: GitTransactions, entry: dict[str, Any], watermark_ns: int | None
) -> str | None:
    """A run without a payload change (a sync with nothing to apply): the journal commit,
    with the watermark when the run moves it; None when it could not be made."""
    commit = commit_journal(tx, entry, extra_files=watermark_files(watermark_ns))
    if commit is not None:
        touch_watermark(tx, watermark_ns)
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
) -> Outcome:
    """Commit ``change`` on top of ``head`` through the pipeline; return its outcome.

    ``checkpoint=False`` is for ``adopt``: the change *is* the dirty payload, so the
    recovery point is HEAD itself and rolling the run back returns to it.
    """
    paths = sorted(change.contents)
    data = [change.contents[p] for p in paths]

    def propose(_recovery: str) -> Proposal:
        oids = tx.write_blobs(data)
        changes: dict[str, Blob | None] = {
            p: Blob(FILE_MODE, oid) for p, oid in zip(paths, oids, strict=True)
        }
        changes.update(dict.fromkeys(change.deleted))
        return Proposal(
            changes=changes,
            message=f"DPSK memory sync applied: {run.run_id}",
            contents=dict(zip(oids, data, strict=True)),
            changed_paths=change.changed_paths,
        )

    outcome = commit_run(
        tx,
        run,
        clock,
        head=head,
        propose=propose,
        checkpoint=checkpoint,
        fields=fields,
        journal_files=watermark_files(watermark_ns),
    )
    if outcome.journaled:
        touch_watermark(tx, watermark_ns)
    return outcome
