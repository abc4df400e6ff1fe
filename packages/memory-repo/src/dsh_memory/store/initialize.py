"""``dsh-memory init``: create the memory repository, or leave a complete one untouched.

The first commit holds the scaffold only (README.md, an empty summary.md, ``.last-sync``,
``.sync/.gitignore`` and the executable ``scripts/filter_session.py``) with the earlier
tool's exact message "Initialize DPSK memory repository". The earlier tool's sync refuses a
repository that lacks any of these as "incomplete", and it hardens the same modes: the root,
``.git`` and every folder 0700, README.md, summary.md, .last-sync and .sync/.gitignore
0600, the filter script 0700 (``.git`` holds every record ever written, so it is private
like the rest; a ``.git`` that is a file or a link is left as it is). When git has no
author identity, init sets the repository-local one the earlier tool sets ("DPSK Memory"
<dpsk-memory@localhost>), so a fresh machine works. README.md describes the layout and
holds the section ``## 提炼与整合`` (distill and consolidate) that both tools' sync agents
are told to read first (:data:`README_TEXT`).

The first commit is made with the same plumbing as every other write (alternate index,
``commit-tree``, ``update-ref HEAD <new> <zero>``), so it cannot clobber a HEAD that
appeared meanwhile. Re-running init creates whatever scaffold is missing on disk but never
commits again once HEAD exists: HEAD is unchanged on a rerun.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import Any

from dsh_common import programs as _programs
from dsh_common import secrets as _detector
from dsh_common.errors import DshError, GitError
from dsh_common.git import GitRunner
from dsh_memory.errors import InitFailedError, UnsafeLayoutError
from dsh_memory.store.root import (
    LAST_SYNC_FILE,
    README_FILE,
    RECORD_DIRS,
    SUMMARY_FILE,
    SYNC_DIR,
    SYNC_GITIGNORE_LINES,
    check_root_directory,
    has_memory_marker,
    inspect_layout,
    require_memory_repository,
)
from dsh_memory.sync.redaction import __file__ as _REDACTION_SOURCE
from dsh_memory.write.transactions import EXECUTABLE_MODE, FILE_MODE, Blob, GitTransactions

INITIAL_COMMIT_MESSAGE = "Initialize DPSK memory repository"
SCRIPTS_DIR = "scripts"
FILTER_SCRIPT = "scripts/filter_session.py"
#: The identity the earlier tool's init configures in the repository when git has none.
LOCAL_IDENTITY = (("user.name", "DPSK Memory"), ("user.email", "dpsk-memory@localhost"))

#: The heading both syncs' agents are told to read first: the earlier tool's staging prompt
#: points its agent at this README's "「提炼与整合」一节" and refuses changes to the file.
CONSOLIDATION_HEADING = "## 提炼与整合"

README_TEXT = f"""# DPSK memory

This Git repository is the local memory of your coding agents, managed by `dsh-memory`
(its format is that of seriousz158/dsh-memory, so both tools can work on it).

- `summary.md` - a short navigation summary that is shown to the agent (untrusted context).
- `handbook/` - durable records: preferences, facts, decisions, procedures, constraints.
- `rollouts/` - per-session notes that handbook records cite as provenance.
- `archive/` - records kept for reference but excluded from default search.
- `scripts/filter_session.py` - turns a session log into a short, redacted transcript.
- `.last-sync` - the sync watermark: sessions older than it are not read again.
- `.sync/` - the run journal (`runs/`, `last-run.json`) and private, Git-ignored state
  (operation lock, active run, previews, usage sidecar, search index).

Every change is a Git commit made by `dsh-memory` with a recovery point before it, so any
run can be inspected (`dsh-memory runs`) and rolled back (`dsh-memory rollback`). Do not
rewrite this repository's history.

## Rules

1. Keep only verified conclusions that are worth having in a later session; no chat, no
   long reasoning, no pasted output.
2. Never write a credential (token, password, API key, connection string): write
   `[REDACTED]` instead.
3. Session logs are read-only sources; this repository is the only place memory is kept.

{CONSOLIDATION_HEADING}

The rules for the agent that turns session transcripts into memory (distill, then
consolidate). 把会话转录变成记忆的代理遵循以下规则 (先提炼, 再整合)。

**提炼 (distill).** 每段转录只取高信号的内容: 稳定的用户偏好、最终的决定及其理由、
失败模式和解决办法、项目入口、可复现的命令、明确约定的后续事项。没有值得保留的内容时,
什么也不改 (NO_SIGNAL)。
From each transcript take only what carries signal: stable user preferences, final
decisions and their reasons, failure modes and their fixes, project entry points,
reproducible commands, agreed follow-ups. When nothing is worth keeping, change nothing
(NO_SIGNAL).

**整合 (consolidate).** 写入前先和已有的记录比较: 与新证据矛盾的记录直接改写 (不另写一份),
过时的记录移到 `archive/`, 没有变化就不制造改动; 稳定偏好同步到 `summary.md`, 并保持简短。
Before writing, compare with the records already here: a record the new evidence
contradicts is rewritten (never a second copy beside it), an outdated one moves to
`archive/`, and nothing changes when nothing is new. Stable preferences go into
`summary.md`, which stays short.

