"""``check`` as a gate: exit codes, GitHub annotations, and only what a change touched.

The gate runs the installed ``dsh-compound`` console script on real git repositories (its
exit code is what CI and git hooks see); lessons are captured in process to set up.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from dsh_test_support import commands, in_process
from dsh_test_support.gitcmd import git, git_result, head, init

from dsh_compound.check_report import github_annotations

BIN = commands.program("dsh-compound")


def dsh(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return commands.run("dsh-compound", *args, cwd=cwd)


def capture(repo: Path, workspace: Path, **fields: object) -> None:
    draft = {
        "title": "Login requests time out",
        "tags": ["login"],
        "problem": "p",
        "rootCause": "r",
        "resolution": "x",
        "whenToUse": "w",
        "verification": {"command": "make test", "result": "passed"},
        **fields,
    }
    (workspace / "draft.json").write_text(json.dumps(draft, ensure_ascii=False))
    # Setting up, not the gate under test: the command line in process.
    done = in_process.run(
        "dsh-compound",
        "capture",
        "--input",
        "draft.json",
        "--workspace",
        str(workspace),
        cwd=workspace,
    )
    assert done.returncode == 0, done.stderr
    (workspace / "draft.json").unlink()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A committed repository with two lessons: one on config/, one on src/."""
    root = tmp_path / "repo"
    (root / "config").mkdir(parents=True)
    (root / "src").mkdir()
    (root / "config" / "test.json").write_text('{"poolSize": 2}\n')
    (root / "src" / "login.js").write_text("export const timeoutMs = 30000;\n")
    (root / "src" / "pool.js").write_text("export const size = 2;\n")
    (root / "README.md").write_text("readme\n")
    init(root)
    capture(root, root, id="login-timeout", files=["config/test.json", "src/login.js"])
    capture(root, root, id="pool-size", title="Pool size, 100% of it", files=["src/pool.js"])
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "lessons")
    return root


