"""A finished payload commit at HEAD that no journal record names, and its record.

Every writer of ours follows its payload commit with a journal commit. Some of the earlier
tool's writers do not: its CLI ``dsh-memory-sync --apply-preview`` applies the preview
(recovery and apply commits, work tree and index) and never journals - the apply
commit's subject even names the run ``preview`` instead of the preview id - and its host
``clear`` never journals either. A writer whose journal step failed leaves the same
shape. ``health()`` sees HEAD ahead of the journal; ``recover`` journals the change here
so that ``runs`` lists it and ``rollback`` can undo it (:func:`head_landing`,
:func:`landing_record`).
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass
from typing import Any

from dsh_common.errors import DshError
from dsh_memory.write import journal
from dsh_memory.write.transactions import GitTransactions

_APPLIED = "DPSK memory sync applied: "
_CLEARED = "DPSK memory cleared"
_ROLLBACK = "DPSK memory rollback: "
#: A pull's merge commit (:mod:`dsh_memory.remote.pull`); its first parent is the recovery point.
PULL_MERGED = "DPSK memory pull merged: "
#: The run id the earlier tool's preview apply writes into its commit subjects.
EARLIER_PREVIEW_RUN = "preview"
#: ``<stamp>-<operation>-<pid>``: a host operation's run id says which operation it was.
_HOST_RUN = re.compile(r"[0-9]{8}T[0-9]{6}Z-([a-z]+)-[0-9]+(?:-[0-9a-f]{4})?")
_HOST_OPERATIONS = frozenset({"migrate", "clear", "edit", "preview", "rollback", "pull"})


@dataclass(frozen=True)
class Landing:
    """HEAD's payload commit and what its subject says about the run that made it."""

    commit: str
    parent: str
    subject: str
    operation: str
    status: str
    #: The run id the subject names, when it is one (``None``: a new id is needed).
    run_id: str | None
    committed: _dt.datetime


def _operation_of(named: str) -> tuple[str, str | None]:
    if named == EARLIER_PREVIEW_RUN:
        return "preview", None
    if not journal.is_valid_run_id(named):
        return "sync", None
    match = _HOST_RUN.fullmatch(named)
    if match is not None and match.group(1) in _HOST_OPERATIONS:
        return match.group(1), named
    return "sync", named


def head_landing(tx: GitTransactions) -> Landing | None:
    """HEAD, when it is a sync-applied, cleared or rollback commit the journal lacks.

    None when HEAD is anything else (a journal commit follows every journaled change), or
    when a record for the run its subject names already exists.
    """
    try:
        line = tx.git.run(
            ["log", "-1", "--no-show-signature", "--format=%H%x00%P%x00%ct%x00%s", "HEAD"],
            check=False,
        ).text.strip()
    except DshError:
        return None
    fields = line.split("\0")
    if len(fields) != 4 or not fields[1]:
        return None
    commit, parents, stamp, subject = fields
    if subject.startswith(_APPLIED):
        operation, run_id = _operation_of(subject[len(_APPLIED) :])
        status = "applied"
    elif subject == _CLEARED:
        operation, run_id, status = "clear", None, "applied"
    elif subject.startswith(_ROLLBACK):
        operation, run_id, status = "rollback", None, "rolled_back"
    elif subject.startswith(PULL_MERGED):
        named = subject[len(PULL_MERGED) :]
        operation, status = "pull", "applied"
        run_id = named if journal.is_valid_run_id(named) else None
    else:
        return None
    if run_id is not None:
        try:
            if journal.read_run(tx.root, run_id) is not None:
                return None
        except (OSError, ValueError):
            return None
    committed = _dt.datetime.fromtimestamp(int(stamp), _dt.UTC)
    return Landing(commit, parents.split()[0], subject, operation, status, run_id, committed)


def landing_record(
    tx: GitTransactions, landing: Landing, litter: dict[str, Any] | None
) -> dict[str, Any]:
    """The journal record of ``landing``: its commits, the payload paths it changed.

    ``litter`` is an active-run record the earlier tool's host left behind; when it is
    the same operation (its ``clear``), its run id and start time name the run.
    """
    run_id = landing.run_id
    started_at = journal.utc_iso(landing.committed)
    if (
        run_id is None
        and litter is not None
        and litter.get("operation") == landing.operation
        and journal.is_valid_run_id(litter.get("run_id"))
        and journal.read_run(tx.root, str(litter["run_id"])) is None
    ):
        run_id = str(litter["run_id"])
        started_at = str(litter.get("started_at") or started_at)
    if run_id is None:
        run_id = journal.unique_run_id(
            tx.root, f"{journal.utc_stamp(landing.committed)}-{landing.operation}"
        )
    before, after = tx.tree_files(landing.parent), tx.tree_files(landing.commit)
    changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
    return journal.make_record(
        run_id=run_id,
        operation=landing.operation,
        status=landing.status,
        started_at=started_at,
        changed_paths=changed,
        recovery_commit=landing.parent,
        apply_commit=landing.commit,
    )
