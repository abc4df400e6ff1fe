"""A person's own edits, through the same validated transaction as a sync.

- ``write(path, content)``: one record (or summary.md) in, checked like a staged file
  (payload path, a name :mod:`dsh_memory.store.payload_names` accepts, 1 MiB, UTF-8, valid front
  matter, an id no other record has);
- ``remove(path)``: one payload file out;
- ``adopt()``: the hand edits already in the payload (what ``health`` reports as dirty) are
  checked and committed as one run, so editing memory in an editor is a supported path and
  ``needsManualRecovery`` clears.

Each is one run of the commit pipeline (:mod:`dsh_memory.write.pipeline`), journaled with
``operation: "edit"`` and undone with ``rollback``. For write and remove a dirty payload
elsewhere is first captured by a recovery checkpoint (as for a sync); adopt's recovery point
is HEAD, since the dirty files are its change.
"""

from __future__ import annotations

import hashlib
from typing import Any

from dsh_common.errors import DshError
from dsh_memory.errors import DuplicateIdError, EditInvalidRequestError, EditNotFoundError
from dsh_memory.store import fsops
from dsh_memory.store.frontmatter import is_record_path
from dsh_memory.store.payload_names import name_problem
from dsh_memory.store.root import SUMMARY_FILE, Layout, escape_name, live_payload_files
from dsh_memory.write import journal
from dsh_memory.write.apply import apply_change_set
from dsh_memory.write.pipeline import writer_run
from dsh_memory.write.transactions import GitTransactions
from dsh_memory.write.validation import MAX_FILE_BYTES, ChangeSet, check_text, diff, record_id


def validate_edit_path(path: object) -> str:
    """A payload file: ``summary.md`` or ``handbook|rollouts|archive/.../*.md``."""
    if not isinstance(path, str) or "\\" in path or "\0" in path:
        raise EditInvalidRequestError("the path must be a payload path such as handbook/x.md")
    if path != SUMMARY_FILE and not is_record_path(path):
        raise EditInvalidRequestError(
            f"{path!r} is not summary.md or a .md record under handbook/, rollouts/, archive/"
        )
    return path


def _live(tx: GitTransactions) -> dict[str, bytes]:
    return {
        p: fsops.read_file_nofollow(tx.root, p, MAX_FILE_BYTES * 8)
        for p in live_payload_files(tx.root)
    }


def _check_unique(files: dict[str, bytes], changed: list[str]) -> None:
    """The changed records' ids must not be carried by another record.

    Other records are parsed leniently: one already broken is not this edit's problem.
    """
    ids: dict[str, str] = {}
    for path in sorted(files):
        if path in changed:
            continue
        try:
            identifier = record_id(path, files[path].decode("utf-8"))
        except (DshError, UnicodeDecodeError):
            continue
        if identifier is not None:
            ids[identifier] = path
    for path in changed:
        identifier = record_id(path, check_text(path, files[path]))
        if identifier is not None and identifier in ids:
            raise DuplicateIdError(f"{path} and {ids[identifier]} both carry the id {identifier}")
        if identifier is not None:
            ids[identifier] = path


def _commit(layout: Layout, change: ChangeSet, *, checkpoint: bool) -> dict[str, Any]:
    tx = GitTransactions(layout)
    head = tx.require_head()
    run_id = journal.new_run_id(layout.root, "edit")
    clock = journal.RunClock()
    with writer_run(tx, "edit", run_id) as run:
        outcome = apply_change_set(
            tx, run, clock, head=head, change=change, fields={}, checkpoint=checkpoint
        )
    result: dict[str, Any] = {
        "status": "applied",
        "runId": run_id,
        "changedPaths": change.changed_paths,
        "recoveryCommit": outcome.recovery_commit,
        "applyCommit": outcome.apply_commit,
        "journalCommit": outcome.journal_commit,
    }
    if not outcome.journaled:
        result["journaled"] = False
    return result


def _digests(files: dict[str, bytes]) -> dict[str, str]:
    return {p: hashlib.sha256(d).hexdigest() for p, d in files.items()}


def validate_write_path(path: object) -> str:
    """:func:`validate_edit_path`, plus a name that can be committed and written back
    (:mod:`dsh_memory.store.payload_names`: Git-reserved components, the 237-byte file name)."""
    relative = validate_edit_path(path)
    problem = name_problem(relative)
    if problem is not None:
        raise EditInvalidRequestError(f"{escape_name(relative)}: {problem}")
    return relative


def write(layout: Layout, path: object, content: object) -> dict[str, Any]:
    relative = validate_write_path(path)
    if isinstance(content, str):
        content = content.encode("utf-8")
    if not isinstance(content, bytes):
        raise EditInvalidRequestError("write needs the file content")
    tx = GitTransactions(layout)
    live = _live(tx)
    proposed = {**live, relative: content}
    _check_unique(proposed, [relative])
    change = diff(_digests(live), {relative: content}, {})
    change.deleted = []  # the diff saw only the one file
    if not change.changed_paths:
        return {"status": "no_change", "runId": None, "changedPaths": []}
    return _commit(layout, change, checkpoint=True)


def remove(layout: Layout, path: object) -> dict[str, Any]:
    relative = validate_edit_path(path)
    tx = GitTransactions(layout)
    if relative not in live_payload_files(tx.root):
        raise EditNotFoundError(f"{relative} does not exist")
    return _commit(layout, ChangeSet(deleted=[relative]), checkpoint=True)


def adopt(layout: Layout) -> dict[str, Any]:
    """Commit the dirty payload as one ``edit`` run (checked like a sync result)."""
    tx = GitTransactions(layout)
    dirty = tx.payload_dirty_paths()
    if not dirty:
        return {"status": "no_change", "runId": None, "changedPaths": []}
    live = _live(tx)
    present = [p for p in dirty if p in live]
    head_files = tx.tree_files(tx.require_head())
    baseline = {p: "" for p in dirty if p in head_files}  # any digest differs from real ones
    change = diff(baseline, {p: live[p] for p in present}, {})  # names first (payload_names)
    _check_unique(live, present)
    return _commit(layout, change, checkpoint=False)