def run_check(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return dsh("check", "--workspace", str(repo), *args, cwd=repo)


def test_without_fail_on_the_exit_stays_zero_and_the_json_is_unchanged(repo: Path) -> None:
    (repo / "config" / "test.json").write_text('{"poolSize": 4}\n')
    done = run_check(repo)
    assert done.returncode == 0
    result = json.loads(done.stdout)
    assert [item["id"] for item in result["needsReview"]] == ["login-timeout"]
    assert "selection" not in result  # the default output keeps its shape


@pytest.mark.parametrize("edit", ["change", "delete"])
def test_fail_on_changed_exits_1_for_changed_or_missing_sources(repo: Path, edit: str) -> None:
    assert run_check(repo, "--fail-on", "changed").returncode == 0
    target = repo / "src" / "login.js"
    if edit == "change":
        target.write_text("export const timeoutMs = 60000;\n")
    else:
        target.unlink()
    done = run_check(repo, "--fail-on", "changed")
    assert done.returncode == 1 and done.stderr == ""
    item = json.loads(done.stdout)["needsReview"][0]
    assert item["evidenceStatus"] == ("changed" if edit == "change" else "missing")


def test_a_hand_edited_body_fails_needs_review_but_not_changed(repo: Path) -> None:
    record = repo / "docs/solutions/dsh-compound/pool-size.md"
    record.write_text(record.read_text() + "\nan edit by hand\n")
    assert run_check(repo, "--fail-on", "changed").returncode == 0
    done = run_check(repo, "--fail-on", "needs-review")
    assert done.returncode == 1
    assert json.loads(done.stdout)["needsReview"][0]["contentStatus"] == "modified"


def test_github_format_prints_one_annotation_per_lesson_missing_first(repo: Path) -> None:
    (repo / "config" / "test.json").write_text("{}\n")
    (repo / "src" / "pool.js").unlink()
    done = run_check(repo, "--format", "github", "--fail-on", "changed")
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert lines == [
        "::warning file=docs/solutions/dsh-compound/pool-size.md::lesson 'pool-size' "
        "(Pool size, 100%25 of it): sources missing: src/pool.js - re-verify the lesson, then "
        "re-capture it (capture --replace) to refresh it",
        "::warning file=docs/solutions/dsh-compound/login-timeout.md::lesson 'login-timeout' "
        "(Login requests time out): sources changed: config/test.json - re-verify the lesson, "
        "then re-capture it (capture --replace) to refresh it",
        "dsh-compound check: 2 of 2 lesson(s) need review",
    ]
    # The format may also be written before the command, as --format text may.
    before = dsh("--format", "github", "check", "--fail-on", "changed", cwd=repo)
    assert (before.returncode, before.stdout) == (1, done.stdout)
    assert dsh("--format=github", "check", cwd=repo).stdout == done.stdout


def test_annotation_values_cannot_end_the_command_early(repo: Path) -> None:
    item = {
        "id": "x",
        "title": "a\nb::c",
        "path": str(repo / "docs/solutions/dsh-compound/we,ird:name.md"),
        "evidenceStatus": "changed",
        "evidenceFiles": [{"path": "src/a%b.js", "status": "changed"}],
        "contentStatus": "consistent",
        "warnings": [],
    }
    result = {
        "needsReview": [item],
        "unchangedConsistent": {"count": 0, "ids": []},
        "warnings": ["bad\r\nline"],
        "scanned": 1,
        "truncated": False,
    }
    lines = github_annotations(result, repo).splitlines()
    assert lines[0].startswith(
        "::warning file=docs/solutions/dsh-compound/we%2Cird%3Aname.md::lesson 'x' (a%0Ab::c): "
        "sources changed: src/a%25b.js"
    )
    assert lines[1] == "::warning::bad%0D%0Aline"
    assert len(lines) == 3  # nothing a value held started a line of its own


def test_text_format_is_a_list_for_a_person(repo: Path) -> None:
    (repo / "src" / "login.js").write_text("changed\n")
    done = run_check(repo, "--format", "text")
    assert done.returncode == 0
    assert done.stdout.splitlines() == [
        "login-timeout: Login requests time out",
        "    sources changed: src/login.js",
        "To clear a lesson: re-verify the lesson, then re-capture it (capture --replace) to "
        "refresh it.",
        "dsh-compound check: 1 of 2 lesson(s) need review",
    ]


def test_changed_since_keeps_to_the_lessons_a_branch_touched(repo: Path) -> None:
    base = head(repo)
    (repo / "README.md").write_text("an unrelated edit\n")
    git(repo, "commit", "-qam", "docs")
    done = run_check(repo, "--changed-since", base, "--fail-on", "changed")
    assert done.returncode == 0
    result = json.loads(done.stdout)
    assert result["selection"] == {"paths": 1, "records": 0}
    # A source edited later and committed: that lesson only, failing the gate.
    (repo / "src" / "pool.js").write_text("export const size = 8;\n")
    git(repo, "commit", "-qam", "bigger pool")
    done = run_check(repo, "--changed-since", base, "--fail-on", "changed")
    assert done.returncode == 1
    result = json.loads(done.stdout)
    assert [item["id"] for item in result["needsReview"]] == ["pool-size"]
    assert result["selection"] == {"paths": 2, "records": 1}
    assert result["unchangedConsistent"]["count"] == 0


def test_changed_since_sees_a_rename_under_both_names(repo: Path) -> None:
    base = head(repo)
    git(repo, "mv", "src/login.js", "src/signin.js")
    git(repo, "commit", "-qm", "rename")
    done = run_check(repo, "--changed-since", base, "--format", "github")
    assert done.returncode == 0
    assert "sources missing: src/login.js" in done.stdout
    capture(repo, repo, id="signin", files=["src/signin.js"])  # cites the new name
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "lesson on the new name")
    result = json.loads(run_check(repo, "--changed-since", base).stdout)
    assert result["selection"]["records"] == 2  # the old name's lesson and the new one's
    assert [item["id"] for item in result["needsReview"]] == ["login-timeout"]


def test_changed_since_includes_uncommitted_and_untracked_work(repo: Path) -> None:
    (repo / "src" / "new.js").write_text("new\n")
    capture(repo, repo, id="new-file", files=["src/new.js"])  # untracked source and record
    (repo / "config" / "test.json").write_text("{}\n")  # not committed, not staged
    result = json.loads(run_check(repo, "--changed-since", "HEAD").stdout)
    assert result["selection"]["records"] == 2
    assert [item["id"] for item in result["needsReview"]] == ["login-timeout"]


