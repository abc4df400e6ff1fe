"""The memory's Git remote: where it is, what we last heard from it, how it is shown.

The URL lives where Git keeps it, in the memory repository's own config
(``remote.origin.url``, with the fetch refspec ``+refs/heads/<branch>:refs/remotes/origin/
<branch>``). That config is untrusted like everything in the repository, so the URL is
checked again (:func:`dsh_common.git_remote.parse_remote_url`) every time it is read - a
URL written there by hand (``ext::sh -c ...``) is refused at the next pull or push exactly
as ``remote set`` would refuse it. Fetch and push are always given the checked URL itself,
never the remote's name, so nothing else of ``remote.origin.*`` is ever consulted.

The branch on the remote has the local branch's name (``main`` for every memory ``init``
made). What this machine last heard from the remote - the last fetch, pull and push, with
their time and result - is kept in ``<git dir>/dsh-memory/remote.json`` (0600, in a 0700
folder): it is this machine's own state, never committed or pushed, and holds no URL (a URL
may carry a credential, which is written to git's own config and nowhere else).
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from dsh_common.errors import DshError, GitError
from dsh_common.git import GitRunner
from dsh_common.git_remote import (
    TRANSFER_TIMEOUT,
    RemoteConfigError,
    RemoteUrl,
    RemoteUrlError,
    fetch_branch,
    parse_remote_url,
    redact_remote,
    redact_url,
)
from dsh_common.io import atomic_write, ensure_private_directory
from dsh_memory.errors import (
    InterruptedRunError,
    OperationInProgressError,
    RemoteFailedError,
    RemoteInvalidError,
    RemoteNotConfiguredError,
    RemoteUnavailableError,
    UnsafeConfigError,
)
from dsh_memory.store.root import Layout, require_memory_repository
from dsh_memory.write import journal
from dsh_memory.write.transactions import GitTransactions

REMOTE_NAME = "origin"
URL_KEY = f"remote.{REMOTE_NAME}.url"
FETCH_KEY = f"remote.{REMOTE_NAME}.fetch"
STATE_FILE = Path("dsh-memory") / "remote.json"
_STATE_MAX_BYTES = 64 * 1024
_BRANCH = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,200}")


@dataclass(frozen=True)
class Remote:
    """A checked remote and the branch we exchange with it."""

    url: RemoteUrl
    branch: str

    @property
    def tracking_ref(self) -> str:
        return f"refs/remotes/{REMOTE_NAME}/{self.branch}"


def current_branch(tx: GitTransactions) -> str:
    """The branch HEAD is on (the branch of the same name is the remote's)."""
    result = tx.git.run(["symbolic-ref", "--quiet", "--short", "HEAD"], check=False)
    branch = result.text.strip()
    if result.returncode != 0 or not _BRANCH.fullmatch(branch) or ".." in branch:
        raise RemoteFailedError(
            "the memory repository's HEAD is on no branch: check its branch out"
            f" (`git -C {tx.root} switch main`) before pulling or pushing"
        )
    return branch


def configured_url(tx: GitTransactions) -> str | None:
    """``remote.origin.url`` as the repository's own config holds it (unchecked), or None."""
    result = tx.git.run(["config", "--local", "--get", URL_KEY], check=False)
    if result.returncode == 1:
        return None
    if result.returncode != 0:
        raise RemoteFailedError(f"the repository config cannot be read: {result.stderr[:200]}")
    return result.stdout.decode("utf-8", "surrogateescape").rstrip("\n")


def checked(url: str, *, base: str | os.PathLike[str] | None = None) -> RemoteUrl:
    """``url`` checked as a remote (our ``remote-invalid`` when it is refused)."""
    try:
        return parse_remote_url(url, base=base)
    except RemoteUrlError as exc:
        raise RemoteInvalidError(exc.message) from None


def required_url(tx: GitTransactions) -> str:
    """``remote.origin.url`` (unchecked); ``remote-not-configured`` when none is set."""
    url = configured_url(tx)
    if url is None:
        raise RemoteNotConfiguredError(
            "this memory has no remote: run `dsh-memory remote set URL` first"
        )
    return url


def configured_remote(tx: GitTransactions) -> Remote:
    """The remote to pull from and push to; refused when none is set or its URL is not one
    we hand to git."""
    return Remote(checked(required_url(tx), base=tx.root), current_branch(tx))


def set_remote(layout: Layout, url: object, *, base: str | os.PathLike[str] | None = None) -> Any:
    """``remote set URL``: check it, then write it (and its fetch refspec) to git's config.

    A relative path is taken relative to ``base`` (the command's working directory).
    """
    if not isinstance(url, str):
        raise RemoteInvalidError("remote set needs a URL")
    remote_url = checked(url, base=base)
    require_memory_repository(layout)
    tx = GitTransactions(layout)
    branch = current_branch(tx)
    try:
        tx.git.run(["config", "--local", URL_KEY, remote_url.url])
        tx.git.run(
            [
                "config",
                "--local",
                "--replace-all",
                FETCH_KEY,
                f"+refs/heads/{branch}:refs/remotes/{REMOTE_NAME}/{branch}",
            ]
        )
    except GitError as exc:
        raise RemoteFailedError(f"the remote could not be written to git's config: {exc}") from exc
    _write_state(tx, {})  # a new remote: nothing heard from it yet
    return show(layout)


def remove_remote(layout: Layout) -> Any:
    """``remote remove``: forget the URL, its tracking ref and what we heard from it.

    Only in a memory repository: ``--root`` pointed at a project would otherwise delete the
    project's own ``origin``.
    """
    require_memory_repository(layout)
    tx = GitTransactions(layout)
    had = configured_url(tx) is not None
    with contextlib.suppress(DshError):
        tx.git.run(["config", "--local", "--remove-section", f"remote.{REMOTE_NAME}"], check=False)
        refs = tx.git.run(["for-each-ref", "--format=%(refname)", f"refs/remotes/{REMOTE_NAME}/"])
        for ref in refs.text.split():
            tx.git.run(["update-ref", "-d", ref], check=False)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tx.git_dir() / STATE_FILE)
    return {"removed": had, "remote": None}


