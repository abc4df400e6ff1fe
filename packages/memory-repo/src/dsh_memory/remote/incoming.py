"""What a pull may bring in: the memory's own files, and nothing else.

A remote is another machine's memory, so its history holds what a memory holds - records,
the summary, journal records, the operational files ``init`` writes. Anything else in it
was put there by hand or by an attacker: a ``.gitattributes`` that would select a filter,
a ``.sync/operation.lock`` that would stop every writer here, a symlink or a submodule,
a name this file system cannot hold. :func:`check_incoming` refuses the whole pull when the
commits it would bring change such a path (``remote-content-refused``), before anything of
this memory changes.
"""

from __future__ import annotations

from dsh_memory.errors import RemoteContentRefusedError
from dsh_memory.store.payload_names import name_problem
from dsh_memory.store.root import (
    LAST_SYNC_FILE,
    MARKER_FILE,
    MARKER_LINE,
    README_FILE,
    RUNS_DIR,
    escape_name,
    is_payload_path,
)
from dsh_memory.write import journal
from dsh_memory.write.transactions import EXECUTABLE_MODE, FILE_MODE, Blob, GitTransactions

#: Operational files a memory's history holds besides its payload and run records.
OPERATIONAL_FILES = frozenset(
    {README_FILE, LAST_SYNC_FILE, MARKER_FILE, ".sync/last-run.json", "scripts/filter_session.py"}
)
#: Names that change how git treats other files (attributes select filters and merge drivers).
_GIT_CONTROL_NAMES = frozenset({".gitattributes", ".gitmodules", ".gitignore"})
#: Shown in a refusal: the first few paths.
_SHOWN = 5


def problem(path: str, blob: Blob | None) -> str | None:
    """Why a memory never holds ``blob`` at ``path`` (None: it may; ``blob`` None: the
    path is deleted, and only where it is matters)."""
    if blob is not None and blob.mode not in (FILE_MODE, EXECUTABLE_MODE):
        kind = {"120000": "a symbolic link", "160000": "a submodule"}.get(blob.mode, "no file")
        return f"{kind} (mode {blob.mode})"
    if path in OPERATIONAL_FILES:
        return None
    if path.startswith(f"{RUNS_DIR}/"):
        name = path[len(RUNS_DIR) + 1 :]
        run_id = name.removesuffix(".json")
        if name.endswith(".json") and journal.is_valid_run_id(run_id):
            return None
        return "not a journal record name"
    if not is_payload_path(path):
        return "outside the memory's layout"
    if any(part.lower() in _GIT_CONTROL_NAMES for part in path.split("/")):
        return "a git control file"
    return name_problem(path) if blob is not None else None


def empty_tree(tx: GitTransactions) -> str:
    """The empty tree's id (written, so diff-tree can compare against it)."""
    return tx.git.run(["mktree", "-z"], input=b"").text.strip()


def is_memory(tx: GitTransactions, commit: str) -> bool:
    """Whether ``commit`` holds the memory repository's marker (``init`` commits it first)."""
    result = tx.git.run(
        ["cat-file", "blob", f"{commit}:{MARKER_FILE}"], check=False, max_output=64 * 1024
    )
    lines = result.stdout.decode("utf-8", "replace").splitlines()
    return result.returncode == 0 and MARKER_LINE in (line.strip() for line in lines)


def check_incoming(tx: GitTransactions, base: str | None, theirs: str) -> None:
    """Refuse (``remote-content-refused``) when ``theirs`` is no memory repository (a
    project pointed at by mistake), or changes, against ``base`` (the merge base; None: no
    common history, every path of theirs is new), a path a memory never holds."""
    if not is_memory(tx, theirs):
        raise RemoteContentRefusedError(
            f"the remote's branch is not a dsh memory repository: its commit {theirs[:12]} has"
            f" no {MARKER_FILE} naming {MARKER_LINE}; nothing was changed - is the remote"
            " URL the memory's?"
        )
    changed = tx.tree_diff(base if base is not None else empty_tree(tx), theirs)
    refused = [(p, why) for p, blob in sorted(changed.items()) if (why := problem(p, blob))]
    if refused:
        listed = "; ".join(f"{escape_name(p)}: {why}" for p, why in refused[:_SHOWN])
        raise RemoteContentRefusedError(
            f"the remote's history changes {len(refused)} path(s) a memory never holds"
            f" ({listed}); nothing was changed - remove them from the remote's history or"
            " point this memory at another remote"
        )
