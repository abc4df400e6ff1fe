from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest
from dsh_test_support.gitcmd import git, init

from dsh_common.errors import (
    GitError,
    GitOutputTooLargeError,
    GitTimeoutError,
    GitUnavailableError,
)
from dsh_common.git import GitRunner, hardened_env


def _marker_script(path: Path, marker: Path) -> Path:
    path.write_text(f"#!/bin/sh\necho ran >> '{marker}'\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_fsmonitor_and_hooks_configured_by_the_repository_never_run(
    repo: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "marker"
    script = _marker_script(tmp_path / "evil.sh", marker)
    git(repo, "config", "core.fsmonitor", str(script))
    for hook in ("pre-commit", "post-commit", "post-checkout", "reference-transaction"):
        _marker_script(repo / ".git" / "hooks" / hook, marker)
    (repo / "tracked.txt").write_text("changed\n")
    runner = GitRunner(repo)
    runner.run(["status", "--porcelain"])
    runner.run(["diff", "--stat"])
    runner.run(["commit", "-q", "-a", "-m", "through the runner"])
    runner.run(["update-ref", "refs/heads/other", "HEAD"])
    assert not marker.exists()
    # The same repository does run them under plain git: the test above is meaningful.
    git(repo, "status")
    assert marker.exists()


def test_caller_git_environment_is_ignored(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = init(tmp_path / "other")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    monkeypatch.setenv("GIT_INDEX_FILE", str(other / "index"))
    runner = GitRunner(repo)
    assert runner.top_level().resolve() == repo.resolve()
    assert [e.path for e in runner.ls_files_stage()] == ["tracked.txt"]
    env = hardened_env()
    assert not [
        k
        for k in env
        if k.startswith("GIT_")
        and k
        not in {
            "GIT_TERMINAL_PROMPT",
            "GIT_ASKPASS",
            "GIT_PAGER",
            "GIT_OPTIONAL_LOCKS",
            "GIT_ALLOW_PROTOCOL",
            "GIT_NO_LAZY_FETCH",
        }
    ]
    assert env["LC_ALL"] == "C"
    assert env["GIT_TERMINAL_PROMPT"] == "0"


def test_only_allowlisted_variables_may_be_passed(repo: Path) -> None:
    with pytest.raises(ValueError, match="GIT_DIR"):
        GitRunner(repo).run(["status"], env={"GIT_DIR": "/tmp"})


def test_alternate_index_through_git_index_file(repo: Path, tmp_path: Path) -> None:
    runner = GitRunner(repo)
    alternate = tmp_path / "alt-index"
    runner.run(["read-tree", "HEAD"], env={"GIT_INDEX_FILE": str(alternate)})
    runner.run(
        ["update-index", "--force-remove", "--", "tracked.txt"],
        env={"GIT_INDEX_FILE": str(alternate)},
    )
    assert runner.run(["ls-files"], env={"GIT_INDEX_FILE": str(alternate)}).text == ""
    assert runner.run(["ls-files"]).text == "tracked.txt\n"  # the real index is untouched


def test_errors_keep_argv_exit_code_and_stderr(repo: Path) -> None:
    with pytest.raises(GitError) as caught:
        GitRunner(repo).run(["rev-parse", "--verify", "no-such-ref"])
    error = caught.value
    assert error.exit_code == 128
    assert "no-such-ref" in error.argv
    assert "--literal-pathspecs" in error.argv
    assert "fatal" in error.stderr
    assert error.code == "git-failed"


def test_credentials_are_stripped_from_reported_argv(repo: Path) -> None:
    with pytest.raises(GitError) as caught:
        GitRunner(repo).run(["ls-remote", "https://user:s3cret@example.invalid/repo.git"])
    assert not any("s3cret" in arg for arg in caught.value.argv)
    assert "https://***@example.invalid/repo.git" in caught.value.argv


def test_output_is_capped(repo: Path) -> None:
    (repo / "big.txt").write_text("x" * 200_000)
    git(repo, "add", "big.txt")
    git(repo, "commit", "-q", "-m", "big")
    with pytest.raises(GitOutputTooLargeError):
        GitRunner(repo).run(["cat-file", "-p", "HEAD:big.txt"], max_output=1000)


def _fake_git(tmp_path: Path, body: str) -> str:
    script = tmp_path / "fake-git"
    script.write_text(f"#!{sys.executable}\nimport sys, time\n{body}\n")
    script.chmod(0o755)
    return str(script)


def test_per_command_timeout_kills_a_hung_git(tmp_path: Path) -> None:
    runner = GitRunner(tmp_path, timeout=0.5, git=_fake_git(tmp_path, "time.sleep(30)"))
    with pytest.raises(GitTimeoutError) as caught:
        runner.run(["status"])
    assert caught.value.code == "git-timeout"
    assert caught.value.budget_exhausted is False
    assert runner.remaining_budget < runner.budget


def test_total_budget_is_shared_across_commands(tmp_path: Path) -> None:
    runner = GitRunner(tmp_path, timeout=5, budget=0.4, git=_fake_git(tmp_path, "time.sleep(0.3)"))
    runner.run(["status"])
    with pytest.raises(GitTimeoutError) as early:
        runner.run(["status"])  # 0.1 s left: killed early
    assert early.value.budget_exhausted is True
    with pytest.raises(GitTimeoutError, match="budget") as spent:
        runner.run(["status"])  # nothing left: not even started
    assert spent.value.budget_exhausted is True
    assert runner.commands_run == 2


def test_large_input_and_output_do_not_deadlock(tmp_path: Path) -> None:
    echo = _fake_git(tmp_path, "data = sys.stdin.buffer.read(); sys.stdout.buffer.write(data * 2)")
    payload = os.urandom(3 * 1024 * 1024)
    result = GitRunner(tmp_path, git=echo).run(["x"], input=payload)
    assert result.stdout == payload * 2


def test_pathspecs_are_literal(repo: Path) -> None:
    (repo / "*.txt").write_text("star\n")
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", "--", "*.txt", "a.txt")
    entries = GitRunner(repo).ls_files_stage(["*.txt"])
    assert [e.path for e in entries] == ["*.txt"]


def test_batch_helpers_use_one_process_for_many_paths(repo: Path) -> None:
    names = [f"f{i}.txt" for i in range(50)]
    for name in names:
        (repo / name).write_text(f"content {name}\n")
    git(repo, "add", *names)
    git(repo, "commit", "-q", "-m", "many")
    runner = GitRunner(repo)
    index = {e.path: e for e in runner.ls_files_stage(names)}
    hashed = runner.hash_objects(names)
    objects = runner.cat_file_batch([f"HEAD:{n}" for n in names] + ["HEAD:nope"])
    checks = runner.cat_file_batch_check([f"HEAD:{n}" for n in names[:3]])
    assert runner.commands_run == 4
    assert hashed == [index[n].object_id for n in names]
    assert objects[0].content == b"content f0.txt\n"
    assert objects[0].type == "blob"
    assert objects[-1].type == "missing"
    assert objects[-1].content is None
    assert [c.size for c in checks] == [len(f"content {n}\n") for n in names[:3]]
    assert all(e.stage == 0 and e.mode == "100644" for e in index.values())


def test_hash_objects_never_runs_a_clean_filter(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "filter-ran"
    script = _marker_script(tmp_path / "filter.sh", marker)
    git(repo, "config", "filter.evil.clean", str(script))
    git(repo, "config", "filter.evil.process", str(script))
    (repo / ".gitattributes").write_text("*.txt filter=evil\n")
    (repo / "tracked.txt").write_text("changed\n")
    GitRunner(repo).hash_objects(["tracked.txt"])
    assert not marker.exists()


def test_rev_parse(repo: Path) -> None:
    runner = GitRunner(repo)
    head = runner.rev_parse("HEAD")
    assert head is not None and len(head) == 40
    assert runner.rev_parse("refs/heads/missing") is None
    with pytest.raises(ValueError):
        runner.rev_parse("--all")


def test_git_missing_is_a_typed_error(tmp_path: Path) -> None:
    with pytest.raises(GitUnavailableError, match="could not be started") as caught:
        GitRunner(tmp_path, git=str(tmp_path / "no-git-here")).run(["status"])
    assert caught.value.code == "git-unavailable"
