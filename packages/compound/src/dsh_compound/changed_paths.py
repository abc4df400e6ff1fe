"""Which workspace files a commit or a pull request touched, read from git.

``check --staged`` (the pre-commit hook) and ``check --changed-since REV`` (a pull
request's CI job) look only at the lessons whose sources, or whose own record, are among
these paths. Every git process goes through :class:`dsh_common.git.GitRunner`: the
repository is untrusted input, and its config must not run anything on our behalf.

Paths are workspace-relative (``git diff --relative`` run from the workspace), so a
workspace that is a sub-folder of a repository sees its own files under the names its
records use. Renames are split into a deletion and an addition (``--no-renames``): a lesson
citing the old name must be selected, and so must one citing the new name.
"""

from __future__ import annotations

import os

from dsh_common.errors import GitError
from dsh_common.git import GitRunner
from dsh_compound.errors import GitRepositoryError, InvalidRevisionError

# Bounds: a pull request touching more files than this is read up to here and the rest is
# reported by the caller as a truncated selection; git's output cap keeps memory bounded.
MAX_OUTPUT_BYTES = 16 * 1024 * 1024


def _runner(workspace: str | os.PathLike[str]) -> GitRunner:
    return GitRunner(workspace, max_output=MAX_OUTPUT_BYTES)


def _names(output: bytes) -> set[str]:
    names: set[str] = set()
    for raw in output.split(b"\0"):
        if raw:
            names.add(os.fsdecode(raw))
    return names


def _inside_repository(runner: GitRunner) -> None:
    try:
        result = runner.run(["rev-parse", "--is-inside-work-tree"], check=False)
    except GitError as exc:
        raise GitRepositoryError(f"git could not be run: {exc.message}") from exc
    if result.returncode != 0 or result.text.strip() != "true":
        raise GitRepositoryError(
            f"the workspace {os.fspath(runner.cwd)!r} is not inside a git work tree"
        )


def _diff(runner: GitRunner, args: list[str]) -> set[str]:
    try:
        # Names only: no external diff program, no textconv filter may be asked for.
        result = runner.run(
            [
                "diff",
                "--name-only",
                "-z",
                "--no-renames",
                "--no-ext-diff",
                "--no-textconv",
                "--relative",
                *args,
            ]
        )
    except GitError as exc:
        raise GitRepositoryError(f"git diff failed: {exc.message}") from exc
    return _names(result.stdout)


def staged_paths(workspace: str | os.PathLike[str]) -> set[str]:
    """Paths whose staged content differs from HEAD (all staged paths before a first commit).

    Deletions are included: a commit that removes a lesson's source is exactly the one the
    pre-commit hook must catch.
    """
    runner = _runner(workspace)
    _inside_repository(runner)
    return _diff(runner, ["--cached"])


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
    try:
        commit = runner.rev_parse(f"{revision}^{{commit}}")
    except GitError as exc:
        raise GitRepositoryError(f"git rev-parse failed: {exc.message}") from exc
    if commit is None:
        raise InvalidRevisionError(
            f"{revision!r} names no commit in this repository (fetch it first: in CI, "
            "check out with enough history, e.g. fetch-depth: 0)"
        )
    changed = _diff(runner, [commit, "--"])
    try:
        untracked = runner.run(["ls-files", "-z", "--others", "--exclude-standard"])
    except GitError as exc:
        raise GitRepositoryError(f"git ls-files failed: {exc.message}") from exc
    return commit, changed | _names(untracked.stdout)
