"""No repository config can make the runner reach a transport (and so run a program).

The threat: a repository that says it is a partial clone of a promisor remote whose URL is
``ext::<command>``, with ``protocol.ext.allow always``. Plain git runs the command
the moment anything looks up an object it does not have; the runner must not, for every
command that can look up an object, and for every transport a repository can name.
"""

from __future__ import annotations

import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from dsh_test_support.gitcmd import git, git_result

from dsh_common.git import GitRunner, hardened_env

UNKNOWN = "0123456789abcdef0123456789abcdef01234567"


def plant_ext_promisor(repo: Path, marker: Path) -> None:
    """A promisor remote whose URL is an ``ext::`` command, as real config in
    ``repo/.git/config``."""
    git(repo, "config", "extensions.partialClone", "origin")
    git(repo, "config", "remote.origin.promisor", "true")
    git(repo, "config", "remote.origin.url", f"ext::sh -c touch% {marker}")
    git(repo, "config", "protocol.ext.allow", "always")


def plant_file_uploadpack(repo: Path, marker: Path) -> None:
    """A local promisor whose ``uploadpack`` is a command (file transport)."""
    git(repo, "config", "extensions.partialClone", "origin")
    git(repo, "config", "remote.origin.promisor", "true")
    git(repo, "config", "remote.origin.url", str(repo))
    git(repo, "config", "remote.origin.uploadpack", f"touch {marker}; git-upload-pack")
    git(repo, "config", "protocol.file.allow", "always")


def plant_ssh_command(repo: Path, marker: Path) -> None:
    """An ssh promisor with ``core.sshCommand`` naming a program."""
    git(repo, "config", "extensions.partialClone", "origin")
    git(repo, "config", "remote.origin.promisor", "true")
    git(repo, "config", "remote.origin.url", "ssh://attacker.invalid/x")
    git(repo, "config", "core.sshCommand", f"touch {marker}; false")
    git(repo, "config", "protocol.ssh.allow", "always")


def plant_named_helper(repo: Path, marker: Path) -> None:
    """``evil::x`` runs ``git-remote-evil`` from PATH; protocol.evil.allow says it may."""
    helper = repo.parent / "bin" / "git-remote-evil"
    helper.parent.mkdir(exist_ok=True)
    helper.write_text(f"#!/bin/sh\ntouch '{marker}'\nexit 1\n")
    helper.chmod(helper.stat().st_mode | stat.S_IXUSR)
    git(repo, "config", "extensions.partialClone", "origin")
    git(repo, "config", "remote.origin.promisor", "true")
    git(repo, "config", "remote.origin.url", "evil::x")
    git(repo, "config", "protocol.evil.allow", "always")


PLANTED: dict[str, Callable[[Path, Path], None]] = {
    "ext": plant_ext_promisor,
    "file-uploadpack": plant_file_uploadpack,
    "ssh-command": plant_ssh_command,
    "named-helper": plant_named_helper,
}

# Every way our code (or a future caller) can make git look up an object by id.
LOOKUPS: dict[str, list[str]] = {
    "cat-file -t": ["cat-file", "-t", UNKNOWN],
    "cat-file -e": ["cat-file", "-e", UNKNOWN],
    "cat-file -p": ["cat-file", "-p", f"{UNKNOWN}:tracked.txt"],
    "rev-parse commit": ["rev-parse", "--verify", "--quiet", f"{UNKNOWN}^{{commit}}"],
    "ls-tree": ["ls-tree", "-r", UNKNOWN],
    "show": ["show", UNKNOWN],
    "log": ["log", "-1", UNKNOWN],
    "rev-list": ["rev-list", UNKNOWN],
    "merge-base": ["merge-base", "--is-ancestor", UNKNOWN, "HEAD"],
    "diff": ["diff", UNKNOWN, "HEAD"],
    "read-tree": ["read-tree", UNKNOWN],
    "commit-tree parent": ["commit-tree", "-p", UNKNOWN, "-m", "x", "HEAD^{tree}"],
}


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "MARKER"


