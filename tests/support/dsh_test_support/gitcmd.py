"""Plain git for building test fixtures and reading what a command left behind.

The code under test runs git through dsh-common's hardened ``GitRunner``; a test builds
its repositories and looks at their history with the real ``git`` program instead, so it
never relies on the code it checks. Each call is a process in ``cwd`` with the test's
hermetic environment (:mod:`dsh_test_support.home`) unless ``env`` says otherwise.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path

#: Long enough for any local operation; a hung git fails the test instead of the session
#: (a commit that runs hooks may need more: ``timeout``).
TIMEOUT = 120


def git(
    cwd: Path,
    *args: str,
    check: bool = True,
    input: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = TIMEOUT,
) -> str:
    """``git ARGS`` in ``cwd``; its stdout. ``check`` raises ``CalledProcessError`` on a
    non-zero exit (git's stderr noted on it); without it the output is returned whatever
    the exit."""
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            input=input,
            env=None if env is None else dict(env),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=check,
        )
    except subprocess.CalledProcessError as failed:
        failed.add_note(f"git {' '.join(args)} in {cwd}: {failed.stderr}")
        raise
    return done.stdout


def git_result(
    cwd: Path,
    *args: str,
    input: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = TIMEOUT,
) -> subprocess.CompletedProcess[str]:
    """``git ARGS`` in ``cwd``, never raising: for a test whose git command is meant to
    fail (a commit a hook refuses) and that reads its exit code and both streams."""
    return subprocess.run(
        ["git", *args],
        cwd=cwd,
        input=input,
        env=None if env is None else dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def init(root: Path, *, bare: bool = False, env: Mapping[str, str] | None = None) -> Path:
    """A new repository at ``root`` (created), on branch ``main``; ``root`` itself."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main", *(["--bare"] if bare else []), env=env)
    return root


def head(root: Path, *, env: Mapping[str, str] | None = None) -> str:
    """The full hash of ``HEAD``."""
    return git(root, "rev-parse", "HEAD", env=env).strip()


def commit_all(
    root: Path, message: str = "test commit", *, env: Mapping[str, str] | None = None
) -> str:
    """Stage everything in the work tree, commit it; the new ``HEAD``."""
    git(root, "add", "-A", env=env)
    git(root, "commit", "-q", "-m", message, env=env)
    return head(root, env=env)


def commit_file(
    root: Path,
    relative: str,
    text: str,
    message: str | None = None,
    *,
    env: Mapping[str, str] | None = None,
) -> str:
    """Write ``text`` to ``root/relative`` (folders created), commit that file alone; the
    new ``HEAD``."""
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    git(root, "add", "--", relative, env=env)
    message = message if message is not None else f"write {relative}"
    git(root, "commit", "-q", "-m", message, env=env)
    return head(root, env=env)
