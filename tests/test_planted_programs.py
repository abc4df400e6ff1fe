"""A repository that commits programs named like the ones we start never gets them run.

The threat: a repository holds ``bin/git``, ``git``, ``node_modules/.bin/git`` and
``bin/dsh-memory-sync``, each writing a marker when run, and the user's ``PATH`` has the
relative entries many setups add (``./bin``, ``bin``, ``node_modules/.bin``) and an empty
one (the current directory). The installed commands are then run inside the repository,
as agent hosts run hooks and MCP servers: ``dsh-knowledge add`` and the MCP
``knowledge_add`` (git provenance), the compound hooks and ``check``, and the memory
session-start hook with its background sync due. None may run a planted program - and each
path is shown to have really run (the provenance is captured with the real git, the
memory hook reaches the sync lookup and starts a real program from an absolute entry).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import anyio
import pytest
from dsh_test_support import commands
from dsh_test_support.gitcmd import commit_all, git, init
from dsh_test_support.gitcmd import head as git_head

BIN = commands.BIN
PLANTED = ("bin/git", "git", "node_modules/.bin/git", "bin/dsh-memory-sync", "dsh-memory-sync")
#: Entries of PATH that name the current directory or folders inside it.
RELATIVE_ENTRIES = ["./bin", "bin", "", "node_modules/.bin"]


def executable(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


@pytest.fixture
def planted(tmp_path: Path) -> tuple[Path, Path]:
    """A committed repository with the planted programs, and the marker directory."""
    markers = tmp_path / "markers"
    markers.mkdir()
    repo = init(tmp_path / "repo")
    git(repo, "config", "user.email", "a@example.com")
    git(repo, "config", "user.name", "A")
    (repo / "src").mkdir()
    (repo / "src" / "app.py").write_text("PORT = 8080\n")
    for relative in PLANTED:
        name = relative.replace("/", "_")
        executable(repo / relative, f"touch '{markers}/{name}'\nexit 0\n")
    commit_all(repo, "initial")
    return repo, markers


def planted_path_env(tmp_path: Path, extra_entries: list[str] | None = None) -> dict[str, str]:
    """PATH with the relative and empty entries first, then absolute ones without the venv
    (so no real dsh-memory-sync is found there)."""
    system = [
        entry
        for entry in os.environ["PATH"].split(os.pathsep)
        if entry and os.path.isabs(entry) and Path(entry) != BIN
    ]
    home = tmp_path / "home"
    (home / ".dsh").mkdir(parents=True, exist_ok=True)
    return {
        **os.environ,
        "PATH": os.pathsep.join([*RELATIVE_ENTRIES, *(extra_entries or []), *system]),
        "HOME": str(home),
        "DSH_HOME": str(home / ".dsh"),
        "GIT_CONFIG_NOSYSTEM": "1",
    }


def ran(markers: Path) -> list[str]:
    return sorted(item.name for item in markers.iterdir())


def run(command: list[str], cwd: Path, env: dict[str, str], stdin: str = "") -> str:
    done = subprocess.run(
        command,
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_knowledge_add_captures_provenance_with_the_real_git_only(
    planted: tuple[Path, Path], tmp_path: Path
) -> None:
    repo, markers = planted
    env = planted_path_env(tmp_path)
    head = git_head(repo)
    evidence = json.dumps({"type": "file", "source": "src/app.py"})
    out = json.loads(
        run(
            [
                str(BIN / "dsh-knowledge"),
                "--db",
                str(tmp_path / "k.db"),
                "add",
                "--type",
                "fact",
                "--content",
                "The app listens on port 8080.",
                "--evidence",
                evidence,
            ],
            repo,
            env,
        )
    )
    assert out["evidence"][0]["gitProvenance"]["commit"] == head
    assert ran(markers) == []


def test_mcp_knowledge_add_never_runs_a_planted_git(
    planted: tuple[Path, Path], tmp_path: Path
) -> None:
    pytest.importorskip("mcp", reason="the [mcp] extra is not installed")
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    repo, markers = planted
    head = git_head(repo)
    params = StdioServerParameters(
        command=str(BIN / "dsh-knowledge"),
        args=["mcp", "--db", str(tmp_path / "k.db"), "--workspace", str(repo)],
        env=planted_path_env(tmp_path),
        cwd=str(repo),
    )
    seen: dict[str, object] = {}

    async def main() -> None:
        with anyio.fail_after(60):
            async with (
                stdio_client(params) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                result = await client.call_tool(
                    "knowledge_add",
                    {
                        "type": "fact",
                        "content": "The app listens on port 8080.",
                        "evidence": [{"type": "file", "source": "src/app.py"}],
                    },
                )
                seen["result"] = result.structured_content

    anyio.run(main)
    added = seen["result"]
    assert isinstance(added, dict)
    assert added["item"]["evidence"][0]["gitProvenance"]["commit"] == head
    assert ran(markers) == []


def test_compound_hooks_and_check_run_nothing_from_the_repository(
    planted: tuple[Path, Path], tmp_path: Path
) -> None:
    repo, markers = planted
    env = planted_path_env(tmp_path)
    draft = {
        "id": "port",
        "title": "The app port",
        "tags": ["port"],
        "problem": "Which port?",
        "rootCause": "r",
        "resolution": "8080",
        "whenToUse": "port questions",
        "verification": {"command": "c", "result": "r"},
        "files": ["src/app.py"],
    }
    run([str(BIN / "dsh-compound"), "capture", "--input", "-"], repo, env, json.dumps(draft))
    (repo / "src" / "app.py").write_text("PORT = 9090\n")
    compound = str(BIN / "dsh-compound")
    payload = json.dumps({"cwd": str(repo), "prompt": "which port does the app use"})
    assert "port" in run([compound, "hook", "session-start"], repo, env, payload)
    assert "port" in run([compound, "hook", "user-prompt-submit"], repo, env, payload)
    assert json.loads(run([compound, "check"], repo, env))["needsReview"]
    assert ran(markers) == []


@pytest.fixture(scope="module")
def foreign_install(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The installed ``dsh-memory`` in an environment without ``dsh-memory-sync`` beside its
    Python (a distribution or ``pip --user`` layout), so the sync is looked up on PATH."""
    root = tmp_path_factory.mktemp("install")
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120
    )
    site = sysconfig.get_paths(vars={"base": str(root), "platbase": str(root)})["purelib"]
    ours = sysconfig.get_paths()["purelib"]
    Path(site, "dsh-overlay.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    script = (BIN / "dsh-memory").read_text().splitlines()
    script[0] = f"#!{root / 'bin' / 'python'}"
    target = root / "bin" / "dsh-memory"
    target.write_text("\n".join(script) + "\n")
    target.chmod(0o755)
    assert not (root / "bin" / "dsh-memory-sync").exists()
    return target


def test_the_memory_hook_never_starts_a_planted_sync(
    planted: tuple[Path, Path], tmp_path: Path, foreign_install: Path
) -> None:
    repo, markers = planted
    # The real sync this machine would have, on an absolute PATH entry outside the repo.
    genuine_dir = tmp_path / "genuine"
    genuine = tmp_path / "genuine-sync-ran"
    executable(genuine_dir / "dsh-memory-sync", f"touch '{genuine}'\n")
    env = planted_path_env(tmp_path, extra_entries=[str(genuine_dir)])
    root = tmp_path / "memory"
    run([str(BIN / "dsh-memory"), "--root", str(root), "init"], tmp_path, env)
    Path(env["DSH_HOME"], "settings.yaml").write_text("memory:\n  auto_sync_interval_minutes: 60\n")
    past = time.time() - 7200
    os.utime(root / ".last-sync", (past, past))
    env["DSH_MEMORY_ROOT"] = str(root)
    out = run([str(foreign_install), "hook", "session-start"], repo, env, "{}")
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("# Memory")  # the section, in English outside a Chinese locale
    deadline = time.monotonic() + 20
    while not genuine.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert genuine.exists(), "the hook never started the sync found on an absolute entry"
    assert ran(markers) == []
    shutil.rmtree(genuine_dir)


@pytest.fixture(scope="module")
def python_without_scripts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Python that imports our packages but has no console script beside it (a system or
    ``pip --user`` layout): ``setup`` must then find the command elsewhere."""
    root = tmp_path_factory.mktemp("bare-python")
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120
    )
    site = sysconfig.get_paths(vars={"base": str(root), "platbase": str(root)})["purelib"]
    ours = sysconfig.get_paths()["purelib"]
    Path(site, "dsh-overlay.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    assert not (root / "bin" / "dsh-compound").exists()
    return root / "bin" / "python"


def test_setup_never_writes_a_bare_program_name_the_host_would_look_up(
    planted: tuple[Path, Path], tmp_path: Path, python_without_scripts: Path
) -> None:
    repo, markers = planted
    executable(repo / "bin" / "dsh-compound", f"touch '{markers}/bin_dsh-compound'\n")
    setup = [
        str(python_without_scripts),
        "-m",
        "dsh_compound.cli",
        "setup",
        "claude-code",
        "--scope",
        "project",
        "--project-dir",
        str(repo),
        "--dry-run",
    ]
    # Only the repository's planted copy is on PATH (relative entries): refused, not written
    # as "dsh-compound" for the host to find in the repository.
    done = subprocess.run(
        setup,
        cwd=repo,
        env=planted_path_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1 and done.stdout == ""
    assert json.loads(done.stderr)["error"]["code"] == "invalid-arguments"
    assert "absolute PATH entry" in json.loads(done.stderr)["error"]["message"]
    # The genuine command on an absolute entry: written as that absolute path.
    genuine = tmp_path / "genuine"
    executable(genuine / "dsh-compound", "exit 0\n")
    env = planted_path_env(tmp_path, extra_entries=[str(genuine)])
    result = json.loads(run(setup, repo, env))
    assert result["command"] == str(genuine / "dsh-compound")
    assert ran(markers) == []
