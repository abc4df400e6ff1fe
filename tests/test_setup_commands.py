"""``setup`` of each product as a real process: JSON out, JSON errors, dry-run writes nothing,
and ``--ranking`` writing DSH_RANKING into our entries (and warming the model) or taking it out."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from dsh_test_support import commands

BIN = commands.BIN
PRODUCTS = ("dsh-compound", "dsh-memory", "dsh-knowledge")


def run(program: str, *args: str, home: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    """The console script with ``home`` as HOME (DSH data in its default place there unless
    ``extra`` says otherwise): setup writes the command it was started as, so this must be
    the installed script."""
    changes: dict[str, str | None] = {"HOME": str(home), "CODEX_HOME": str(home / ".codex")}
    changes["DSH_HOME"] = None
    changes.update(extra)
    return commands.run(program, *args, env=commands.environ(**changes))


@pytest.mark.parametrize("program", PRODUCTS)
def test_dry_run_prints_the_diff_with_absolute_commands_and_writes_nothing(
    program: str, tmp_path: Path
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    done = run(
        program,
        "setup",
        "claude-code",
        "--scope",
        "project",
        "--project-dir",
        str(project),
        "--dry-run",
        home=tmp_path,
    )
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


@pytest.fixture(scope="module")
def weights_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A DSH_HOME shared by the hybrid setups below: the model's weight cache is built once."""
    return tmp_path_factory.mktemp("dsh-home")


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".dsh" not in p.parts
    }


@pytest.mark.parametrize("program", PRODUCTS)
def test_ranking_hybrid_is_written_warmed_and_taken_out_again(
    program: str, tmp_path: Path, weights_home: Path
) -> None:
    home = tmp_path / "home"
    shared = {"DSH_HOME": str(weights_home)}
    assert run(program, "setup", "claude-code", home=home, **shared).returncode == 0
    plain = snapshot(home)
    done = run(program, "setup", "claude-code", "--ranking", "hybrid", home=home, **shared)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["ranking"] == "hybrid" and result["weights"] in {"built", "mapped"}
    assert "warnings" not in result
    server = json.loads((home / ".claude.json").read_text())["mcpServers"][program]
    assert server["env"] == {"DSH_RANKING": "hybrid"}
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    hooks = [h["command"] for g in settings["hooks"].values() for x in g for h in x["hooks"]]
    assert hooks and all(c.startswith(f"DSH_RANKING=hybrid {BIN / program} hook ") for c in hooks)
    done = run(program, "setup", "claude-code", "--ranking", "lexical", home=home, **shared)
    assert json.loads(done.stdout)["ranking"] == "lexical"
    assert snapshot(home) == plain  # only ours changed, and back to what it was


def test_a_hybrid_dry_run_shows_the_variable_and_writes_nothing(tmp_path: Path) -> None:
    done = run("dsh-knowledge", "setup", "codex", "--ranking", "hybrid", "--dry-run", home=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert 'DSH_RANKING = "hybrid"' in result["diff"]
    assert f"DSH_RANKING=hybrid {BIN / 'dsh-knowledge'} hook user-prompt-submit" in result["diff"]
    assert "weights" not in result and not (tmp_path / ".codex").exists()
    assert not (tmp_path / ".dsh").exists()  # nothing warmed either


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["--ranking", "fast"], "invalid-ranking"),
        (["--ranking", "hybrid", "--remove"], "invalid-arguments"),
    ],
)
def test_a_bad_ranking_is_refused_before_anything_is_written(
    args: list[str], code: str, tmp_path: Path
) -> None:
    done = run("dsh-memory", "setup", "claude-code", *args, home=tmp_path)
    assert done.returncode == 1 and done.stdout == ""
    assert json.loads(done.stderr)["error"]["code"] == code
    assert list(tmp_path.rglob("*")) == []