# -- talking to it ---------------------------------------------------------------------------


def refuse_unfinished(tx: GitTransactions, doing: str) -> None:
    """Neither pull nor push works on a memory a writer holds or left half-done.

    A held lock is ``operation-in-progress``; an interrupted run, or HEAD a payload commit
    no journal commit followed, is ``interrupted-run`` (``recover`` first): the remote would
    otherwise get, or be merged into, a change this machine has not finished. A dead lock
    with no run left is ``operation-in-progress`` with the step that clears it.
    """
    from dsh_memory.store.observe import head_ahead_of_journal  # noqa: PLC0415
    from dsh_memory.store.oplock import (  # noqa: PLC0415
        dead_lock_message,
        finished_record,
        held_lock_message,
        read_active_run,
        read_operation_lock,
    )

    lock = read_operation_lock(tx.root)
    if lock is not None and lock["active"]:
        raise OperationInProgressError(f"{held_lock_message(tx.root, lock)}; try again later")
    active = read_active_run(tx.root)
    if (active is not None and active.get("state") == "interrupted") or head_ahead_of_journal(tx):
        raise InterruptedRunError(
            "this memory holds a run that did not finish: run `dsh-memory recover"
            f" --confirmation RECOVER_MEMORY` before {doing}"
        )
    if lock is not None and finished_record(tx.root, {"run_id": lock.get("runId")}) is None:
        raise OperationInProgressError(dead_lock_message(tx.root, lock))


def transfer_runner(tx: GitTransactions) -> GitRunner:
    """A runner whose time budget fits a long first fetch (the layout's runner has 60 s)."""
    return GitRunner(tx.root, budget=TRANSFER_TIMEOUT + 60)