def test_a_recaptured_lesson_is_selected_and_passes(repo: Path) -> None:
    base = head(repo)
    (repo / "src" / "pool.js").write_text("export const size = 8;\n")
    inspect = json.loads(dsh("inspect", "--id", "pool-size", cwd=repo).stdout)
    (repo / "d.json").write_text(
        json.dumps(
            {
                "id": "pool-size",
                "title": "Pool size, re-verified",
                "tags": ["db"],
                "problem": "p",
                "rootCause": "r",
                "resolution": "x",
                "whenToUse": "w",
                "verification": {"command": "make test", "result": "passed"},
                "files": ["src/pool.js"],
            }
        )
    )
    done = dsh("capture", "--input", "d.json", "--replace", inspect["digest"], cwd=repo)
    assert done.returncode == 0, done.stderr
    (repo / "d.json").unlink()
    git(repo, "commit", "-qam", "re-verified the pool lesson")
    done = run_check(repo, "--changed-since", base, "--fail-on", "needs-review")
    assert done.returncode == 0
    assert json.loads(done.stdout)["selection"] == {"paths": 2, "records": 1}


def test_staged_looks_at_the_index_including_deletions(repo: Path) -> None:
    (repo / "config" / "test.json").write_text("{}\n")  # changed but not staged
    done = run_check(repo, "--staged", "--fail-on", "changed")
    assert done.returncode == 0
    assert json.loads(done.stdout)["selection"] == {"paths": 0, "records": 0}
    git(repo, "rm", "-q", "src/pool.js")
    done = run_check(repo, "--staged", "--fail-on", "changed", "--format", "text")
    assert done.returncode == 1
    assert "    sources missing: src/pool.js" in done.stdout.splitlines()


def test_a_sub_folder_workspace_names_paths_from_the_repository_top(tmp_path: Path) -> None:
    top = tmp_path / "mono"
    service = top / "services" / "api"
    (service / "src").mkdir(parents=True)
    (service / "src" / "app.py").write_text("PORT = 8080\n")
    init(top)
    capture(top, service, id="api-port", files=["src/app.py"])
    git(top, "add", "-A")
    git(top, "commit", "-q", "-m", "lesson")
    (service / "src" / "app.py").write_text("PORT = 9090\n")
    done = dsh(
        "check",
        "--workspace",
        str(service),
        "--changed-since",
        "HEAD",
        "--format",
        "github",
        cwd=top,
    )
    first = done.stdout.splitlines()[0]
    assert first.startswith(
        "::warning file=services/api/docs/solutions/dsh-compound/api-port.md::lesson 'api-port'"
    )
    assert "sources changed: src/app.py" in first


def test_repository_config_runs_nothing(repo: Path, tmp_path: Path) -> None:
    (repo / "src" / "login.js").write_text("changed\n")
    (repo / ".gitattributes").write_text("* diff=evil\n")
    git(repo, "add", "-A")  # staged before the config is planted: plain git would run it
    (repo / "config" / "test.json").write_text("{}\n")
    marker = tmp_path / "ran"
    program = f"sh -c 'touch {marker}'"
    git(repo, "config", "core.fsmonitor", program)
    git(repo, "config", "diff.external", program)
    git(repo, "config", "diff.evil.textconv", program)
    staged = json.loads(run_check(repo, "--staged").stdout)
    since = json.loads(run_check(repo, "--changed-since", "HEAD").stdout)
    assert staged["selection"]["records"] == 1 and since["selection"]["records"] == 1
    assert not marker.exists()


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("--changed-since", "no-such-branch"), "invalid-revision"),
        (("--changed-since", "--output=/tmp/x"), "invalid-revision"),
        (("--changed-since", "HEAD:README.md"), "invalid-revision"),
        (("--staged", "--changed-since", "HEAD"), "invalid-arguments"),
        (("--fail-on", "sometimes"), "invalid-arguments"),
        (("--format", "xml"), "invalid-arguments"),
    ],
)
def test_bad_gate_arguments_are_json_errors(repo: Path, args: tuple[str, ...], code: str) -> None:
    before = git(repo, "status", "--porcelain", "--ignored")
    done = run_check(repo, *args)
    assert done.returncode == 1 and done.stdout == ""
    assert json.loads(done.stderr)["error"]["code"] == code
    assert git(repo, "status", "--porcelain", "--ignored") == before


@pytest.mark.parametrize("option", ["--staged", "--changed-since=HEAD"])
def test_outside_a_git_work_tree_is_a_json_error(tmp_path: Path, option: str) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    done = dsh("check", "--workspace", str(plain), option, cwd=plain)
    assert done.returncode == 1
    assert json.loads(done.stderr)["error"]["code"] == "not-a-git-repository"


def test_changed_since_catches_a_commit_that_only_deletes_a_source(repo: Path) -> None:
    base = head(repo)
    git(repo, "rm", "-q", "src/pool.js")
    git(repo, "commit", "-qm", "drop the pool")
    done = run_check(repo, "--changed-since", base, "--fail-on", "changed")
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    assert result["selection"] == {"paths": 1, "records": 1}
    assert [item["evidenceStatus"] for item in result["needsReview"]] == ["missing"]


