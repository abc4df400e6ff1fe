"""``dsh-memory-sync``: one incremental consolidation run, or a preview of one.

Steps of a run (the active-run phase in brackets; crash points for tests in quotes - the
pipeline's own, from ``after-recovery`` on, are in :mod:`dsh_memory.write.crashpoints`):

1. ``memory.enabled: false`` -> nothing at all happens ("memory.enabled is false; skipping
   sync."): no lock, no scan, no watermark. Otherwise a sync or preview first runs ``init``
   (idempotent), as the earlier tool does: the first run creates the repository, whose
   fresh watermark means older sessions are not consolidated.
2. Candidates: logs newer than ``.last-sync`` and idle for an hour, at most 10 (sessions.py).
   ``--scan-only`` stops here; no candidate -> nothing to do, nothing journaled.
3. The operation lock (``sync``; not for ``--dry-run``). A dead earlier run is journaled
   ``interrupted`` and this run stops with ``interrupted-run``: recover first.
4. [staging] "staging": each transcript is redacted into the private folder - before the
   agent, the staging copy or anything else sees it - then the payload is copied. Logs are
   read with :mod:`dsh_common.jsonlines`: a line that is not JSON or nests too deep is
   skipped and counted (``skippedLines`` in the result, when there are any).
5. The agent edits the staging copy (agent.py), within its time limit.
6. [validating] "validating": validation.py; then live memory must still be the baseline.
7. A refused change (or a failed agent) journals ``failed`` with its code and leaves live
   memory and the watermark alone. No change journals ``no_change`` and advances the
   watermark. Otherwise [applying] / [finalizing]: one run of the commit pipeline
   (apply.py -> pipeline.py), whose journal commit carries the advanced watermark.

``--dry-run`` runs steps 2, 4-6 without the lock and reports what would change; nothing is
written to the repository. ``--preview ID`` runs 3-6 and stores the result as a preview
instead of applying it (no journal, no watermark move, like the earlier tool).
"""

from __future__ import annotations

import os
import secrets
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dsh_common.errors import DshError, shown
from dsh_common.jsonlines import read_json_lines
from dsh_memory.errors import InterruptedRunError, SyncInvalidRequestError
from dsh_memory.store.oplock import OperationRun
from dsh_memory.store.root import LAST_SYNC_FILE, inspect_layout
from dsh_memory.store.settings import read_enabled, settings_path
from dsh_memory.sync.agent import DEFAULT_TIMEOUT_SECONDS, AgentRun, resolve_agent, run_agent
from dsh_memory.sync.redaction import render
from dsh_memory.sync.sessions import (
    IDLE_SECONDS,
    Candidate,
    SessionSources,
    find_candidates,
    read_session,
    take_batch,
)
from dsh_memory.write import journal
from dsh_memory.write.apply import (
    apply_change_set,
    check_live_unchanged,
    journal_outcome,
    staging_digest,
)
from dsh_memory.write.crashpoints import STAGING, VALIDATING, crash_point
from dsh_memory.write.pipeline import journal_failed_run, writer_run
from dsh_memory.write.previews import (
    STAGING_DIR,
    create_preview_directory,
    pending_previews,
    validate_preview_id,
    write_manifest,
    write_preview_record,
)
from dsh_memory.write.staging import private_directory, remove_private_directory, stage_copy
from dsh_memory.write.transactions import GitTransactions
from dsh_memory.write.validation import ChangeSet, validate_staging

DISABLED_MESSAGE = "memory.enabled is false; skipping sync."
RECOVER_HINT = (
    "inspect `dsh-memory health`, then run `dsh-memory recover --confirmation RECOVER_MEMORY`"
    " before the next sync"
)


@dataclass
class SyncOptions:
    root: Path
    sources: SessionSources
    env: Mapping[str, str]
    #: dsh, claude, codex or command; None: ``command`` when ``agent_command`` is set, else dsh.
    agent: str | None = None
    agent_command: str | None = None
    timeout: float = DEFAULT_TIMEOUT_SECONDS
    mode: str = "sync"  # sync | dry-run | scan-only | preview
    preview_id: str | None = None
    settings_file: Path | None = None
    progress: Callable[[str], None] = field(default=lambda _message: None)


def new_sync_run_id() -> str:
    """``YYYYMMDDTHHMMSSZ-<8 hex>``, the earlier tool's sync run id."""
    return f"{journal.utc_stamp()}-{secrets.token_hex(4)}"


