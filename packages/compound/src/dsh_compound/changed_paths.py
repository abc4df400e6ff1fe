"""Which workspace files a commit or a pull request touched, read from git.

``check --staged`` (a pre-commit hook), ``check --changed-since REV`` (a pull request's CI
job) and ``check --pre-commit`` look only at the lessons whose sources, or whose own record,
are among these paths. Every git process goes through :class:`dsh_common.git.GitRunner`:
the repository is untrusted input, and its config must not run anything on our behalf.

Paths are workspace-relative (``git diff --relative`` run from the workspace), so a
workspace that is a sub-folder of a repository sees its own files under the names its
records use. Renames are split into a deletion and an addition (``--no-renames``): a lesson
citing the old name must be selected, and so must one citing the new name.

A git failure is never read as "nothing changed": a gate that could not see the change
must not pass it. Each failure has its own code (``git-failed``, ``git-timeout``,
``git-output-too-large``); only a directory outside any work tree is
``not-a-git-repository``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from dsh_common import errors as common_errors
from dsh_common.git import GitResult, GitRunner
from dsh_compound.errors import (
    GitFailedError,
    GitOutputTooLargeError,
    GitRepositoryError,
    GitTimeoutError,
    InvalidRevisionError,
    UnsafeIndexFileError,
)

# git's output cap. Past it the command is stopped and the check fails with
# git-output-too-large instead of gating on part of the change; 16 MiB of NUL-separated
# names is some hundred thousand paths.
MAX_OUTPUT_BYTES = 16 * 1024 * 1024

_DIFF = ["diff", "--name-only", "-z", "--no-renames", "--no-ext-diff", "--no-textconv"]


def _runner(workspace: str | os.PathLike[str]) -> GitRunner:
    return GitRunner(workspace, max_output=MAX_OUTPUT_BYTES)


def _names(output: bytes) -> set[str]:
    names: set[str] = set()
    for raw in output.split(b"\0"):
        if raw:
            names.add(os.fsdecode(raw))
    return names


def _run(
    runner: GitRunner,
    args: Sequence[str],
    *,
    check: bool = True,
    env: Mapping[str, str] | None = None,
) -> GitResult:
    """``git <args>``, each way it can fail told apart (see the module docstring)."""
    what = f"git {args[0]}"
    try:
        return runner.run(args, check=check, env=env)
    except common_errors.GitTimeoutError as exc:
        raise GitTimeoutError(f"{what} did not finish in time: {exc.message}") from exc
    except common_errors.GitOutputTooLargeError as exc:
        raise GitOutputTooLargeError(
            f"{what} named more changed paths than its {MAX_OUTPUT_BYTES // (1024 * 1024)} "
            "MiB output cap allows; no lesson was checked (check without --staged, "
            "--changed-since or --pre-commit looks at every lesson)"
        ) from exc
    except common_errors.GitError as exc:
        raise GitFailedError(f"{what} failed: {exc.message}") from exc


def _inside_repository(runner: GitRunner) -> None:
    result = _run(runner, ["rev-parse", "--is-inside-work-tree"], check=False)
    if result.returncode != 0 or result.text.strip() != "true":
        raise GitRepositoryError(
            f"the workspace {os.fspath(runner.cwd)!r} is not inside a git work tree"
        )


def _diff(runner: GitRunner, args: list[str], env: Mapping[str, str] | None = None) -> set[str]:
    # Names only: no external diff program, no textconv filter may be asked for.
    return _names(_run(runner, [*_DIFF, "--relative", *args], env=env).stdout)


def _commit(runner: GitRunner, revision: str) -> str:
    if not revision or revision.startswith("-"):
        raise InvalidRevisionError(f"not a revision: {revision!r}")
    named = f"{revision}^{{commit}}"
    result = _run(
        runner, ["rev-parse", "--verify", "--quiet", "--end-of-options", named], check=False
    )
    if result.returncode != 0:
        raise InvalidRevisionError(
            f"{revision!r} names no commit in this repository (fetch it first: in CI, "
            "check out with enough history, e.g. fetch-depth: 0)"
        )
    return result.text.strip()


def checked_index_file(runner: GitRunner, value: str) -> str:
    """The absolute path of the index ``GIT_INDEX_FILE`` names, refused unless it is a
    regular file inside the repository's git directory.

    git commit runs its hooks with ``GIT_INDEX_FILE`` naming the index the commit is made
    from: ``.git/index``, ``.git/index.lock`` for ``commit -a``, ``.git/next-index-*.lock``
    for ``commit <paths>``. The hardened runner drops every ``GIT_*`` variable, so without
    passing this one on, ``--staged`` would read the repository's index and miss exactly
    those commits. Any other value is not git's own and could make us read an arbitrary
    file as an index: :class:`UnsafeIndexFileError`. git reads a relative value from the
    work tree's top level; so do we.
    """
    top = _run(runner, ["rev-parse", "--show-toplevel"]).text.rstrip("\n")
    git_dir = os.path.realpath(_run(runner, ["rev-parse", "--absolute-git-dir"]).text.strip())
    location = os.path.realpath(os.path.join(top, value))
    inside = location != git_dir and os.path.commonpath([location, git_dir]) == git_dir
    if not inside or not os.path.isfile(location):
        raise UnsafeIndexFileError(
            f"GIT_INDEX_FILE={value!r} is not a file in this repository's git directory "
            f"({git_dir}); --staged reads only an index git keeps there (unset "
            "GIT_INDEX_FILE to read the repository's own index)"
        )
    return location


def staged_paths(
    workspace: str | os.PathLike[str],
    *,
    index_file: str | None = None,
    deletions_only: bool = False,
) -> set[str]:
    """Paths whose staged content differs from HEAD (all staged paths before a first commit).

    Deletions are included: a commit that removes a lesson's source is exactly the one the
    pre-commit hook must catch. ``index_file`` is the ``GIT_INDEX_FILE`` git gave the hook
    (see :func:`checked_index_file`); ``deletions_only`` keeps to the paths the index
    deletes.
    """
    runner = _runner(workspace)
    _inside_repository(runner)
    env = None
    if index_file:
        env = {"GIT_INDEX_FILE": checked_index_file(runner, index_file)}
    return _diff(runner, ["--cached", *(["--diff-filter=D"] if deletions_only else [])], env)


def paths_changed_since(workspace: str | os.PathLike[str], revision: str) -> tuple[str, set[str]]:
    """``(commit, paths)``: the commit ``revision`` names and every path changed since it.

    A path counts when its content in the work tree differs from ``revision`` (committed,
    staged or not) or when it is a new file git does not ignore: what a pull request
    branch changed against its base, uncommitted work included.
    """
    if not revision or revision.startswith("-"):
        raise InvalidRevisionError(f"not a revision: {revision!r}")
    runner = _runner(workspace)
    _inside_repository(runner)
    commit = _commit(runner, revision)
    changed = _diff(runner, [commit, "--"])
    untracked = _run(runner, ["ls-files", "-z", "--others", "--exclude-standard"])
    return commit, changed | _names(untracked.stdout)


def paths_changed_between(
    workspace: str | os.PathLike[str], from_ref: str, to_ref: str
) -> set[str]:
    """Every path ``to_ref`` changed since it forked from ``from_ref``.

    The comparison pre-commit makes for ``--from-ref``/``--to-ref`` and a push: from the
    merge base of the two (``from...to``), or from ``from_ref`` itself when the two share
    no history.
    """
    runner = _runner(workspace)
    _inside_repository(runner)
    old, new = _commit(runner, from_ref), _commit(runner, to_ref)
    base = _run(runner, ["merge-base", old, new], check=False)
    if base.returncode not in (0, 1):  # 1: no common history
        raise GitFailedError(f"git merge-base failed with exit code {base.returncode}")
    start = base.text.strip() if base.returncode == 0 else old
    return _diff(runner, [start, new, "--"])