def _env_with_helper_path(repo: Path) -> dict[str, str]:
    env = dict(hardened_env())
    env.pop("GIT_ALLOW_PROTOCOL")
    env.pop("GIT_NO_LAZY_FETCH")
    env["PATH"] = f"{repo.parent / 'bin'}:{env['PATH']}"
    return env


@pytest.mark.parametrize("planted", sorted(PLANTED))
def test_plain_git_runs_each_planted_command(repo: Path, marker: Path, planted: str) -> None:
    # Proves each planted command really runs under this git: without the runner the marker
    # appears.
    PLANTED[planted](repo, marker)
    git_result(repo, "cat-file", "-t", UNKNOWN, env=_env_with_helper_path(repo))
    assert marker.exists()


@pytest.mark.parametrize("planted", sorted(PLANTED))
@pytest.mark.parametrize("lookup", sorted(LOOKUPS))
def test_runner_never_reaches_a_transport_when_an_object_is_missing(
    repo: Path,
    marker: Path,
    planted: str,
    lookup: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    PLANTED[planted](repo, marker)
    # The named helper really is on PATH for git to find: the runner must still refuse it.
    monkeypatch.setenv("PATH", f"{repo.parent / 'bin'}:{_env_with_helper_path(repo)['PATH']}")
    # A caller's own permissive setting must not leak through either.
    monkeypatch.setenv("GIT_ALLOW_PROTOCOL", "ext:file:ssh:evil")
    result = GitRunner(repo).run(LOOKUPS[lookup], check=False)
    assert result.returncode != 0
    assert not marker.exists()


def test_runner_batch_helpers_on_missing_objects_run_nothing(repo: Path, marker: Path) -> None:
    plant_ext_promisor(repo, marker)
    runner = GitRunner(repo)
    assert runner.cat_file_batch_check([UNKNOWN])[0].type == "missing"
    assert runner.cat_file_batch([f"{UNKNOWN}:tracked.txt"])[0].type == "missing"
    assert runner.rev_parse(f"{UNKNOWN}^{{commit}}") is None
    assert not marker.exists()


@pytest.mark.parametrize("planted", sorted(PLANTED))
def test_explicit_fetch_and_ls_remote_are_refused_too(
    repo: Path, marker: Path, planted: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Not a lazy fetch: the transport layer itself is closed, independent of
    # GIT_NO_LAZY_FETCH (which git before 2.39.4 ignores).
    PLANTED[planted](repo, marker)
    monkeypatch.setenv("PATH", _env_with_helper_path(repo)["PATH"])
    runner = GitRunner(repo)
    for args in (["fetch", "origin"], ["ls-remote", "origin"], ["pull", "origin"]):
        assert runner.run(args, check=False).returncode != 0
    assert not marker.exists()


def test_transport_name_allowed_by_the_environment_cannot_name_a_helper() -> None:
    # git-remote-<name> must be impossible as a file name (over 255 bytes), and the list
    # must not be empty (an empty list allows the transport named "").
    allowed = hardened_env()["GIT_ALLOW_PROTOCOL"]
    assert allowed
    assert ":" not in allowed
    assert "/" not in allowed
    assert len(("git-remote-" + allowed).encode()) > 255


def test_attributes_read_from_an_index_blob_the_repository_lacks_run_nothing(
    repo: Path, marker: Path
) -> None:
    # No .gitattributes in the work tree: git reads the index's, whose blob is missing -
    # so every check-attr (and anything that converts content) would fetch it lazily.
    plant_ext_promisor(repo, marker)
    git(repo, "update-index", "--add", "--cacheinfo", f"100644,{UNKNOWN},.gitattributes")
    git_result(repo, "check-attr", "-a", "tracked.txt")
    assert marker.exists()  # plain git runs it
    marker.unlink()
    runner = GitRunner(repo)
    for cached in ([], ["--cached"]):
        runner.run(["check-attr", *cached, "-a", "tracked.txt"], check=False)
    runner.run(["hash-object", "tracked.txt"], check=False)
    assert not marker.exists()