def read_watermark(root: Path) -> int:
    """``.last-sync`` in nanoseconds: its unix-seconds content, else its mtime, else 0."""
    path = root / LAST_SYNC_FILE
    try:
        info = os.lstat(path)
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return 0
    try:
        seconds, _, fraction = text.partition(".")
        return int(seconds) * 1_000_000_000 + int((fraction + "000000000")[:9] or "0")
    except ValueError:
        return info.st_mtime_ns


def _redact_candidates(batch: list[Candidate], folder: Path) -> int:
    """Redacted Markdown transcripts, one per candidate (nothing else reads the raw logs);
    returns how many log lines were skipped (not JSON, or nested too deep to walk)."""
    folder.mkdir(mode=0o700)
    skipped = 0
    for index, candidate in enumerate(batch, start=1):
        lines = read_json_lines(read_session(candidate))
        skipped += lines.skipped
        transcript = render([event for event in lines.values if isinstance(event, dict)])
        name = f"{index:02d}-{candidate.source}.md"
        fd = os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(transcript + "\n")
    return skipped


def _session_counts(batch: list[Candidate]) -> dict[str, int]:
    return {
        "candidate_sessions": len(batch),
        "processed_sessions": len(batch),
        "skipped_sessions": 0,
    }


def _describe(batch: list[Candidate], deferred: int) -> dict[str, Any]:
    return {
        "candidateSessions": len(batch),
        "deferredSessions": deferred,
        "sessions": [{"source": c.source, "path": str(c.path)} for c in batch],
    }


def run_sync(options: SyncOptions) -> dict[str, Any]:
    """One run in ``options.mode``; returns the JSON-ready result (raises MemoryRepoError)."""
    if options.mode == "preview":
        validate_preview_id(options.preview_id)
    if options.mode not in ("sync", "dry-run", "scan-only", "preview"):
        raise SyncInvalidRequestError(f"unknown mode {shown(options.mode)}")
    if options.mode != "scan-only":
        options = replace(options, agent=resolve_agent(options.agent, options.agent_command))
    settings = options.settings_file or settings_path(options.env)
    if not read_enabled(settings):
        return {"status": "disabled", "message": DISABLED_MESSAGE}
    if options.mode in ("sync", "preview"):
        # As the earlier tool's sync does at every run: create the repository on first use
        # (its fresh watermark means history is not consolidated) and restore its modes.
        from dsh_memory.store.initialize import initialize_repository  # noqa: PLC0415

        initialize_repository(options.root)
    layout = inspect_layout(options.root)
    root = layout.root
    now_ns = time.time_ns()
    watermark = read_watermark(root)
    candidates = find_candidates(options.sources, watermark, now_ns)
    batch = take_batch(candidates)
    deferred = len(candidates) - len(batch)
    described = _describe(batch, deferred)
    if options.mode == "scan-only":
        return {"scanOnly": True, **described}
    if not batch:
        message = "no new idle session logs since the last sync, nothing to do"
        options.progress(message)
        if options.mode == "dry-run":
            return {"dryRun": True, "changedPaths": [], "message": message, **described}
        return {"status": "nothing-to-do", "message": message, **described}
    options.progress(f"{len(batch)} new idle session log(s) ({deferred} left for later)")
    # Every candidate up to the idle horizon was seen unless the batch cut the list.
    new_watermark = batch[-1].mtime_ns if deferred else now_ns - IDLE_SECONDS * 1_000_000_000
    if options.mode == "dry-run":
        return _dry_run(options, layout.root, GitTransactions(layout), batch, described)
    tx = GitTransactions(layout)
    operation = "sync"
    run_id = new_sync_run_id() if options.mode == "sync" else str(options.preview_id)
    clock = journal.RunClock()
    try:
        with writer_run(tx, operation, run_id) as run:
            return _locked_run(options, tx, run, clock, batch, described, new_watermark)
    except InterruptedRunError as exc:
        raise InterruptedRunError(f"{exc.message}; {RECOVER_HINT}") from None