def fetch_remote(tx: GitTransactions, remote: Remote) -> str | None:
    """Fetch the remote's branch into its tracking ref; its commit, None when it has none.

    The outcome (and its time) is remembered for status and health.
    """
    try:
        theirs = fetch_branch(transfer_runner(tx), remote.url, remote.branch, remote.tracking_ref)
    except RemoteConfigError as exc:
        record(tx, "lastFetch", {"status": "unsafe-config"})
        raise UnsafeConfigError(exc.message) from None
    except GitError as exc:
        record(tx, "lastFetch", {"status": RemoteUnavailableError.code})
        raise RemoteUnavailableError(
            f"could not fetch from {remote.url.shown}: {redact_url(exc.message)}"
        ) from None
    record(tx, "lastFetch", {"status": "ok", "remoteHead": theirs})
    return theirs


# -- what this machine last heard --------------------------------------------------------


def _state_path(tx: GitTransactions) -> Path:
    return tx.git_dir() / STATE_FILE


def read_state(tx: GitTransactions) -> dict[str, Any]:
    """The remembered last fetch, pull and push (empty when unknown or unreadable)."""
    try:
        with open(_state_path(tx), "rb") as handle:
            data = orjson.loads(handle.read(_STATE_MAX_BYTES))
    except (OSError, orjson.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_state(tx: GitTransactions, state: dict[str, Any]) -> None:
    path = _state_path(tx)
    ensure_private_directory(path.parent)
    atomic_write(path, orjson.dumps(state) + b"\n", mode=0o600)


def record(tx: GitTransactions, key: str, value: dict[str, Any]) -> None:
    """Remember ``value`` (stamped with the time) as the last ``key`` (best effort: a state
    file that cannot be written never fails the exchange it describes)."""
    state = read_state(tx)
    state[key] = {"at": journal.utc_iso(), **value}
    with contextlib.suppress(OSError, DshError):
        _write_state(tx, state)


# -- how it is shown -------------------------------------------------------------------------


def _counts(tx: GitTransactions, tracking_ref: str) -> tuple[int | None, int | None]:
    """(ahead, behind) of HEAD against the tracking ref; None when it does not exist."""
    result = tx.git.run(
        ["rev-list", "--left-right", "--count", f"HEAD...{tracking_ref}"], check=False
    )
    parts = result.text.split()
    if result.returncode != 0 or len(parts) != 2:
        return None, None
    return int(parts[0]), int(parts[1])


def _may_have_remote(tx: GitTransactions) -> bool:
    """False when the config file names no remote at all - read without starting git, so a
    memory without a remote pays nothing in ``status`` (an agent's frequent call)."""
    config = tx.root / ".git" / "config"
    if not (tx.root / ".git").is_dir():
        return True  # a linked git dir: ask git
    try:
        with open(config, "rb") as handle:
            text = handle.read(1 << 20).lower()
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return b"remote" in text or b"include" in text


def describe(tx: GitTransactions) -> dict[str, Any] | None:
    """``status``/``health``'s ``remote`` field: None when no remote is configured."""
    if not _may_have_remote(tx):
        return None
    raw = configured_url(tx)
    if raw is None:
        return None
    state = read_state(tx)
    try:
        remote_url: RemoteUrl | None = checked(raw, base=tx.root)
    except RemoteInvalidError:
        remote_url = None
    branch = None
    with contextlib.suppress(RemoteFailedError):
        branch = current_branch(tx)
    ahead, behind = _counts(tx, f"refs/remotes/{REMOTE_NAME}/{branch}") if branch else (None, None)
    fetched = state.get("lastFetch") if isinstance(state.get("lastFetch"), dict) else None
    return {
        "url": remote_url.shown if remote_url is not None else redact_remote(raw),
        "valid": remote_url is not None,
        "branch": branch,
        "ahead": ahead,
        "behind": behind,
        "lastFetchAt": fetched.get("at") if fetched else None,
        "lastPull": state.get("lastPull"),
        "lastPush": state.get("lastPush"),
    }


def show(layout: Layout) -> dict[str, Any]:
    """``dsh-memory remote``: the remote as status shows it, or ``{"remote": null}`` (in a
    memory repository only: a project's ``origin`` is not the memory's remote)."""
    require_memory_repository(layout)
    return {"remote": describe(GitTransactions(layout))}