**格式与边界 (format and bounds).** 每条记录是带 front matter 的 Markdown
(`schema_version: 1`, `id`, `type`; 引用来源会话时写 `source_rollouts`)。只修改
`summary.md`、`handbook/`、`rollouts/`、`archive/`; 不修改本 README, 不执行 git:
宿主程序会校验、提交并记录每次改动。
Every record is Markdown with front matter (`schema_version: 1`, `id`, `type`, and
`source_rollouts` when it cites a session). Change only `summary.md`, `handbook/`,
`rollouts/` and `archive/`; never this README, and run no git command: the host validates,
commits and journals every change.
"""


#: The lines of :mod:`dsh_memory.sync.redaction` that are not standard library, and the
#: dsh-common modules (standard library only themselves) whose source replaces them.
INLINED_IMPORTS = (
    (
        "from dsh_common.programs import resolve_program  # inlined into filter_session.py\n",
        _programs,
    ),
    (
        "from dsh_common.secrets import Span, is_secret_name, redact"
        "  # inlined into filter_session.py\n",
        _detector,
    ),
)
_FUTURE_IMPORT = "from __future__ import annotations\n"


def filter_script_source() -> bytes:
    """The session filter: :mod:`dsh_memory.sync.redaction`'s source, runnable on its own.

    Its imports of the shared secret detector and program resolver are replaced by their
    source (minus the ``__future__`` import, which the script already has at the top), so
    the script needs no installed package and redacts exactly what the sync command redacts.
    """
    script = Path(_REDACTION_SOURCE).read_text(encoding="utf-8")
    for line, module in INLINED_IMPORTS:
        source = Path(str(module.__file__)).read_text(encoding="utf-8")
        if script.count(line) != 1 or source.count(_FUTURE_IMPORT) != 1:
            raise InitFailedError("the session filter's source is not the one init can inline")
        inlined = (
            f"# --- {module.__name__}, inlined: the code the sync command uses ---\n"
            + source.replace(_FUTURE_IMPORT, "")
            + f"# --- end of {module.__name__} ---\n"
        )
        script = script.replace(line, inlined)
    return script.encode("utf-8")


def _scaffold_files() -> dict[str, tuple[bytes, int]]:
    gitignore = "".join(line + "\n" for line in SYNC_GITIGNORE_LINES)
    return {
        README_FILE: (README_TEXT.encode("utf-8"), 0o600),
        SUMMARY_FILE: (b"", 0o600),
        LAST_SYNC_FILE: (b"", 0o600),
        f"{SYNC_DIR}/.gitignore": (gitignore.encode("utf-8"), 0o600),
        FILTER_SCRIPT: (filter_script_source(), 0o700),
    }


def _harden(path: Path, mode: int) -> None:
    """chmod a regular file or folder we own; a symlink is never followed."""
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        raise UnsafeLayoutError(f"{path} is a symbolic link")
    os.chmod(path, mode)


def _harden_git_dir(path: Path) -> None:
    """``.git`` 0700 when it is a real folder (as the earlier tool's init leaves it)."""
    info = os.lstat(path)
    if stat.S_ISDIR(info.st_mode):
        os.chmod(path, 0o700)


def _ensure_identity(git: GitRunner) -> None:
    """Set the earlier tool's repository-local identity when git resolves none."""
    for key, value in LOCAL_IDENTITY:
        try:
            current = git.run(["config", "--get", key], check=False).text.strip()
        except GitError:
            current = ""
        if not current:
            git.run(["config", "--local", key, value])


def _create_if_absent(path: Path, data: bytes, mode: int) -> bool:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    except FileExistsError:
        return False
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.chmod(path, mode)
    return True


def _make_private_dir(path: Path) -> None:
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700)
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise UnsafeLayoutError(f"{path} is a symbolic link or not a directory")


def initialize_repository(root: Path) -> dict[str, Any]:
    """Create (or complete) the memory repository at ``root``.

    Returns ``{"root", "created", "headCommit"}``: ``created`` is true when this call made
    the first commit.
    """
    try:
        root.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            root.mkdir(mode=0o700)
    except OSError as exc:
        raise InitFailedError(f"memory root {root} cannot be created: {exc}") from exc
    check_root_directory(root)
    git = GitRunner(root)
    try:
        if not (root / ".git").exists():
            git.run(["init", "-q", "--initial-branch=main"])
    except GitError as exc:
        raise InitFailedError(f"git init failed in {root}: {exc}") from exc
    layout = inspect_layout(root, git=git)
    if GitTransactions(layout).head() is not None and not has_memory_marker(git):
        # An existing history that is not a memory repository (a project, DSH_MEMORY_ROOT=.):
        # writing the scaffold into it would mix memory files into someone's work tree.
        require_memory_repository(layout)
    try:
        os.chmod(root, 0o700)
        _harden_git_dir(root / ".git")
        for name in (*RECORD_DIRS, SYNC_DIR, SCRIPTS_DIR):
            _make_private_dir(root / name)
            _harden(root / name, 0o700)
        for relative, (data, mode) in _scaffold_files().items():
            _create_if_absent(root / relative, data, mode)
            _harden(root / relative, mode)
    except OSError as exc:
        raise InitFailedError(f"memory scaffold cannot be written: {exc}") from exc
    tx = GitTransactions(layout)
    head = tx.head()
    if head is not None:
        return {"root": str(root), "created": False, "headCommit": head}
    try:
        _ensure_identity(git)
        files = _scaffold_files()
        paths = sorted(files)
        # The committed content is what is on disk now (a pre-existing file is kept).
        contents = [(root / path).read_bytes() for path in paths]
        oids = tx.write_blobs(contents)
        modes = {p: EXECUTABLE_MODE if files[p][1] & 0o100 else FILE_MODE for p in paths}
        tree = tx.build_tree(None, {p: Blob(modes[p], o) for p, o in zip(paths, oids, strict=True)})
        commit = tx.commit_tree(tree, [], INITIAL_COMMIT_MESSAGE)
    except (DshError, OSError) as exc:
        raise InitFailedError(f"the first commit could not be made: {exc}") from exc
    tx.advance_head(commit, None, paths)
    return {"root": str(root), "created": True, "headCommit": commit}
