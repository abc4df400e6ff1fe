"""``setup`` of each product as a real process: JSON out, JSON errors, dry-run writes nothing."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from dsh_test_support import commands

BIN = commands.BIN
PRODUCTS = ("dsh-compound", "dsh-memory", "dsh-knowledge")


def run(program: str, *args: str, home: Path) -> subprocess.CompletedProcess[str]:
    """The console script with ``home`` as HOME (DSH data in its default place there):
    setup writes the command it was started as, so this must be the installed script."""
    env = commands.environ(HOME=str(home), CODEX_HOME=str(home / ".codex"), DSH_HOME=None)
    return commands.run(program, *args, env=env)


@pytest.mark.parametrize("program", PRODUCTS)
def test_dry_run_prints_the_diff_with_absolute_commands_and_writes_nothing(
    program: str, tmp_path: Path
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    done = run(
        program, "setup", "claude-code", "--scope", "project", "--project-dir", str(project),
        "--dry-run", home=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["server"] == program and result["dryRun"] is True
    assert result["command"] == str(BIN / program)  # resolvable whatever the host's PATH
    assert f'"{program}": {{' in result["diff"]
    assert list(project.iterdir()) == []


@pytest.mark.parametrize("program", PRODUCTS)
def test_setup_and_remove_for_codex_round_trip(program: str, tmp_path: Path) -> None:
    assert run(program, "setup", "codex", home=tmp_path).returncode == 0
    config = (tmp_path / ".codex" / "config.toml").read_text()
    assert f"[mcp_servers.{program}]" in config and "required = true" in config
    hooks = json.loads((tmp_path / ".codex" / "hooks.json").read_text())
    assert f"{BIN / program} hook " in json.dumps(hooks)
    assert run(program, "setup", "codex", "--remove", home=tmp_path).returncode == 0
    leftovers = [p for p in (tmp_path / ".codex").rglob("*") if p.is_file()]
    assert leftovers == []


@pytest.mark.parametrize("program", PRODUCTS)
def test_a_bad_host_is_a_json_error(program: str, tmp_path: Path) -> None:
    done = run(program, "setup", "cursor", home=tmp_path)
    assert done.returncode == 1 and done.stdout == ""
    error = json.loads(done.stderr)["error"]
    assert error["code"] == "invalid-arguments" and "claude-code" in error["message"]
