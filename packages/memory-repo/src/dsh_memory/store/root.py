"""Where the memory repository lives, what belongs in it, and whether it is safe to touch.

Every operation starts with :func:`inspect_layout`: the root must be a real directory (not
a symlink), it must be the top level of its own Git work tree (a memory root nested inside
some other repository would make our commits land in the user's project), and none of the
payload or operational paths - nor anything below the payload folders - may be a symbolic
link. A symlink there could redirect a write or a delete outside the memory root.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from dsh_common.errors import GitError
from dsh_common.git import GitRunner
from dsh_memory.errors import InvalidMemoryPathError, RepoUnavailableError, UnsafeLayoutError

#: Payload: what the memory *is*. ``summary.md`` is a navigation file, the folders hold records.
SUMMARY_FILE = "summary.md"
RECORD_DIRS: tuple[str, ...] = ("handbook", "rollouts", "archive")
PAYLOAD_PATHS: tuple[str, ...] = (SUMMARY_FILE, *RECORD_DIRS)
#: Read-only for the host; operational bookkeeping that is never payload.
README_FILE = "README.md"
SYNC_DIR = ".sync"
LAST_SYNC_FILE = ".last-sync"
RUNS_DIR = ".sync/runs"
PREVIEWS_DIR = ".sync/previews"

#: Lines of ``.sync/.gitignore``: per-process state that must never be committed.
SYNC_GITIGNORE_LINES: tuple[str, ...] = (
    "operation.lock",
    "active-run.json",
    "previews/",
    "usage.json",
    "usage.lock/",
    ".usage.*.tmp",
    "search-index.sqlite",
    ".search-index.*.tmp",
)


def resolve_memory_root(
    root: str | os.PathLike[str] | None = None, *, env: Mapping[str, str] | None = None
) -> Path:
    """``root`` if given, else ``$DSH_MEMORY_ROOT``, else ``$DSH_HOME/storages/memory``,
    else ``~/.dsh/storages/memory``. Relative paths are made absolute (not resolved:
    resolving would hide a symlinked root from the layout check).

    A variable that is empty or only whitespace counts as unset (``DSH_HOME=" "`` would
    otherwise put the repository under the current directory). A root whose name is not
    UTF-8 is refused with ``invalid-path`` before anything is created.
    """
    environ = os.environ if env is None else env
    if root is not None and str(root).strip() != "":
        chosen = Path(root).expanduser()
    elif (environ.get("DSH_MEMORY_ROOT") or "").strip():
        chosen = Path(environ["DSH_MEMORY_ROOT"]).expanduser()
    else:
        chosen = dsh_home(environ) / "storages" / "memory"
    absolute = os.path.abspath(chosen)
    if not is_utf8_name(absolute):
        raise InvalidMemoryPathError(
            f"memory root {escape_name(absolute)} is not valid UTF-8; choose another path"
        )
    return Path(absolute)


def dsh_home(env: Mapping[str, str] | None = None) -> Path:
    """``$DSH_HOME`` or ``~/.dsh`` (an empty or whitespace-only ``DSH_HOME`` is unset)."""
    environ = os.environ if env is None else env
    home = environ.get("DSH_HOME")
    if home and home.strip():
        return Path(home).expanduser()
    user_home = environ.get("HOME")
    return (Path(user_home) if user_home and user_home.strip() else Path.home()) / ".dsh"


#: The memory repository's own marker: ``init`` (ours and the earlier tool's) commits
#: ``.sync/.gitignore`` naming the operation lock in the very first commit.
MARKER_FILE = ".sync/.gitignore"
MARKER_LINE = "operation.lock"
_MARKER_MAX_BYTES = 64 * 1024


@dataclass(frozen=True)
class Layout:
    """A memory root that passed inspection: its path and a git runner rooted there."""

    root: Path
    git: GitRunner


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return None


def check_root_directory(root: Path) -> None:
    """The root must exist as a directory and must not itself be a symlink."""
    info = _lstat(root)
    if info is None:
        raise RepoUnavailableError(f"memory root {root} does not exist")
    if stat.S_ISLNK(info.st_mode):
        raise UnsafeLayoutError(f"memory root {root} is a symbolic link")
    if not stat.S_ISDIR(info.st_mode):
        raise RepoUnavailableError(f"memory root {root} is not a directory")


def inspect_layout(root: Path, *, git: GitRunner | None = None) -> Layout:
    """Check the root and the payload/operational layout; return a :class:`Layout`.

    Raises RepoUnavailableError when the root is missing or not a Git work tree, and
    UnsafeLayoutError for a symlinked root, payload or ``.sync`` component, a payload path
    of the wrong kind, or a root that is not its own Git top level.
    """
    check_root_directory(root)
    runner = git if git is not None else GitRunner(root)
    try:
        top_level = runner.top_level()
    except GitError as exc:
        raise RepoUnavailableError(f"memory root {root} is not a Git work tree") from exc
    return _checked_layout(root, runner, top_level)


def inspect_memory_layout(root: Path) -> tuple[Layout, bool]:
    """:func:`inspect_layout` and :func:`has_memory_marker` together, in one git process
    when HEAD's marker is the one ``init`` writes today.

    ``rev-parse --show-toplevel HEAD:.sync/.gitignore`` prints the top level and the
    marker's blob id; a blob id equal to that of today's marker is the marker (same bytes,
    same answer as reading them). Anything else - no HEAD, no marker file, an older or the
    earlier tool's marker - takes the two separate steps, so the answers are always those of
    :func:`inspect_layout` and :func:`has_memory_marker`.
    """
    check_root_directory(root)
    runner = GitRunner(root)
    try:
        result = runner.run(["rev-parse", "--show-toplevel", f"HEAD:{MARKER_FILE}"], check=False)
    except GitError:
        result = None
    lines = result.text.split("\n") if result is not None and result.returncode == 0 else []
    if len(lines) == 3 and lines[2] == "" and lines[1] in _current_marker_ids():
        return _checked_layout(root, runner, Path(lines[0])), True
    layout = inspect_layout(root, git=runner)
    return layout, has_memory_marker(runner)


def _current_marker_ids() -> frozenset[str]:
    """Blob ids (SHA-1 and SHA-256 repositories) of the marker ``init`` writes today."""
    from dsh_memory.store.payload_state import blob_id  # noqa: PLC0415 - only context needs it

    data = "".join(line + "\n" for line in SYNC_GITIGNORE_LINES).encode("utf-8")
    return frozenset({blob_id(data, 40), blob_id(data, 64)})


def _checked_layout(root: Path, runner: GitRunner, top_level: Path) -> Layout:
    # realpath: an ancestor of the root may legitimately be a symlink (macOS /var).
    if os.path.realpath(top_level) != os.path.realpath(root):
        raise UnsafeLayoutError(
            f"memory root {root} is not the top level of its Git repository ({top_level})"
        )
    _check_kind(root, SUMMARY_FILE, want_dir=False)
    _check_kind(root, README_FILE, want_dir=False)
    _check_kind(root, LAST_SYNC_FILE, want_dir=False)
    for name in (*RECORD_DIRS, SYNC_DIR, RUNS_DIR, PREVIEWS_DIR):
        _check_kind(root, name, want_dir=True)
    for name in RECORD_DIRS:
        for _ in iter_payload_tree(root / name):
            pass
    return Layout(root=root, git=runner)


def has_memory_marker(git: GitRunner) -> bool:
    """Whether HEAD holds the memory repository's marker (see :data:`MARKER_FILE`)."""
    try:
        result = git.run(
            ["cat-file", "blob", f"HEAD:{MARKER_FILE}"], check=False, max_output=_MARKER_MAX_BYTES
        )
    except GitError:
        return False
    if result.returncode != 0:
        return False
    lines = result.stdout.decode("utf-8", "replace").splitlines()
    return MARKER_LINE in (line.strip() for line in lines)


