"""The run journal: one metadata-only JSON record per run under ``.sync/runs``.

Records are compact JSON (``JSON.stringify``), mode 0600, with the field set and order of
the earlier tool, so either implementation can read the other's journal.
``.sync/last-run.json`` repeats a subset of the newest run. Both are committed by a
"DPSK memory journal: <run>" commit that touches only ``.sync`` - never the payload, which
is why a journal commit after a run does not block rolling that run back.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from dsh_common.errors import DshError
from dsh_common.io import read_bounded
from dsh_common.jsonio import dumps
from dsh_memory.errors import CommitFailedError
from dsh_memory.store import fsops
from dsh_memory.store.root import RUNS_DIR, escape_name
from dsh_memory.write.transactions import FILE_MODE, Blob, GitTransactions

SCHEMA_VERSION = 1
LAST_RUN_FILE = ".sync/last-run.json"
#: A clear of 100,000 files journals 100,000 changed paths (~3 MB): read up to 32 MiB.
MAX_RECORD_BYTES = 32 * 1024 * 1024
RUN_ID_RE = re.compile(r"^[0-9]{8}T[0-9]{6}Z-[0-9A-Za-z][0-9A-Za-z_.-]{0,80}$")
PHASES = ("staging", "validating", "applying", "finalizing", "complete")

_LAST_RUN_FIELDS = (
    "run_id",
    "operation",
    "status",
    "started_at",
    "finished_at",
    "changed_paths",
    "recovery_commit",
    "apply_commit",
    "error_code",
    "phase",
    "staging_digest",
    "duration_ms",
    "rejected_file_count",
    "changed_path_count",
)


def utc_stamp(moment: _dt.datetime | None = None) -> str:
    """``YYYYMMDDTHHMMSSZ``, the prefix of every run id."""
    return (moment or _dt.datetime.now(_dt.UTC)).strftime("%Y%m%dT%H%M%SZ")


def utc_iso(moment: _dt.datetime | None = None) -> str:
    """``YYYY-MM-DDTHH:MM:SSZ`` as the journal's timestamps are written."""
    return (moment or _dt.datetime.now(_dt.UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_run_id(root: Path, operation: str) -> str:
    """Host operations are ``<stamp>-<operation>-<pid>`` (sync runs use 8 hex instead).

    One process can run two operations within a second: a ``-<4 hex>`` suffix then keeps
    the second from overwriting the first's record.
    """
    return unique_run_id(root, f"{utc_stamp()}-{operation}-{os.getpid()}")


def is_valid_run_id(run_id: object) -> bool:
    return isinstance(run_id, str) and RUN_ID_RE.fullmatch(run_id) is not None


def run_record_path(run_id: str) -> str:
    return f"{RUNS_DIR}/{run_id}.json"


class RunClock:
    """When a run started, for ``started_at`` and ``duration_ms``."""

    def __init__(self) -> None:
        self.started_at = utc_iso()
        self._monotonic = time.monotonic()

    def duration_ms(self) -> int:
        return int((time.monotonic() - self._monotonic) * 1000)


def make_record(
    *,
    run_id: str,
    operation: str,
    status: str,
    started_at: str,
    changed_paths: Sequence[str] = (),
    recovery_commit: str | None = None,
    apply_commit: str | None = None,
    error_code: str | None = None,
    phase: str = "complete",
    duration_ms: int = 0,
    staging_digest: str | None = None,
) -> dict[str, Any]:
    """A journal record with every field of the earlier tool's format, in its order."""
    paths = sorted(escape_name(path) for path in changed_paths)
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "operation": operation,
        "status": status,
        "started_at": started_at,
        "finished_at": utc_iso(),
        "candidate_sessions": 0,
        "processed_sessions": 0,
        "skipped_sessions": 0,
        "changed_paths": paths,
        "recovery_commit": recovery_commit,
        "apply_commit": apply_commit,
        "error_code": error_code,
        "phase": phase,
        "staging_digest": staging_digest,
        "duration_ms": duration_ms,
        "rejected_file_count": 0,
        "changed_path_count": len(paths),
    }


def last_run_subset(record: Mapping[str, Any]) -> dict[str, Any]:
    return {field: record.get(field) for field in _LAST_RUN_FIELDS}


def journal_run(
    tx: GitTransactions,
    record: Mapping[str, Any],
    *,
    extra_files: Mapping[str, bytes] | None = None,
    update_last_run: bool = True,
) -> str:
    """Write the run record and last-run.json, and commit only those files.

    ``extra_files`` adds operational files to the same commit (the sync's ``.last-sync``
    watermark, as the earlier tool's journal commit does).

    The files are written to the work tree *first*: a writer killed before the journal
    commit still leaves a readable record naming the run's commits (``rollback`` reads
    records from the work tree), and the commit then only makes it part of history.
    Returns the journal commit. Raises CommitFailedError when the commit cannot be made.
    """
    run_id = str(record["run_id"])
    files = {run_record_path(run_id): (dumps(record) + "\n").encode("utf-8")}
    if update_last_run:
        files[LAST_RUN_FILE] = (dumps(last_run_subset(record)) + "\n").encode("utf-8")
    files.update(extra_files or {})
    try:
        for path, data in files.items():
            fsops.replace_file(tx.root, path, data, mode=0o600)
        head = tx.require_head()
        paths = sorted(files)
        oids = tx.write_blobs([files[path] for path in paths])
        changes: dict[str, Blob | None] = {
            path: Blob(FILE_MODE, oid) for path, oid in zip(paths, oids, strict=True)
        }
        tree = tx.build_tree(head, changes)
        commit = tx.commit_tree(tree, [head], f"DPSK memory journal: {run_id}")
    except (DshError, OSError) as exc:
        raise CommitFailedError(f"journal commit failed: {exc}") from exc
    tx.move_head(commit, head)
    # The journal is in history now. A live-index refresh that fails leaves only the two
    # ``.sync`` entries stale (never payload): not worth reporting the journal as failed.
    with contextlib.suppress(CommitFailedError):
        tx.sync_live_index(commit, paths)
    return commit


def is_tracked(tx: GitTransactions, run_id: str) -> bool:
    """Whether HEAD holds the journal record of ``run_id`` (not only the work tree)."""
    result = tx.git.run(["cat-file", "-e", f"HEAD:{run_record_path(run_id)}"], check=False)
    return result.returncode == 0


def read_json_file(path: Path) -> Any:
    """Parsed JSON of a small file; None when absent; raises OSError/ValueError otherwise."""
    try:
        raw = read_bounded(path, MAX_RECORD_BYTES)
    except FileNotFoundError:
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"{path} is not valid JSON") from exc


