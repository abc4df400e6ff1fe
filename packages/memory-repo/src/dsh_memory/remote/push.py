"""``dsh-memory push``: this memory's history to the Git remote, fast-forward only.

A push never rewrites the remote: no ``+`` refspec, no ``--force``. It first fetches, then
refuses - changing nothing on either side - when

* a writer holds the operation lock, a run was interrupted, or HEAD is a payload commit no
  journal commit followed (``operation-in-progress`` / ``interrupted-run``): the remote
  would get a change this machine has not finished;
* the remote has commits HEAD's history does not (``push-rejected``): pull first;
* the push would delete records from the remote that no journaled run since the remote's
  commit deleted (``push-unjournaled-deletion``) - a ``git rm`` by hand, or an empty clone
  committed over the memory: the loss the public tools suffered.

The remote itself can still refuse (another machine pushed meanwhile): ``push-rejected``.
A push is not a journaled run - a journal commit after it would be one more commit to push,
forever - but its time and result are remembered for status and health.
"""

from __future__ import annotations

import shlex
from typing import Any

import orjson

from dsh_common.errors import GitError
from dsh_common.git_remote import RemoteConfigError, redact_url
from dsh_common.git_remote import push as git_push
from dsh_memory.errors import (
    MemoryRepoError,
    PushRejectedError,
    PushUnjournaledDeletionError,
    RemoteUnavailableError,
    UnsafeConfigError,
)
from dsh_memory.remote.remote_config import (
    Remote,
    configured_remote,
    fetch_remote,
    record,
    refuse_unfinished,
    transfer_runner,
)
from dsh_memory.remote.remote_merge import read_texts
from dsh_memory.store.root import RUNS_DIR, Layout, escape_name, require_memory_repository
from dsh_memory.write.pipeline import OID_RE
from dsh_memory.write.transactions import GitTransactions

#: Journal statuses of runs that changed the payload (their changed_paths explain it).
_CHANGING = frozenset({"applied", "rolled_back", "interrupted"})
_SHOWN = 5


def push(layout: Layout) -> dict[str, Any]:
    """Push HEAD to the remote's branch (see the module docstring)."""
    require_memory_repository(layout)
    tx = GitTransactions(layout)
    remote = configured_remote(tx)
    try:
        result = _push(tx, remote)
    except MemoryRepoError as exc:
        record(tx, "lastPush", {"status": "failed", "code": exc.code})
        raise
    record(tx, "lastPush", {"status": result["status"], "commit": result["commit"]})
    return result


def _push(tx: GitTransactions, remote: Remote) -> dict[str, Any]:
    refuse_unfinished(tx, "pushing")
    head = tx.require_head()
    theirs = fetch_remote(tx, remote)
    answer = {
        "status": "up-to-date",
        "commit": head,
        "remoteHeadBefore": theirs,
        "branch": remote.branch,
        "url": remote.url.shown,
    }
    if theirs == head:
        return answer
    if theirs is not None and not tx.is_ancestor(theirs, head):
        missing = tx.git.run(["rev-list", "--count", f"{head}..{theirs}"]).text.strip()
        raise PushRejectedError(
            f"the remote has {missing} commit(s) this memory does not: run `dsh-memory pull`"
            " first (it merges them), then push; nothing was pushed"
        )
    deleted = unjournaled_deletions(tx, theirs, head)
    if deleted:
        raise PushUnjournaledDeletionError(_deletion_advice(tx, str(theirs), deleted))
    try:
        outcome = git_push(transfer_runner(tx), remote.url, head, remote.branch)
    except RemoteConfigError as exc:
        raise UnsafeConfigError(exc.message) from None
    except GitError as exc:
        raise RemoteUnavailableError(
            f"could not push to {remote.url.shown}: {redact_url(exc.message)}"
        ) from None
    if outcome.status == "rejected":
        raise PushRejectedError(
            f"the remote refused the push ({redact_url(outcome.reason)}): another machine"
            " probably pushed first; run `dsh-memory pull`, then push again"
        )
    tx.git.run(["update-ref", "-m", "dsh-memory push", remote.tracking_ref, head])
    answer["status"] = "pushed" if outcome.status == "pushed" else "up-to-date"
    return answer


def _deletion_advice(tx: GitTransactions, theirs: str, deleted: list[str]) -> str:
    """What to do about records a push would delete unjournaled - commands that work as
    written: the records are gone from HEAD already, so ``dsh-memory remove`` alone would
    answer ``edit-not-found``; they are restored and adopted first (a journaled run), and
    then removed by a journaled run of their own if they are to go."""
    root = shlex.quote(str(tx.root))
    paths = [shlex.quote(escape_name(p)) for p in deleted[:_SHOWN]]
    more = len(deleted) - len(paths)
    listed = " ".join(paths) + (f" (and {more} more)" if more else "")
    return (
        f"the push would delete {len(deleted)} record(s) from the remote that no journaled"
        f" run deleted: {listed}; nothing was pushed. To keep them: `git -C {root} restore"
        f" --source {theirs[:12]} -- {' '.join(paths)}` then `dsh-memory --root {root}"
        f" adopt`, and push. To delete them on every machine: the same two steps, then"
        f" `dsh-memory --root {root} remove <path>` for each, and push"
    )


def unjournaled_deletions(tx: GitTransactions, theirs: str | None, head: str) -> list[str]:
    """Payload paths the remote's commit holds and HEAD does not, that no run journaled
    since then deleted: a run explains a deletion when it lists the path among its changed
    paths *and* its apply commit (in HEAD's history) no longer holds it."""
    if theirs is None:
        return []
    before, after = tx.tree_files(theirs), tx.tree_files(head)
    deleted = sorted(set(before) - set(after))
    if not deleted:
        return []
    records = {
        path: blob
        for path, blob in tx.tree_diff(theirs, head).items()
        if path.startswith(f"{RUNS_DIR}/") and blob is not None
    }
    unexplained = {escape_name(p): p for p in deleted}
    for data in read_texts(tx, records).values():
        listed = _deleting_run(data)
        if listed is None:
            continue
        apply_commit, paths = listed
        candidates = sorted(unexplained[p] for p in paths if p in unexplained)
        if not candidates or not tx.is_ancestor(apply_commit, head):
            continue
        held = tx.tree_files(apply_commit, sorted({p.split("/", 1)[0] for p in candidates}))
        for path in candidates:
            if path not in held:
                unexplained.pop(escape_name(path), None)
    return sorted(unexplained.values())


def _deleting_run(data: bytes) -> tuple[str, set[str]] | None:
    """(apply commit, changed paths) of a journal record of a run that changed the payload."""
    try:
        run = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(run, dict) or run.get("status") not in _CHANGING:
        return None
    apply_commit, paths = run.get("apply_commit"), run.get("changed_paths")
    if not (isinstance(apply_commit, str) and OID_RE.fullmatch(apply_commit)):
        return None
    if not isinstance(paths, list):
        return None
    return apply_commit, {p for p in paths if isinstance(p, str)}