def require_memory_repository(layout: Layout) -> None:
    """Refuse a write to a Git repository that is not a memory repository.

    Any repository passes :func:`inspect_layout`; ``DSH_MEMORY_ROOT=.`` inside a project
    would otherwise let ``clear`` delete the project's ``handbook/`` and commit to its
    branch. Every writer (clear, migrate, rollback, init over an existing history, and the
    sync-side writers) calls this first.
    """
    if not has_memory_marker(layout.git):
        raise RepoUnavailableError(
            f"{layout.root} is a Git repository but not a dsh memory repository: its HEAD has"
            f" no {MARKER_FILE} naming {MARKER_LINE} (written by `dsh-memory init`); point"
            " --root or DSH_MEMORY_ROOT at the memory repository"
        )


def _check_kind(root: Path, relative: str, *, want_dir: bool) -> None:
    info = _lstat(root / relative)
    if info is None:
        return
    if stat.S_ISLNK(info.st_mode):
        raise UnsafeLayoutError(f"{relative} is a symbolic link")
    ok = stat.S_ISDIR(info.st_mode) if want_dir else stat.S_ISREG(info.st_mode)
    if not ok:
        kind = "directory" if want_dir else "regular file"
        raise UnsafeLayoutError(f"{relative} is not a {kind}")


def iter_payload_tree(directory: Path) -> Iterator[Path]:
    """Every regular file below ``directory``, raising UnsafeLayoutError on any symlink or
    special file (a FIFO or device in the payload is as suspicious as a link)."""
    info = _lstat(directory)
    if info is None:
        return
    if stat.S_ISLNK(info.st_mode):
        raise UnsafeLayoutError(f"{directory.name} is a symbolic link")
    stack = [directory]
    while stack:
        current = stack.pop()
        with os.scandir(current) as entries:
            for entry in entries:
                path = Path(entry.path)
                if entry.is_symlink():
                    raise UnsafeLayoutError(f"{path} is a symbolic link")
                if entry.is_dir(follow_symlinks=False):
                    stack.append(path)
                elif entry.is_file(follow_symlinks=False):
                    yield path
                else:
                    raise UnsafeLayoutError(f"{path} is not a regular file")


def live_payload_files(root: Path) -> list[str]:
    """Root-relative paths (``/``-separated, sorted) of every payload file in the work tree,
    including ``summary.md`` when present."""
    found: list[str] = []
    if (info := _lstat(root / SUMMARY_FILE)) is not None and stat.S_ISREG(info.st_mode):
        found.append(SUMMARY_FILE)
    for name in RECORD_DIRS:
        for path in iter_payload_tree(root / name):
            found.append(path.relative_to(root).as_posix())
    return sorted(found)


def is_utf8_name(relative: str) -> bool:
    """Whether a path read from the file system or git is valid UTF-8.

    Names are decoded with ``surrogateescape``; a name that is not UTF-8 holds lone
    surrogates, which JSON cannot carry and Git trees written by the earlier tool never hold.
    """
    try:
        relative.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def escape_name(relative: str) -> str:
    """A printable form of any name: bytes that are not UTF-8 become ``\\xNN``."""
    return relative.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def is_payload_path(relative: str) -> bool:
    """``summary.md`` or anything under handbook/, rollouts/ or archive/."""
    return relative == SUMMARY_FILE or relative.split("/", 1)[0] in RECORD_DIRS


def is_record_path(relative: str) -> bool:
    """A Markdown record under handbook/, rollouts/ or archive/."""
    head, _, rest = relative.partition("/")
    return head in RECORD_DIRS and bool(rest) and relative.endswith(".md")