def read_run(root: Path, run_id: str) -> dict[str, Any] | None:
    """The journal record of ``run_id`` from the work tree, or None."""
    if not is_valid_run_id(run_id):
        return None
    data = read_json_file(root / run_record_path(run_id))
    return data if isinstance(data, dict) else None


def read_last_run(root: Path) -> dict[str, Any] | None:
    data = read_json_file(root / LAST_RUN_FILE)
    return data if isinstance(data, dict) else None


def journaled_run_ids(tx: GitTransactions) -> list[str]:
    """Run ids of the records Git tracks under ``.sync/runs``, newest first."""
    ids: list[str] = []
    for entry in tx.git.ls_files_stage([RUNS_DIR]):
        name = entry.path.rsplit("/", 1)[-1]
        if entry.path.count("/") == 2 and name.endswith(".json"):
            ids.append(name[: -len(".json")])

    # Newest first by the second-resolution stamp in the id; two runs in one second are
    # ordered by when their record was written (the id's suffix says nothing about time).
    def order(run_id: str) -> tuple[str, int, str]:
        try:
            written = os.lstat(tx.root / run_record_path(run_id)).st_mtime_ns
        except OSError:
            written = 0
        return (run_id[:16], written, run_id)

    return sorted(set(ids), key=order, reverse=True)


def unique_run_id(root: Path, base: str) -> str:
    """``base``, or ``base-<4 hex>`` if a record with that id already exists."""
    if not (root / run_record_path(base)).exists():
        return base
    return f"{base}-{os.urandom(2).hex()}"
