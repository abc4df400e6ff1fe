"""Stale lessons caught where a team works: the pre-commit hook and the CI workflow.

The ``dsh-compound-check`` pre-commit hook is run by the real ``pre-commit`` tool.

A team adds three lines to its ``.pre-commit-config.yaml`` naming this repository; the
tests do the same with a local clone of this checkout (its tracked and new files, committed
once), so what runs is what a team gets: pre-commit builds a virtualenv, installs the
repository root and the packages ``.pre-commit-hooks.yaml`` names, and runs the entry.
The documented GitHub Actions workflow (``integrations/github-actions/``) has its install
and check steps run as written, by bash, on a pull-request-shaped clone.
pip is offline (the wheels ``make setup`` put into ``.wheelhouse/``), so nothing here needs
the network, and a manifest that asked for anything else would fail.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from dsh_test_support import commands, home
from dsh_test_support.gitcmd import git, git_result

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / "integrations" / "github-actions" / "dsh-compound-check.yml"
WHEELHOUSE = ROOT / ".wheelhouse"
BIN = commands.BIN  # pre-commit and the dsh console scripts of this environment
#: A commit runs the pre-commit hook, whose first run builds its environment.
HOOKS = 600


def _environment(home_dir: Path, pre_commit_home: Path) -> dict[str, str]:
    """A team member's environment: the toolkit's hermetic home at ``home_dir`` (identity,
    DSH data, nothing of the developer's), offline pip, pre-commit's own cache folder."""
    made = home.make_home(home_dir)
    env = {k: v for k, v in made.environ.items() if not k.startswith(("PIP_", "VIRTUAL_ENV"))}
    env.update(
        PRE_COMMIT_HOME=str(pre_commit_home),
        PIP_NO_INDEX="1",
        PIP_FIND_LINKS=str(WHEELHOUSE),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PIP_CONFIG_FILE=os.devnull,
        VIRTUALENV_NO_PERIODIC_UPDATE="1",
        # The hook's git must be found as the user's would be; the venv's bin is not on it.
        PATH=os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p),
    )
    return env


def run(*argv: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(argv), cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False
    )


def _clone_of_this_checkout(target: Path, env: dict[str, str]) -> str:
    """A repository holding this checkout's files as they are now, committed; its commit."""
    listed = git(ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard", env=env)
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if not source.is_file() or source.is_symlink():
            continue  # a file deleted in the work tree but not yet from the index
        destination = target / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, destination)
    git(target, "init", "-q", "-b", "main", env=env)
    git(target, "add", "-A", env=env)
    git(target, "commit", "-q", "-m", "dsh", env=env)
    return git(target, "rev-parse", "HEAD", env=env).strip()


class Setting:
    def __init__(self, base: Path) -> None:
        self.env = _environment(base / "home", base / "pre-commit-home")
        self.hooks_repo = base / "dsh"
        self.hooks_repo.mkdir()
        self.rev = _clone_of_this_checkout(self.hooks_repo, self.env)


@pytest.fixture(scope="module")
def setting(tmp_path_factory: pytest.TempPathFactory) -> Setting:
    if not (WHEELHOUSE / ".done").is_file():
        pytest.fail("the offline wheelhouse is missing: run `make setup` once (needs the index)")
    return Setting(tmp_path_factory.mktemp("pre-commit"))


def _project(base: Path, setting: Setting) -> Path:
    """A team's repository with one committed lesson citing src/pool.py."""
    project = base / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "pool.py").write_text("POOL_SIZE = 4\n")
    (project / "notes.txt").write_text("notes\n")
    env = setting.env
    git(project, "init", "-q", "-b", "main", env=env)
    draft = {
        "id": "pool-size",
        "title": "The pool needs 4 connections",
        "tags": ["db"],
        "problem": "p",
        "rootCause": "r",
        "resolution": "x",
        "whenToUse": "w",
        "verification": {"command": "make test", "result": "passed"},
        "files": ["src/pool.py"],
    }
    (project / "draft.json").write_text(json.dumps(draft))
    done = commands.run("dsh-compound", "capture", "--input", "draft.json", cwd=project, env=env)
    assert done.returncode == 0, done.stderr
    (project / "draft.json").unlink()
    config = (
        "repos:\n"
        f"  - repo: {setting.hooks_repo}\n"
        f"    rev: {setting.rev}\n"
        "    hooks:\n"
        "      - id: dsh-compound-check\n"
    )
    (project / ".pre-commit-config.yaml").write_text(config)
    git(project, "add", "-A", env=env)
    git(project, "commit", "-q", "-m", "start", env=env)
    return project


