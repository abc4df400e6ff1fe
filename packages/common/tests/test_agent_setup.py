"""Registering MCP servers and hooks in Claude Code and Codex config files, and undoing it."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest

from dsh_common.agent_setup import Integration, run_setup
from dsh_common.errors import DshError

COMPOUND = Integration(
    server="dsh-compound",
    program="dsh-compound",
    hooks=(
        ("SessionStart", ("hook", "session-start")),
        ("UserPromptSubmit", ("hook", "user-prompt-submit")),
    ),
    command="/opt/dsh bin/dsh-compound",  # a space: hook commands must quote it
)
MEMORY = Integration(
    server="dsh-memory",
    program="dsh-memory",
    hooks=(("SessionStart", ("hook", "session-start", "--host", "{host}")),),
    command="/opt/bin/dsh-memory",
    env_names=("DSH_HOME", "DSH_MEMORY_ROOT"),
)

USER_SETTINGS = {
    "permissions": {"allow": ["Bash(ls:*)"]},
    "hooks": {
        "SessionStart": [
            {"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi"}]}
        ]
    },
}
USER_CODEX = """# my codex config
model = "gpt-5.5"   # keep this comment

[mcp_servers.other]
command = "other-server"
args = ["--flag"]

[projects."/work/x"]
trust_level = "trusted"
"""


def snapshot(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): path.read_text()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / ".claude").mkdir(parents=True)
    (root / ".claude" / "settings.json").write_text(json.dumps(USER_SETTINGS, indent=2) + "\n")
    (root / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"theirs": {"command": "x"}}}, indent=2) + "\n"
    )
    return root


def test_claude_project_setup_merges_and_remove_restores_the_bytes(project: Path) -> None:
    before = snapshot(project)
    run_setup(COMPOUND, "claude-code", scope="project", project_dir=project)
    run_setup(MEMORY, "claude-code", scope="project", project_dir=project)
    servers = json.loads((project / ".mcp.json").read_text())["mcpServers"]
    assert sorted(servers) == ["dsh-compound", "dsh-memory", "theirs"]
    assert servers["dsh-compound"] == {
        "type": "stdio",
        "command": "/opt/dsh bin/dsh-compound",
        "args": ["mcp"],
    }
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    assert settings["permissions"] == USER_SETTINGS["permissions"]
    starts = [group["hooks"][0]["command"] for group in settings["hooks"]["SessionStart"]]
    assert starts == [
        "echo hi",
        "'/opt/dsh bin/dsh-compound' hook session-start",
        "/opt/bin/dsh-memory hook session-start --host claude-code",
    ]
    prompt = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]
    assert prompt["command"] == "'/opt/dsh bin/dsh-compound' hook user-prompt-submit"

    run_setup(MEMORY, "claude-code", scope="project", project_dir=project, remove=True)
    run_setup(COMPOUND, "claude-code", scope="project", project_dir=project, remove=True)
    assert snapshot(project) == before


def test_setup_twice_changes_nothing_the_second_time(project: Path) -> None:
    run_setup(COMPOUND, "claude-code", scope="project", project_dir=project)
    after_first = snapshot(project)
    result = run_setup(COMPOUND, "claude-code", scope="project", project_dir=project)
    assert [entry["action"] for entry in result["files"]] == ["unchanged", "unchanged"]
    assert snapshot(project) == after_first


def test_setup_replaces_our_entry_when_the_command_moved(project: Path) -> None:
    run_setup(COMPOUND, "claude-code", scope="project", project_dir=project)
    moved = Integration(**{**COMPOUND.__dict__, "command": "/new/dsh-compound"})
    run_setup(moved, "claude-code", scope="project", project_dir=project)
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    commands = [g["hooks"][0]["command"] for g in settings["hooks"]["SessionStart"]]
    assert commands == ["echo hi", "/new/dsh-compound hook session-start"]


def test_dry_run_prints_the_diff_and_writes_nothing(project: Path) -> None:
    before = snapshot(project)
    result = run_setup(COMPOUND, "claude-code", scope="project", project_dir=project, dry_run=True)
    assert snapshot(project) == before
    assert result["dryRun"] is True
    assert '+    "dsh-compound": {' in result["diff"]
    assert "+++ " in result["diff"] and "hook session-start" in result["diff"]


def test_user_scope_writes_the_home_files_and_remove_deletes_files_it_created(
    tmp_path: Path,
) -> None:
    env = {"HOME": str(tmp_path / "home")}
    run_setup(COMPOUND, "claude-code", scope="user", env=env)
    claude_json = tmp_path / "home" / ".claude.json"
    assert "dsh-compound" in json.loads(claude_json.read_text())["mcpServers"]
    assert (tmp_path / "home" / ".claude" / "settings.json").is_file()
    assert claude_json.stat().st_mode & 0o077 == 0  # may hold credentials: owner-only
    run_setup(COMPOUND, "claude-code", scope="user", env=env, remove=True)
    assert not claude_json.exists()
    assert not (tmp_path / "home" / ".claude" / "settings.json").exists()


def test_codex_setup_keeps_comments_and_other_tables_and_remove_restores_them(
    tmp_path: Path,
) -> None:
    codex_home = tmp_path / "codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(USER_CODEX)
    env = {"HOME": str(tmp_path), "CODEX_HOME": str(codex_home), "DSH_HOME": "/data/dsh"}
    before = snapshot(codex_home)
    run_setup(COMPOUND, "codex", env=env)
    run_setup(MEMORY, "codex", env=env)
    text = (codex_home / "config.toml").read_text()
    assert text.startswith(USER_CODEX)  # the user's bytes, comments included, untouched
    config = tomllib.loads(text)
    assert config["mcp_servers"]["other"] == {"command": "other-server", "args": ["--flag"]}
    assert config["mcp_servers"]["dsh-memory"] == {
        "command": "/opt/bin/dsh-memory",
        "args": ["mcp"],
        "required": True,
        "default_tools_approval_mode": "approve",
        "env": {"DSH_HOME": "/data/dsh"},
    }
    hooks = json.loads((codex_home / "hooks.json").read_text())["hooks"]
    assert hooks["SessionStart"][1]["hooks"][0]["command"].endswith("--host codex")
    notes = run_setup(MEMORY, "codex", env=env)["notes"]
    assert any("trust" in note for note in notes)
    assert run_setup(COMPOUND, "codex", env=env)["files"][0]["action"] == "unchanged"
    run_setup(COMPOUND, "codex", env=env, remove=True)
    run_setup(MEMORY, "codex", env=env, remove=True)
    assert snapshot(codex_home) == before


def test_codex_refuses_our_server_written_inline(tmp_path: Path) -> None:
    codex_home = tmp_path / "codex"
    codex_home.mkdir()
    inline = '[mcp_servers]\n"dsh-compound" = { command = "mine" }\n'
    (codex_home / "config.toml").write_text(inline)
    with pytest.raises(DshError) as caught:
        run_setup(COMPOUND, "codex", env={"HOME": str(tmp_path), "CODEX_HOME": str(codex_home)})
    assert caught.value.code == "config-conflict"
    assert (codex_home / "config.toml").read_text() == inline


@pytest.mark.parametrize(
    ("name", "text", "code"),
    [
        (".mcp.json", "{not json", "config-invalid"),
        (".mcp.json", "[]", "config-invalid"),
        (".claude/settings.json", '{"hooks": []}', "config-invalid"),
    ],
)
def test_a_broken_config_file_is_refused_and_left_alone(
    project: Path, name: str, text: str, code: str
) -> None:
    (project / name).write_text(text)
    before = snapshot(project)
    with pytest.raises(DshError) as caught:
        run_setup(COMPOUND, "claude-code", scope="project", project_dir=project)
    assert caught.value.code == code
    assert snapshot(project) == before


def test_bad_host_scope_and_project_are_invalid_arguments(tmp_path: Path) -> None:
    for kwargs in (
        {"host": "cursor"},
        {"host": "codex", "scope": "global"},
        {"host": "claude-code", "scope": "project", "project_dir": tmp_path / "missing"},
    ):
        host = str(kwargs.pop("host"))
        with pytest.raises(DshError) as caught:
            run_setup(COMPOUND, host, env={"HOME": str(tmp_path)}, **kwargs)  # type: ignore[arg-type]
        assert caught.value.code == "invalid-arguments"


def test_a_symlinked_user_file_is_edited_through_the_link(tmp_path: Path) -> None:
    home = tmp_path / "home"
    dotfiles = tmp_path / "dotfiles"
    (home / ".claude").mkdir(parents=True)
    dotfiles.mkdir()
    real = dotfiles / "settings.json"
    real.write_text(json.dumps(USER_SETTINGS, indent=2) + "\n")
    (home / ".claude" / "settings.json").symlink_to(real)
    run_setup(COMPOUND, "claude-code", env={"HOME": str(home)})
    assert (home / ".claude" / "settings.json").is_symlink()
    assert "hook session-start" in real.read_text()
    run_setup(COMPOUND, "claude-code", env={"HOME": str(home)}, remove=True)
    assert json.loads(real.read_text()) == USER_SETTINGS


def test_a_symlinked_project_file_is_refused_before_anything_is_written(project: Path) -> None:
    outside = project.parent / "elsewhere.json"
    outside.write_text("{}\n")
    (project / ".claude" / "settings.json").unlink()
    (project / ".claude" / "settings.json").symlink_to(outside)
    before = snapshot(project)
    with pytest.raises(DshError) as caught:
        run_setup(COMPOUND, "claude-code", scope="project", project_dir=project)
    assert caught.value.code == "symlink-rejected"
    assert snapshot(project) == before and outside.read_text() == "{}\n"


def test_a_hard_linked_file_is_refused_before_anything_is_written(project: Path) -> None:
    os.link(project / ".claude" / "settings.json", project / "copy.json")
    mcp_before = (project / ".mcp.json").read_text()
    with pytest.raises(DshError) as caught:
        run_setup(COMPOUND, "claude-code", scope="project", project_dir=project)
    assert caught.value.code == "config-invalid"
    assert (project / ".mcp.json").read_text() == mcp_before


SKILLED = Integration(
    server="dsh-compound",
    program="dsh-compound",
    command="/opt/bin/dsh-compound",
    files=(("skills/dsh/SKILL.md", "---\nname: dsh\n---\nbody\n"),),
)


def test_owned_files_are_written_and_removed_with_their_empty_folders(project: Path) -> None:
    before = snapshot(project)
    run_setup(SKILLED, "claude-code", scope="project", project_dir=project)
    skill = project / ".claude" / "skills" / "dsh" / "SKILL.md"
    assert skill.read_text() == "---\nname: dsh\n---\nbody\n"
    again = run_setup(SKILLED, "claude-code", scope="project", project_dir=project)
    assert {entry["action"] for entry in again["files"]} == {"unchanged"}
    run_setup(SKILLED, "claude-code", scope="project", project_dir=project, remove=True)
    assert snapshot(project) == before
    assert not (project / ".claude" / "skills").exists()
    assert (project / ".claude").is_dir()  # the user's folder stays


def test_remove_keeps_an_owned_file_the_user_edited(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "CODEX_HOME": str(tmp_path / "codex")}
    run_setup(SKILLED, "codex", env=env)
    skill = tmp_path / "codex" / "skills" / "dsh" / "SKILL.md"
    skill.write_text("my own notes\n")
    run_setup(SKILLED, "codex", env=env, remove=True)
    assert skill.read_text() == "my own notes\n"