def commit(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``git commit -q ARGS``, which the installed hook may refuse."""
    return git_result(repo, "commit", "-q", *args)


def install_git_hook(repo: Path, command: str) -> None:
    """A plain git pre-commit hook (no pre-commit tool) running the installed command."""
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\nexec {BIN} {command}\n")
    hook.chmod(0o755)


def test_a_git_hook_with_staged_sees_commit_a_and_partial_commits(repo: Path) -> None:
    # git runs the hook with GIT_INDEX_FILE naming .git/index.lock (commit -a) or a
    # .git/next-index-*.lock (commit <paths>): the index the commit is made from.
    install_git_hook(repo, "check --staged --fail-on changed --format text")
    (repo / "src" / "pool.js").write_text("export const size = 8;\n")  # never staged
    done = commit(repo, "-am", "bigger pool")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "    sources changed: src/pool.js" in done.stderr  # git shows a hook's stdout there
    done = commit(repo, "-m", "bigger pool", "src/pool.js")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "    sources changed: src/pool.js" in done.stderr
    # Staged, but not in a commit of other paths: that commit passes, pool.js stays staged.
    git(repo, "add", "src/pool.js")
    (repo / "README.md").write_text("an unrelated edit\n")
    done = commit(repo, "-m", "readme", "README.md")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 of 0 selected lesson(s)" in done.stderr
    assert git(repo, "diff", "--cached", "--name-only") == "src/pool.js\n"
    assert commit(repo, "-m", "bigger pool").returncode == 1


def with_env(**values: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PRE_COMMIT"))}
    return {**env, **values}


def run_env(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return commands.run("dsh-compound", *args, cwd=repo, env=env)


@pytest.mark.parametrize("value", ["/etc/passwd", "README.md", "../index", ".git", "link"])
def test_an_index_file_outside_the_git_directory_is_refused(repo: Path, value: str) -> None:
    (repo / ".git" / "link").symlink_to(repo / "README.md")
    value = ".git/link" if value == "link" else value
    done = run_env(repo, with_env(GIT_INDEX_FILE=value), "check", "--staged")
    assert done.returncode == 1 and done.stdout == ""
    error = json.loads(done.stderr)["error"]
    assert error["code"] == "unsafe-index-file"
    assert f"GIT_INDEX_FILE={value!r}" in error["message"]


def test_the_repository_index_named_relatively_is_read(repo: Path) -> None:
    git(repo, "rm", "-q", "src/pool.js")
    done = run_env(repo, with_env(GIT_INDEX_FILE=".git/index"), "check", "--staged")
    assert json.loads(done.stdout)["selection"] == {"paths": 1, "records": 1}


def fake_git(tmp_path: Path, on_diff: str) -> dict[str, str]:
    """PATH with a git that does ``on_diff`` for ``git diff`` and is the real git otherwise."""
    real = shutil.which("git")
    assert real is not None
    folder = tmp_path / "fake-bin"
    folder.mkdir()
    script = folder / "git"
    script.write_text(
        '#!/bin/sh\nfor argument in "$@"; do\n'
        f'  if [ "$argument" = diff ]; then {on_diff}; fi\ndone\nexec {real} "$@"\n'
    )
    script.chmod(0o755)
    return with_env(PATH=f"{folder}{os.pathsep}{os.environ['PATH']}")


@pytest.mark.parametrize(
    ("on_diff", "code"),
    [
        ("echo broken >&2; exit 3", "git-failed"),
        ("head -c 17000000 /dev/zero; exit 0", "git-output-too-large"),
        ("exec sleep 30", "git-timeout"),  # the runner's 10 s per command
    ],
)
def test_git_failures_have_their_own_codes(
    repo: Path, tmp_path: Path, on_diff: str, code: str
) -> None:
    env = fake_git(tmp_path, on_diff)
    for option in ("--staged", "--changed-since=HEAD"):
        done = run_env(repo, env, "check", option, "--fail-on", "changed")
        assert done.returncode == 1 and done.stdout == ""
        error = json.loads(done.stderr)["error"]
        assert error["code"] == code, error
        assert error["message"].startswith("git diff ")
        if code == "git-timeout":
            break  # once is enough to wait for


def test_pre_commit_mode_reads_the_files_pre_commit_names(repo: Path) -> None:
    (repo / "src" / "pool.js").write_text("export const size = 8;\n")
    env = with_env()
    done = run_env(repo, env, "check", "--pre-commit", "--fail-on", "changed", "src/pool.js")
    assert done.returncode == 1
    assert json.loads(done.stdout)["selection"] == {"paths": 1, "records": 1}
    done = run_env(repo, env, "check", "--pre-commit", "--fail-on", "changed", "README.md")
    assert done.returncode == 0
    assert json.loads(done.stdout)["selection"] == {"paths": 1, "records": 0}
    # No names and nothing staged (a plain `pre-commit run`, or --all-files of nothing):
    # every lesson.
    done = run_env(repo, env, "check", "--pre-commit", "--fail-on", "changed")
    assert done.returncode == 1
    result = json.loads(done.stdout)
    assert "selection" not in result and result["unchangedConsistent"]["count"] == 1
    # A staged deletion is left out of pre-commit's names; it is read from the index.
    git(repo, "rm", "-q", "config/test.json")
    done = run_env(repo, env, "check", "--pre-commit", "README.md")
    assert json.loads(done.stdout)["selection"] == {"paths": 2, "records": 1}


def test_pre_commit_mode_in_a_commit_reads_the_commits_index(repo: Path) -> None:
    (repo / "src" / "pool.js").write_text("export const size = 8;\n")
    git(repo, "add", "src/pool.js")
    env = with_env(GIT_INDEX_FILE=".git/index")
    # git commit ran the hook: the index decides, whatever names pre-commit passed.
    done = run_env(repo, env, "check", "--pre-commit", "--fail-on", "changed", "README.md")
    assert done.returncode == 1
    assert json.loads(done.stdout)["selection"] == {"paths": 1, "records": 1}


def test_pre_commit_mode_reads_a_from_to_range(repo: Path) -> None:
    base = head(repo)
    git(repo, "mv", "src/login.js", "src/signin.js")
    git(repo, "commit", "-qm", "rename")
    env = with_env(PRE_COMMIT_FROM_REF=base, PRE_COMMIT_TO_REF="HEAD")
    done = run_env(repo, env, "check", "--pre-commit", "--fail-on", "changed", "src/signin.js")
    assert done.returncode == 1
    result = json.loads(done.stdout)
    assert result["selection"] == {"paths": 2, "records": 1}  # both names of the rename
    assert "src/login.js" in result["needsReview"][0]["changedFiles"]
    env = with_env(PRE_COMMIT_FROM_REF="HEAD", PRE_COMMIT_TO_REF="HEAD")
    done = run_env(repo, env, "check", "--pre-commit", "--fail-on", "changed")
    assert done.returncode == 0
    assert json.loads(done.stdout)["selection"] == {"paths": 0, "records": 0}
    env = with_env(PRE_COMMIT_FROM_REF="no-such-ref", PRE_COMMIT_TO_REF="HEAD")
    done = run_env(repo, env, "check", "--pre-commit")
    assert json.loads(done.stderr)["error"]["code"] == "invalid-revision"


def test_pre_commit_names_are_read_from_the_top_for_a_sub_folder_workspace(
    tmp_path: Path,
) -> None:
    top = tmp_path / "mono"
    service = top / "services" / "api"
    (service / "src").mkdir(parents=True)
    (service / "src" / "app.py").write_text("PORT = 8080\n")
    (top / "src").mkdir()
    (top / "src" / "app.py").write_text("elsewhere\n")
    init(top)
    capture(top, service, id="api-port", files=["src/app.py"])
    git(top, "add", "-A")
    git(top, "commit", "-q", "-m", "lesson")
    (service / "src" / "app.py").write_text("PORT = 9090\n")
    args = ("check", "--pre-commit", "--fail-on", "changed", "--workspace", "services/api")
    done = run_env(top, with_env(), *args, "services/api/src/app.py", "src/app.py")
    assert done.returncode == 1
    assert json.loads(done.stdout)["selection"] == {"paths": 1, "records": 1}
    done = run_env(top, with_env(), *args, "src/app.py")  # the top's own src/app.py
    assert done.returncode == 0


def test_fail_on_never_and_the_last_fail_on_wins(repo: Path) -> None:
    (repo / "src" / "pool.js").unlink()
    assert run_check(repo, "--fail-on", "changed", "--fail-on", "never").returncode == 0
    assert run_check(repo, "--fail-on", "never", "--fail-on", "changed").returncode == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--pre-commit", "--staged"), "cannot be combined with --pre-commit"),
        (("--pre-commit", "--changed-since", "HEAD"), "cannot be combined with --pre-commit"),
        (("src/pool.js",), "taken only with --pre-commit"),
    ],
)
def test_pre_commit_mode_takes_no_other_change_option(
    repo: Path, args: tuple[str, ...], message: str
) -> None:
    done = run_check(repo, *args)
    assert done.returncode == 1 and done.stdout == ""
    error = json.loads(done.stderr)["error"]
    assert error["code"] == "invalid-arguments" and message in error["message"]


def test_github_shows_ten_annotations_the_rest_are_log_lines_and_a_notice(
    repo: Path,
) -> None:
    for index in range(11):
        (repo / "src" / f"m{index:02d}.js").write_text(f"export const m = {index};\n")
        capture(repo, repo, id=f"lesson-{index:02d}", files=[f"src/m{index:02d}.js"])
    for index in range(11):
        (repo / "src" / f"m{index:02d}.js").write_text("changed\n")
    (repo / "src" / "pool.js").unlink()  # missing: the most important, annotated first
    done = run_check(repo, "--format", "github")
    lines = done.stdout.splitlines()
    assert len(lines) == 10 + 2 + 1 + 1
    assert all(line.startswith("::warning file=") for line in lines[:10])
    assert lines[0].startswith("::warning file=docs/solutions/dsh-compound/pool-size.md::")
    assert [line.split(":")[0] for line in lines[10:12]] == [
        "docs/solutions/dsh-compound/lesson-09.md",
        "docs/solutions/dsh-compound/lesson-10.md",
    ]
    assert "lesson 'lesson-10' (Login requests time out): sources changed" in lines[11]
    assert lines[12] == (
        "::notice::2 more lesson(s) or warning(s) than GitHub annotates for one step (10); "
        "all are listed in this step's log"
    )
    assert lines[13] == "dsh-compound check: 12 of 13 lesson(s) need review"


def test_a_hand_edited_lesson_is_one_annotation(repo: Path) -> None:
    record = repo / "docs/solutions/dsh-compound/pool-size.md"
    record.write_text(record.read_text() + "\nan edit by hand\n")
    json_warnings = json.loads(run_check(repo).stdout)["warnings"]
    assert len(json_warnings) == 1 and "contentStatus modified" in json_warnings[0]
    done = run_check(repo, "--format", "github")
    assert done.stdout.splitlines() == [
        "::warning file=docs/solutions/dsh-compound/pool-size.md::lesson 'pool-size' (Pool "
        "size, 100%25 of it): record body edited by hand - re-verify the lesson, then "
        "re-capture it (capture --replace) to refresh it",
        "dsh-compound check: 1 of 2 lesson(s) need review",
    ]


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("check", "--changed-since", "no-such-branch", "--format", "github"), "invalid-revision"),
        (("--format", "github", "check", "--fail-on", "sometimes"), "invalid-arguments"),
    ],
)
def test_github_format_errors_are_also_error_annotations(
    repo: Path, args: tuple[str, ...], code: str
) -> None:
    done = dsh(*args, cwd=repo)
    assert done.returncode == 1
    error = json.loads(done.stderr)["error"]
    assert error["code"] == code
    escaped = error["message"].replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    assert done.stdout == f"::error title=dsh-compound {code}::{escaped}\n"


def test_fail_on_fails_a_truncated_corpus_scan_and_says_so(repo: Path) -> None:
    corpus = repo / "docs/solutions/dsh-compound"
    for index in range(500):
        (corpus / f"zz-{index:03d}.md").write_text("not a record\n")
    plain = run_check(repo)
    assert plain.returncode == 0
    assert json.loads(plain.stdout)["truncated"] is True
    assert not any("incomplete" in w for w in json.loads(plain.stdout)["warnings"])
    done = run_check(repo, "--fail-on", "changed")
    assert done.returncode == 1
    note = json.loads(done.stdout)["warnings"][0]
    assert note.startswith(
        "--fail-on changed: the check is incomplete (the corpus scan stopped at its bounds"
    )
    assert note.endswith("an incomplete check fails the gate")
    text = run_check(repo, "--fail-on", "needs-review", "--format", "text")
    assert text.returncode == 1
    assert "warning: --fail-on needs-review: the check is incomplete" in text.stdout
    github = run_check(repo, "--fail-on", "changed", "--format", "github").stdout.splitlines()
    assert github[0].startswith("::warning::--fail-on changed: the check is incomplete")
    assert run_check(repo, "--fail-on", "never").returncode == 0