def _prepare(
    options: SyncOptions,
    tx: GitTransactions,
    batch: list[Candidate],
    private: Path,
    described: dict[str, Any],
) -> tuple[Path, dict[str, Any]]:
    """Redact, stage, run the agent: the staging folder and its manifest."""
    crash_point(STAGING)
    skipped = _redact_candidates(batch, private / "sessions")
    if skipped:
        # Additive (absent when 0): a log line that is not JSON or nests too deep is left out.
        described["skippedLines"] = skipped
        options.progress(f"{skipped} unreadable or too deeply nested log line(s) skipped")
    staging = private / "staging"
    manifest = stage_copy(tx.root, staging, tx.head())
    options.progress(f"running the {options.agent} agent on the staging copy")
    run_agent(
        str(options.agent),
        AgentRun(
            staging=staging,
            sessions=private / "sessions",
            private=private,
            session_count=len(batch),
        ),
        options.env,
        command=options.agent_command,
        timeout=options.timeout,
    )
    return staging, manifest


def _dry_run(
    options: SyncOptions,
    root: Path,
    tx: GitTransactions,
    batch: list[Candidate],
    described: dict[str, Any],
) -> dict[str, Any]:
    private = private_directory()
    try:
        staging, manifest = _prepare(options, tx, batch, private, described)
        change = validate_staging(staging, manifest)
    finally:
        remove_private_directory(private)
    return {"dryRun": True, **described, **change.describe()}


def _locked_run(  # noqa: PLR0917 - one private call site, every argument needed
    options: SyncOptions,
    tx: GitTransactions,
    run: OperationRun,
    clock: journal.RunClock,
    batch: list[Candidate],
    described: dict[str, Any],
    new_watermark: int,
) -> dict[str, Any]:
    counts = _session_counts(batch)
    private = private_directory()
    preview = options.mode == "preview"
    try:
        try:
            staging, manifest = _prepare(options, tx, batch, private, described)
            run.set_phase("validating")
            crash_point(VALIDATING)
            change = validate_staging(staging, manifest)
            head = check_live_unchanged(tx, manifest)
        except DshError as exc:
            if not preview:
                journal_failed_run(tx, run, clock, exc, counts)
            raise
        if preview:
            return _store_preview(options, tx, staging, manifest, change, described)
        digest = staging_digest(manifest["entries"], change)
        fields = {**counts, "staging_digest": digest}
        if not change.changed_paths:
            entry = journal.make_record(
                run_id=run.run_id,
                operation="sync",
                status="no_change",
                started_at=clock.started_at,
                duration_ms=clock.duration_ms(),
                staging_digest=digest,
            )
            entry.update(counts)
            run.set_phase("finalizing")
            commit = journal_outcome(tx, entry, new_watermark)
            options.progress("no memory changes, nothing to apply")
            unchanged: dict[str, Any] = {
                "status": "no_change",
                "runId": run.run_id,
                "changedPaths": [],
                "journalCommit": commit,
            }
            if commit is None:
                unchanged["journaled"] = False
            return {**unchanged, **described}
        outcome = apply_change_set(
            tx, run, clock, head=head, change=change, fields=fields, watermark_ns=new_watermark
        )
        options.progress(f"applied {len(change.changed_paths)} change(s) in run {run.run_id}")
        applied: dict[str, Any] = {
            "status": "applied",
            "runId": run.run_id,
            **change.describe(),
            "recoveryCommit": outcome.recovery_commit,
            "applyCommit": outcome.apply_commit,
            "journalCommit": outcome.journal_commit,
        }
        if not outcome.journaled:
            applied["journaled"] = False
            options.progress(f"run {run.run_id} is applied but not journaled; {RECOVER_HINT}")
        return {**applied, **described}
    finally:
        remove_private_directory(private)


def _store_preview(  # noqa: PLR0917 - one private call site
    options: SyncOptions,
    tx: GitTransactions,
    staging: Path,
    manifest: dict[str, Any],
    change: ChangeSet,
    described: dict[str, Any],
) -> dict[str, Any]:
    preview_id = str(options.preview_id)
    pending_previews(tx.root, clean=True)  # the lazy clean-up of expired previews
    if not change.changed_paths:
        return {"status": "no_change", "previewId": preview_id, "changedPaths": [], **described}
    directory = create_preview_directory(tx.root, preview_id)
    try:
        shutil.copytree(staging, directory / STAGING_DIR, symlinks=True)
        write_manifest(directory, manifest)
        record = write_preview_record(
            directory, preview_id, described["candidateSessions"], change.changed_paths
        )
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    options.progress(f"preview {preview_id} created (expires {record['expires_at']})")
    return {
        "status": "pending",
        "previewId": preview_id,
        "expiresAt": record["expires_at"],
        **change.describe(),
        **described,
    }
