"""``memory.applyPreview``: a pending preview's staged payload, applied as one transaction.

The preview's ``manifest.json`` is the baseline its staging copy was taken from; when HEAD
or the live payload no longer match it the preview is refused with ``live-memory-changed``
(applying it would silently undo whatever changed meanwhile). Otherwise the staged payload
is validated like a sync result and applied through :mod:`dsh_memory.write.apply`, journaled with
``operation: "preview"`` and ``run_id`` = the preview id (as the earlier tool does), and the
preview is consumed. The watermark does not move: it already moved, or not, when the
preview's own sessions were scanned.
"""

from __future__ import annotations

import shutil
from typing import Any

from dsh_common.errors import DshError
from dsh_memory.errors import (
    FinalizeFailedError,
    InterruptedRunError,
    LiveMemoryChangedError,
    OperationInProgressError,
    PreviewApplyFailedError,
    PreviewExpiredError,
    PreviewInvalidRequestError,
    PreviewNotFoundError,
)
from dsh_memory.store.root import Layout
from dsh_memory.write import journal
from dsh_memory.write.apply import apply_change_set, check_live_unchanged, staging_digest
from dsh_memory.write.journal import read_json_file
from dsh_memory.write.pipeline import writer_run
from dsh_memory.write.previews import MANIFEST_FILE, STAGING_DIR, pending_preview
from dsh_memory.write.transactions import GitTransactions
from dsh_memory.write.validation import validate_staging

#: Codes applyPreview passes through unchanged; anything else is preview-apply-failed.
_OWN_CODES = (
    PreviewInvalidRequestError,
    PreviewNotFoundError,
    PreviewExpiredError,
    LiveMemoryChangedError,
    OperationInProgressError,
    InterruptedRunError,
)


def apply_preview(layout: Layout, preview_id: object) -> dict[str, Any]:
    record, directory = pending_preview(layout.root, preview_id)
    identifier = str(record["preview_id"])
    tx = GitTransactions(layout)
    clock = journal.RunClock()
    try:
        manifest = read_json_file(directory / MANIFEST_FILE)
    except (OSError, ValueError) as exc:
        raise PreviewApplyFailedError(f"preview {identifier} has no readable manifest") from exc
    if not isinstance(manifest, dict):
        raise PreviewApplyFailedError(f"preview {identifier} has no manifest")
    run_id = journal.unique_run_id(layout.root, identifier)
    with writer_run(tx, "preview", run_id) as run:
        try:
            run.set_phase("validating")
            change = validate_staging(directory / STAGING_DIR, manifest)
            head = check_live_unchanged(tx, manifest)
            candidates = record.get("candidate_sessions")
            count = candidates if isinstance(candidates, int) else 0
            fields = {
                "candidate_sessions": count,
                "processed_sessions": count,
                "skipped_sessions": 0,
                "staging_digest": staging_digest(manifest["entries"], change),
            }
            outcome = apply_change_set(tx, run, clock, head=head, change=change, fields=fields)
        except FinalizeFailedError:
            shutil.rmtree(directory, ignore_errors=True)  # HEAD holds it: consumed all the same
            raise
        except _OWN_CODES:
            raise
        except DshError as exc:
            raise PreviewApplyFailedError(f"preview {identifier}: {exc.message}") from exc
    shutil.rmtree(directory, ignore_errors=True)  # consumed
    return {
        "status": "applied",
        "previewId": identifier,
        "changed_paths": change.changed_paths,
        "recovery_commit": outcome.recovery_commit,
        "apply_commit": outcome.apply_commit,
        "journaled": outcome.journaled,
    }