def test_try_repo_fails_a_commit_that_changes_a_lessons_source(
    setting: Setting, tmp_path: Path
) -> None:
    project = _project(tmp_path, setting)
    pre_commit = str(BIN / "pre-commit")
    try_repo = (pre_commit, "try-repo", str(setting.hooks_repo), "dsh-compound-check")
    try_repo += ("--ref", setting.rev)
    (project / "notes.txt").write_text("more notes\n")
    git(project, "add", "notes.txt", env=setting.env)
    done = run(*try_repo, cwd=project, env=setting.env)
    assert done.returncode == 0, done.stdout + done.stderr
    (project / "src" / "pool.py").write_text("POOL_SIZE = 8\n")
    git(project, "add", "src/pool.py", env=setting.env)
    done = run(*try_repo, cwd=project, env=setting.env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "pool-size: The pool needs 4 connections" in done.stdout
    assert "    sources changed: src/pool.py" in done.stdout


def test_the_installed_hook_blocks_the_commit_until_the_lesson_is_recaptured(
    setting: Setting, tmp_path: Path
) -> None:
    project = _project(tmp_path, setting)
    env = setting.env
    assert run(str(BIN / "pre-commit"), "install", cwd=project, env=env).returncode == 0
    (project / "src" / "pool.py").write_text("POOL_SIZE = 8\n")
    git(project, "add", "src/pool.py", env=env)
    done = git_result(project, "commit", "-q", "-m", "bigger pool", env=env, timeout=HOOKS)
    assert done.returncode == 1
    assert "sources changed: src/pool.py" in done.stdout + done.stderr
    head = git(project, "rev-parse", "HEAD", env=env)
    # Re-verify, re-capture (compare-and-swap on the digest), and the same commit lands.
    digest = json.loads(
        commands.run("dsh-compound", "inspect", "--id", "pool-size", cwd=project, env=env).stdout
    )["digest"]
    draft = {
        "id": "pool-size",
        "title": "The pool needs 8 connections",
        "tags": ["db"],
        "problem": "p",
        "rootCause": "r",
        "resolution": "x",
        "whenToUse": "w",
        "verification": {"command": "make test", "result": "passed"},
        "files": ["src/pool.py"],
    }
    (project / "draft.json").write_text(json.dumps(draft))
    recapture = ("capture", "--input", "draft.json", "--replace", digest)
    done = commands.run("dsh-compound", *recapture, cwd=project, env=env)
    assert done.returncode == 0, done.stderr
    (project / "draft.json").unlink()
    git(project, "add", "-A", env=env)
    done = git_result(project, "commit", "-q", "-m", "bigger pool", env=env, timeout=HOOKS)
    assert done.returncode == 0, done.stdout + done.stderr
    assert git(project, "rev-parse", "HEAD", env=env) != head


def test_the_installed_hook_catches_a_commit_that_only_deletes_a_source(
    setting: Setting, tmp_path: Path
) -> None:
    project = _project(tmp_path, setting)
    env = setting.env
    assert run(str(BIN / "pre-commit"), "install", cwd=project, env=env).returncode == 0
    git(project, "rm", "-q", "src/pool.py", env=env)
    done = git_result(project, "commit", "-q", "-m", "drop the pool", env=env, timeout=HOOKS)
    assert done.returncode == 1
    assert "sources missing: src/pool.py" in done.stdout + done.stderr


def _installed(setting: Setting, tmp_path: Path) -> Path:
    project = _project(tmp_path, setting)
    done = run(str(BIN / "pre-commit"), "install", cwd=project, env=setting.env)
    assert done.returncode == 0, done.stdout + done.stderr
    return project


def test_the_installed_hook_sees_commit_a_and_partial_commits(
    setting: Setting, tmp_path: Path
) -> None:
    # git runs the hook with its own index for these (GIT_INDEX_FILE=.git/index.lock,
    # .git/next-index-*.lock); the hook reads that one, not the repository's index.
    project = _installed(setting, tmp_path)
    env = setting.env
    (project / "src" / "pool.py").write_text("POOL_SIZE = 8\n")  # never staged
    done = git_result(project, "commit", "-q", "-am", "bigger pool", env=env, timeout=HOOKS)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "sources changed: src/pool.py" in done.stdout + done.stderr
    done = git_result(
        project, "commit", "-q", "-m", "bigger pool", "src/pool.py", env=env, timeout=HOOKS
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "sources changed: src/pool.py" in done.stdout + done.stderr
    # A partial commit of another file passes, though src/pool.py is staged beside it.
    git(project, "add", "src/pool.py", env=env)
    (project / "notes.txt").write_text("more notes\n")
    done = git_result(project, "commit", "-q", "-m", "notes", "notes.txt", env=env, timeout=HOOKS)
    assert done.returncode == 0, done.stdout + done.stderr
    staged = git(project, "diff", "--cached", "--name-only", env=env)
    assert staged == "src/pool.py\n"


def test_pre_commit_run_modes_each_check_their_own_change(setting: Setting, tmp_path: Path) -> None:
    project = _project(tmp_path, setting)
    env = setting.env
    hook = (str(BIN / "pre-commit"), "run", "dsh-compound-check")

    def passes(*args: str) -> bool:
        done = run(*hook, *args, cwd=project, env=env)
        assert done.returncode in (0, 1), done.stdout + done.stderr
        if done.returncode == 1:
            assert "sources changed: src/pool.py" in done.stdout, done.stdout
        return done.returncode == 0

    # The source changes in a commit made without the hook: nothing is staged now.
    (project / "src" / "pool.py").write_text("POOL_SIZE = 8\n")
    git(project, "commit", "-q", "--no-verify", "-am", "bigger pool", env=env)
    assert not passes()  # nothing staged, not in a commit: every lesson
    assert not passes("--all-files")
    assert not passes("--hook-stage", "manual", "--all-files")
    assert not passes("--files", "src/pool.py")
    assert passes("--files", "notes.txt")
    assert not passes("--from-ref", "HEAD~1", "--to-ref", "HEAD")
    assert passes("--from-ref", "HEAD", "--to-ref", "HEAD")


def test_a_monorepo_points_the_hook_at_its_workspace_and_keeps_the_gate(
    setting: Setting, tmp_path: Path
) -> None:
    # The lessons live in services/api; the config adds --workspace through args, which
    # must not drop the gate the hook's entry holds.
    project = _project(tmp_path, setting)
    env = setting.env
    service = project / "services" / "api"
    service.mkdir(parents=True)
    for name in ("docs", "src"):
        git(project, "mv", name, f"services/api/{name}", env=env)
    config = project / ".pre-commit-config.yaml"
    config.write_text(config.read_text() + "        args: [--workspace, services/api]\n")
    git(project, "add", "-A", env=env)
    git(project, "commit", "-q", "-m", "move", env=env)
    assert run(str(BIN / "pre-commit"), "install", cwd=project, env=env).returncode == 0
    (service / "src" / "pool.py").write_text("POOL_SIZE = 8\n")
    done = git_result(project, "commit", "-q", "-am", "bigger pool", env=env, timeout=HOOKS)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "sources changed: src/pool.py" in done.stdout + done.stderr
    hook = (str(BIN / "pre-commit"), "run", "dsh-compound-check", "--files")
    assert run(*hook, "services/api/src/pool.py", cwd=project, env=env).returncode == 1
    assert run(*hook, "notes.txt", cwd=project, env=env).returncode == 0


def test_the_github_workflow_installs_and_annotates_as_written(
    setting: Setting, tmp_path: Path
) -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    job = workflow["jobs"]["dsh-compound-check"]
    steps = {step.get("name"): step for step in job["steps"]}
    # --changed-since needs the base branch's history: a shallow checkout has none.
    checkout = next(
        step for step in job["steps"] if step.get("uses", "").startswith("actions/checkout")
    )
    assert checkout["with"]["fetch-depth"] == 0
    env = dict(setting.env)
    env["DSH_SOURCE"] = f"git+file://localhost{setting.hooks_repo}@{setting.rev}"
    # A runner's Python: a fresh virtualenv first on PATH, nothing of ours installed in it.
    runner = tmp_path / "runner"
    assert run(sys.executable, "-m", "venv", str(runner), cwd=tmp_path, env=env).returncode == 0
    env["PATH"] = f"{runner / 'bin'}{os.pathsep}{env['PATH']}"
    install = run("bash", "-ec", steps["install dsh-compound"]["run"], cwd=tmp_path, env=env)
    assert install.returncode == 0, install.stdout + install.stderr
    # A pull request: the base branch on origin, one commit on top changing a lesson's source.
    origin = _project(tmp_path, setting)
    checkout = tmp_path / "checkout"
    git(tmp_path, "clone", "-q", str(origin), str(checkout), env=env)
    (checkout / "src" / "pool.py").write_text("POOL_SIZE = 16\n")
    git(checkout, "commit", "-qam", "bigger pool", env=env)
    env["GITHUB_BASE_REF"] = "main"
    check_step = steps["check the lessons this pull request touches"]["run"]
    done = run("bash", "-ec", check_step, cwd=checkout, env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines()[0].startswith(
        "::warning file=docs/solutions/dsh-compound/pool-size.md::lesson 'pool-size' (The pool "
        "needs 4 connections): sources changed: src/pool.py"
    )
    assert str(runner) in run("bash", "-c", "command -v dsh-compound", cwd=tmp_path, env=env).stdout
