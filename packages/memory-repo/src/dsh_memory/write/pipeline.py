"""The memory commit pipeline: the one way a writer moves HEAD, in one order, with one
crash-point naming.

The writers, each holding the operation lock through :func:`writer_run` (journal
``operation`` in brackets):

1. **sync** - ``dsh-memory-sync`` applying an agent's validated staging copy
   (:mod:`dsh_memory.sync.syncrun` through
   :func:`dsh_memory.write.apply.apply_change_set`) [``sync``];
2. **preview apply** - ``apply-preview`` (:mod:`dsh_memory.write.preview_apply`) [``preview``];
3. **write** - one payload file in (:func:`dsh_memory.write.edits.write`) [``edit``];
4. **remove** - one payload file out (:func:`dsh_memory.write.edits.remove`) [``edit``];
5. **adopt** - the hand edits already in the payload (:func:`dsh_memory.write.edits.adopt`)
   [``edit``];
6. **clear** (:func:`dsh_memory.write.operations.clear`) [``clear``];
7. **migrate-legacy** (:func:`dsh_memory.write.operations.migrate_legacy`) [``migrate``];
8. **rollback** (:mod:`dsh_memory.write.rollback`) [``rollback``, status ``rolled_back``];
9. **pull** - another machine's memory, fetched from the Git remote and merged
   (:mod:`dsh_memory.remote.pull`) [``pull``]: a commit of its own - the fetched commit itself
   (fast-forward), or a merge of the recovery point and the fetched commit; a new memory
   with no journaled run *adopts* the fetched history instead (the one proposal that need
   not descend from HEAD, whose old commit the pull keeps under a ref). A fast-forward that
   changes no payload (journal files only) is not journaled: two machines pulling each
   other's journal commits would otherwise never stop making new ones.

**recover** (:mod:`dsh_memory.write.recover`) finishes an interrupted run of any of them; it
makes no payload commit of its own, only repairs the live index and the work tree and then
journals through :func:`commit_journal`, this pipeline's journal step (crash points
``before-journal`` / ``after-journal``). Not writers: ``init``'s first commit (there is no
HEAD to compare against and no run to journal) and ``import --bundle`` (a new repository
pointed at the commits the bundle brings, then ``init``).

A writer hands :func:`commit_run` a *proposal* built on the recovery point - tree changes,
from which the pipeline builds the apply commit, or a commit the writer built itself (a
merge with two parents, say): :class:`Proposal`. The steps, and the crash point after each
(:mod:`dsh_memory.write.crashpoints`, test-only):

1. the recovery point: HEAD when the payload is clean, else a checkpoint commit of the
   live dirty payload ("DPSK memory recovery checkpoint: <run>")       -> ``after-recovery``
2. the apply commit: the proposal's tree changes on the recovery point, checked to hold
   every path it was given (Git drops some without failing), or the proposal's own commit,
   which must descend from HEAD and the recovery point; every path it writes to the work
   tree must fit the file system (:mod:`dsh_memory.store.payload_names`); both commits recorded
   in the active run                                                      -> ``before-cas``
3. ``update-ref HEAD <apply> <head>``, the compare-and-swap               -> ``after-cas``
4. the live index entries of the touched paths                            -> ``after-index``
5. the work tree                                                          -> ``before-journal``
6. the journal commit (with extra files such as the sync's watermark)     -> ``after-journal``

Failures:

- before the CAS nothing moved: the run is journaled ``failed`` with its code (when a commit
  is still possible) and the error raised;
- after it HEAD holds the change. A failed index or work-tree step is journaled ``applied``
  with its ``error_code`` and ``phase: "finalizing"`` and raised (:class:`FinalizeFailedError`
  unless it has a code of its own, such as ``unsafe-layout``); a failed journal commit is no
  error: the outcome says ``journaled`` False (the answers add ``"journaled": false``);
- in both cases the active-run record, which names both commits, is kept when the lock is
  released (status ``unfinished`` / ``unjournaled``): every later writer stops with
  ``interrupted-run`` - none may mistake the stale work tree for a person's edits and commit
  it - until ``recover`` rewrites what the run did not write and journals it.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dsh_common.errors import DshError
from dsh_memory.errors import CommitFailedError, FinalizeFailedError, MemoryRepoError
from dsh_memory.store import fsops
from dsh_memory.store.oplock import OperationRun, operation_lock
from dsh_memory.store.payload_names import root_name_max, write_problem
from dsh_memory.store.root import RECORD_DIRS, escape_name, is_payload_path
from dsh_memory.write import journal
from dsh_memory.write.crashpoints import (
    AFTER_CAS,
    AFTER_INDEX,
    AFTER_JOURNAL,
    AFTER_RECOVERY,
    BEFORE_CAS,
    BEFORE_JOURNAL,
    crash_point,
)
from dsh_memory.write.transactions import Blob, GitTransactions, TreeChanges

#: A commit id (SHA-1 or SHA-256 repositories).
OID_RE = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
#: The journal status of a finished run, by operation (anything else: ``applied``).
_DONE_STATUS = {"rollback": "rolled_back"}

#: A custom work-tree step: given the tree changes HEAD now holds, make the files match.
WorktreeStep = Callable[[TreeChanges], None]


def done_status(operation: str) -> str:
    """The status a finished run of ``operation`` is journaled with."""
    return _DONE_STATUS.get(operation, "applied")


@dataclass(frozen=True)
class Proposal:
    """What a writer commits on top of its recovery point: exactly one of

    - ``changes`` (``path -> Blob``, ``path -> None`` to delete): the pipeline builds the
      apply commit (``message``, the recovery point as its only parent) and checks its tree;
    - ``commit``: a commit the writer built itself, for instance a merge whose parents are
      the recovery point and a fetched commit; it must descend from HEAD and from the
      recovery point, and what it changes is read from the trees.

    ``contents`` maps blob ids to bytes the writer already holds (the work tree is then
    written from them; other blobs are read from Git in bounded chunks). ``changed_paths``
    is what the journal names (default: every path the commit changes); ``fields`` are
    added to the journal record. ``adopts``: the commit replaces a HEAD that holds no
    journaled run (a new memory taking a remote's history) and need not descend from it;
    the recovery point must then be HEAD itself.
    """

    changes: TreeChanges | None = None
    message: str = ""
    commit: str | None = None
    contents: Mapping[str, bytes] = field(default_factory=dict)
    changed_paths: Sequence[str] | None = None
    fields: Mapping[str, Any] = field(default_factory=dict)
    adopts: bool = False

    def __post_init__(self) -> None:
        if (self.changes is None) == (self.commit is None):
            raise ValueError("a proposal has either tree changes or a commit")
        if self.changes is not None and not self.message:
            raise ValueError("tree changes need a commit message")


@dataclass
class Outcome:
    """A run HEAD now holds: its commits, its journal record and commit (None: failed)."""

    recovery_commit: str
    apply_commit: str
    journal_commit: str | None
    record: dict[str, Any]
    changes: dict[str, Blob | None]

    @property
    def journaled(self) -> bool:
        return self.journal_commit is not None


@contextlib.contextmanager
def writer_run(tx: GitTransactions, operation: str, run_id: str) -> Iterator[OperationRun]:
    """The operation lock for one writer's run; a dead earlier run is journaled
    ``interrupted`` (with the commits it recorded) and ``interrupted-run`` raised."""
    with operation_lock(
        tx.root, operation, run_id, on_interrupted=journal_interrupted_run(tx)
    ) as run:
        yield run


def commit_run(
    tx: GitTransactions,
    run: OperationRun,
    clock: journal.RunClock,
    *,
    head: str,
    propose: Callable[[str], Proposal],
    checkpoint: bool = True,
    checkpoint_message: str | None = None,
    also: Iterable[str] = (),
    dirty: Sequence[str] | None = None,
    fields: Mapping[str, Any] | None = None,
    journal_files: Mapping[str, bytes] | None = None,
    worktree: WorktreeStep | None = None,
    journaled: bool = True,
) -> Outcome:
    """Commit one run (see the module docstring) and return its :class:`Outcome`.

    ``propose(recovery)`` is called with the recovery point once it exists. ``checkpoint``
    False makes HEAD the recovery point whatever the payload holds (``adopt``: the dirty
    files are the change; ``rollback``: the run's own half-written files); ``also`` names
    further live paths for the checkpoint, ``dirty`` the caller's own dirtiness answer (both
    are touched in the live index). ``fields`` go into the journal record, ``journal_files``
    into the journal commit. ``worktree`` replaces the default work-tree step.
    ``journaled`` False skips the journal step (a pull's journal-only fast-forward): the
    outcome's ``journal_commit`` is then None without anything having failed.
    """
    extra_fields = dict(fields or {})
    try:
        run.set_phase("applying")
        if checkpoint:
            message = checkpoint_message or f"DPSK memory recovery checkpoint: {run.run_id}"
            recovery, captured = tx.recovery_point(head, message, also=also, dirty=dirty)
        else:
            recovery, captured = head, list(dirty or [])
        crash_point(AFTER_RECOVERY)
        proposal = propose(recovery)
        commit, changes = _apply_commit(tx, head, recovery, proposal)
        _check_writable(tx, changes)
        try:
            run.record_commits(recovery, commit)
        except OSError as exc:
            raise CommitFailedError(f"the run's commits could not be recorded: {exc}") from exc
        crash_point(BEFORE_CAS)
        tx.move_head(commit, head)
    except MemoryRepoError as exc:
        journal_failed_run(tx, run, clock, exc, extra_fields)
        raise
    except (DshError, OSError, UnicodeError) as exc:
        failed = CommitFailedError(f"the {run.operation} commit could not be made: {exc}")
        journal_failed_run(tx, run, clock, failed, extra_fields)
        raise failed from exc
    crash_point(AFTER_CAS)
    paths = proposal.changed_paths if proposal.changed_paths is not None else sorted(changes)
    entry = journal.make_record(
        run_id=run.run_id,
        operation=run.operation,
        status=done_status(run.operation),
        started_at=clock.started_at,
        changed_paths=paths,
        recovery_commit=recovery,
        apply_commit=commit,
    )
    entry.update(extra_fields)
    entry.update(proposal.fields)
    failure = _finalize(
        tx,
        run,
        commit,
        changes,
        set(captured) | set(changes),
        worktree or _default_worktree(tx, proposal.contents),
    )
    if failure is not None:
        entry["error_code"] = failure.code
        entry["phase"] = "finalizing"
    entry["duration_ms"] = clock.duration_ms()
    if not journaled and failure is None:
        return Outcome(recovery, commit, None, entry, dict(changes))
    journal_commit = commit_journal(tx, entry, extra_files=journal_files)
    if failure is not None or journal_commit is None:
        # HEAD holds the run but the work tree or the journal does not: the record that
        # names both commits stays, so nobody commits the stale files and recover can finish.
        with contextlib.suppress(DshError, OSError):
            if failure is not None:
                run.keep_record(failure.code, status="unfinished")
            else:
                run.keep_record("journal-failed")
    if failure is not None:
        raise failure
    return Outcome(recovery, commit, journal_commit, entry, dict(changes))


def _apply_commit(
    tx: GitTransactions, head: str, recovery: str, proposal: Proposal
) -> tuple[str, dict[str, Blob | None]]:
    """The apply commit and the tree changes it makes on the recovery point."""
    if proposal.changes is not None:
        changes = dict(proposal.changes)
        tree = tx.build_tree(recovery, changes)
        dropped = tx.tree_mismatches(tree, changes)
        if dropped:
            raise CommitFailedError(
                f"git left {escape_name(dropped[0])} out of the commit ({len(dropped)} path(s)):"
                " refusing a commit without them"
            )
        return tx.commit_tree(tree, [recovery], proposal.message), changes
    commit = str(proposal.commit)
    if tx.git.rev_parse(f"{commit}^{{commit}}") != commit:
        raise CommitFailedError(f"{commit} is not a commit of this repository")
    if proposal.adopts:
        if recovery != head:
            raise CommitFailedError("an adopted history needs a clean payload (no checkpoint)")
    else:
        for base, name in ((head, "HEAD"), (recovery, "the recovery point")):
            if not tx.is_ancestor(base, commit):
                raise CommitFailedError(f"{commit} does not descend from {name} ({base})")
    return commit, tx.tree_diff(recovery, commit)


def _check_writable(tx: GitTransactions, changes: Mapping[str, Blob | None]) -> None:
    """Every file the work tree will receive must fit its file system: refused before the
    CAS, never found after it (HEAD would hold a record no work tree can)."""
    name_max = root_name_max(tx.root)
    for path, blob in changes.items():
        if blob is None:
            continue
        problem = write_problem(path, name_max)
        if problem is not None:
            raise CommitFailedError(f"{escape_name(path)} cannot be written: {problem}")


def _default_worktree(tx: GitTransactions, contents: Mapping[str, bytes]) -> WorktreeStep:
    def write(changes: TreeChanges) -> None:
        if all(blob is None or blob.oid in contents for blob in changes.values()):
            tx.materialize(changes, contents)
        else:
            tx.materialize_streamed(changes)
        for name in RECORD_DIRS:
            fsops.prune_empty_directories(tx.root, name)

    return write


def _finalize(  # noqa: PLR0917 - one private call site
    tx: GitTransactions,
    run: OperationRun,
    commit: str,
    changes: TreeChanges,
    touched: set[str],
    worktree: WorktreeStep,
) -> MemoryRepoError | None:
    """The live index, then the work tree; the failure (HEAD has moved), or None."""
    try:
        run.set_phase("finalizing")
        tx.sync_live_index(commit, touched)
        crash_point(AFTER_INDEX)
        worktree(changes)
    except (DshError, OSError, UnicodeError) as exc:
        return _finalize_failure(run, commit, exc)
    with contextlib.suppress(OSError):
        run.set_phase("complete")
    return None


def _finalize_failure(run: OperationRun, commit: str, exc: BaseException) -> MemoryRepoError:
    if isinstance(exc, MemoryRepoError) and not isinstance(exc, CommitFailedError):
        return exc  # its own code (a folder swapped for a link is unsafe-layout)
    failed = FinalizeFailedError(
        f"{run.operation} run {run.run_id} is applied (HEAD is {commit[:12]}), but the live"
        f" index or work tree could not be updated: {exc}; free the cause, then run"
        " `dsh-memory recover --confirmation RECOVER_MEMORY`"
    )
    failed.errno = exc.errno if isinstance(exc, OSError) else None
    failed.__cause__ = exc
    return failed


def commit_journal(
    tx: GitTransactions,
    entry: Mapping[str, Any],
    *,
    extra_files: Mapping[str, bytes] | None = None,
) -> str | None:
    """The pipeline's journal step: the journal commit, or None when it cannot be made.

    Also the whole pipeline of the runs that change no payload (a sync with nothing to
    apply, ``recover``).
    """
    crash_point(BEFORE_JOURNAL)
    try:
        commit: str | None = journal.journal_run(tx, entry, extra_files=extra_files)
    except (DshError, OSError):
        commit = None
    crash_point(AFTER_JOURNAL)
    return commit


def journal_failed_run(
    tx: GitTransactions,
    run: OperationRun,
    clock: journal.RunClock,
    exc: DshError,
    fields: Mapping[str, Any] | None = None,
) -> None:
    """Best effort: a run refused or failed before the CAS leaves a ``failed`` record."""
    entry = journal.make_record(
        run_id=run.run_id,
        operation=run.operation,
        status="failed",
        started_at=clock.started_at,
        phase=run.phase,
        error_code=exc.code,
        duration_ms=clock.duration_ms(),
    )
    entry.update(fields or {})
    with contextlib.suppress(DshError, OSError):
        journal.journal_run(tx, entry)


def interrupted_commits(
    tx: GitTransactions, active: Mapping[str, Any]
) -> tuple[str | None, str | None]:
    """(recovery commit, apply commit if HEAD's history holds it) of an interrupted run."""
    recovery, apply = active.get("recovery_commit"), active.get("apply_commit")
    if not (isinstance(recovery, str) and OID_RE.fullmatch(recovery)):
        return None, None
    if not (isinstance(apply, str) and OID_RE.fullmatch(apply)):
        return recovery, None
    return recovery, apply if tx.is_ancestor(apply, "HEAD") else None


def journal_interrupted_run(tx: GitTransactions) -> Callable[[dict[str, Any]], None]:
    """The lock's callback: journal a dead process's run as ``interrupted`` (once).

    The writer recorded its recovery and apply commits in the active run before moving
    HEAD; when the apply commit did reach HEAD's history the record keeps both, so the run
    stays visible as the change it was and ``rollback`` can still undo it. A run that
    finished but whose journal commit failed has its record in the work tree only: that
    record is committed as written instead.
    """

    def record(active: dict[str, Any]) -> None:
        run_id = active.get("run_id")
        if not journal.is_valid_run_id(run_id):
            return
        try:
            existing = journal.read_run(tx.root, str(run_id))
        except (OSError, ValueError):
            return  # an unreadable record is reported by health(), never overwritten
        if existing is not None and existing.get("status") == done_status(
            str(existing.get("operation"))
        ):
            if not journal.is_tracked(tx, str(run_id)):
                with contextlib.suppress(DshError, OSError):
                    journal.journal_run(tx, existing)
            return
        if existing is not None and existing.get("status") != "running":
            return  # never overwrite a record that already says how the run ended
        recovery, applied = interrupted_commits(tx, active)
        changed: list[str] = []
        if recovery is not None and applied is not None:
            with contextlib.suppress(DshError, UnicodeError):
                # Payload only: a pull's apply commit also brings journal files.
                changed = sorted(p for p in tx.tree_diff(recovery, applied) if is_payload_path(p))
        entry = journal.make_record(
            run_id=str(run_id),
            operation=str(active.get("operation") or "unknown"),
            status="interrupted",
            started_at=str(active.get("started_at") or journal.utc_iso()),
            phase=str(active.get("phase") or "staging"),
            changed_paths=changed,
            recovery_commit=recovery,
            apply_commit=applied,
            error_code=str(active.get("error_code") or "interrupted-run"),
        )
        with contextlib.suppress(DshError, OSError):
            journal.journal_run(tx, entry)  # else the interruption is still in health()

    return record
