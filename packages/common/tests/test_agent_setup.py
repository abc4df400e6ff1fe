"""Registering MCP servers and hooks in Claude Code and Codex config files, and undoing it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
from dsh_test_support import in_process

from dsh_common.agent_setup import FileChange, Integration, SetupOption, run_setup
from dsh_common.agent_setup_entries import refresh_words
from dsh_common.agent_setup_files import write_all
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


# --- only what is ours is refreshed --------------------------------------------------------

KNOWLEDGE = Integration(
    server="dsh-knowledge",
    program="dsh-knowledge",
    hooks=(("UserPromptSubmit", ("hook", "user-prompt-submit")),),
    command="/opt/bin/dsh-knowledge",
)
DB = SetupOption("--db", "The database.", server=True, hooks=("user-prompt-submit",))
RANKING = SetupOption("--ranking", "Ranking.", server=False, hooks=("user-prompt-submit",))


@pytest.mark.parametrize(
    ("existing", "fixed", "written", "expected"),
    [
        (None, ["mcp"], [], ["mcp"]),
        (["mcp", "--db", "x"], ["mcp"], [], ["mcp", "--db", "x"]),
        (["--db", "x", "mcp"], ["mcp"], [], ["mcp", "--db", "x"]),  # options first: ours out
        (
            ["mcp", "--db=x", "--project", "p"],
            ["mcp"],
            [("--db", "y")],
            ["mcp", "--db", "y", "--project", "p"],
        ),
        (
            ["hook", "session-start", "--host", "codex", "--mine"],
            ["hook", "session-start", "--mcp-server", "m", "--host", "claude-code"],
            [],
            ["hook", "session-start", "--mcp-server", "m", "--host", "claude-code", "--mine"],
        ),
        (
            ["mcp", "--", "--db", "x"],
            ["mcp"],
            [("--db", "y")],
            ["mcp", "--db", "y", "--", "--db", "x"],
        ),
    ],
)
def test_refresh_words_keeps_the_users_words_after_ours(
    existing: list[str] | None,
    fixed: list[str],
    written: list[tuple[str, str]],
    expected: list[str],
) -> None:
    assert refresh_words(existing, fixed, written) == expected
    assert refresh_words(expected, fixed, written) == expected  # idempotent


def test_declared_options_go_where_they_are_declared_and_replace_old_values(
    project: Path,
) -> None:
    kwargs: dict[str, Any] = {"scope": "project", "project_dir": project}
    run_setup(KNOWLEDGE, "claude-code", options=[(DB, "/a.sqlite"), (RANKING, "hybrid")], **kwargs)
    server = json.loads((project / ".mcp.json").read_text())["mcpServers"]["dsh-knowledge"]
    assert server["args"] == ["mcp", "--db", "/a.sqlite"]  # --ranking is for hooks only
    hook = prompt_hooks(project)[-1]
    assert hook == "/opt/bin/dsh-knowledge hook user-prompt-submit --db /a.sqlite --ranking hybrid"
    # A value given replaces the old one; an option not given keeps what is there.
    run_setup(KNOWLEDGE, "claude-code", options=[(DB, "/b.sqlite")], **kwargs)
    assert prompt_hooks(project)[-1].endswith("--db /b.sqlite --ranking hybrid")
    assert run_setup(KNOWLEDGE, "claude-code", **kwargs)["files"][1]["action"] == "unchanged"


def prompt_hooks(project: Path) -> list[str]:
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    return [g["hooks"][0]["command"] for g in settings["hooks"]["UserPromptSubmit"]]


def test_our_hook_is_refreshed_in_place_with_its_group_and_keys(project: Path) -> None:
    settings = project / ".claude" / "settings.json"
    document = {
        "hooks": {
            "UserPromptSubmit": [
                {
                    "matcher": "*",
                    "hooks": [
                        {"type": "command", "command": "echo before"},
                        {
                            "type": "command",
                            "command": "/old/dsh-knowledge hook user-prompt-submit --project p",
                            "timeout": 45,
                            "statusMessage": "recalling",
                        },
                    ],
                },
                {"hooks": [{"type": "command", "command": "echo after"}]},
            ],
            # Not registered by setup under this event: the user's, left alone.
            "SessionStart": [
                {"hooks": [{"type": "command", "command": "dsh-knowledge hook user-prompt-submit"}]}
            ],
        }
    }
    settings.write_text(json.dumps(document, indent=4) + "\n")
    run_setup(KNOWLEDGE, "claude-code", scope="project", project_dir=project)
    after = json.loads(settings.read_text())
    document["hooks"]["UserPromptSubmit"][0]["hooks"][1]["command"] = (
        "/opt/bin/dsh-knowledge hook user-prompt-submit --project p"
    )
    assert after == document
    assert settings.read_text().startswith('{\n    "hooks"')  # the file's own indentation
    run_setup(KNOWLEDGE, "claude-code", scope="project", project_dir=project, remove=True)
    left = json.loads(settings.read_text())["hooks"]
    assert [h["command"] for h in left["UserPromptSubmit"][0]["hooks"]] == ["echo before"]
    assert left["SessionStart"] == document["hooks"]["SessionStart"]


def test_our_server_entry_keeps_the_users_keys(project: Path) -> None:
    mcp = project / ".mcp.json"
    mine = {
        "type": "stdio",
        "command": "/old/dsh-knowledge",
        "args": ["mcp", "--project", "p"],
        "env": {"DSH_KNOWLEDGE_DB": "/data/k.sqlite"},
        "timeout": 9,
    }
    mcp.write_text(json.dumps({"mcpServers": {"dsh-knowledge": mine}}, indent=2) + "\n")
    run_setup(KNOWLEDGE, "claude-code", scope="project", project_dir=project)
    entry = json.loads(mcp.read_text())["mcpServers"]["dsh-knowledge"]
    assert entry == {**mine, "command": "/opt/bin/dsh-knowledge"}
    assert list(entry) == list(mine)  # in place: the key order is the user's


def test_codex_keys_the_user_added_to_our_table_survive_a_rewrite(tmp_path: Path) -> None:
    codex = tmp_path / "codex"
    codex.mkdir()
    (codex / "config.toml").write_text(
        "[mcp_servers.dsh-compound]\n"
        'command = "/old/dsh-compound"\nargs = ["mcp", "--workspace", "/w"]\n'
        "startup_timeout_sec = 12.5\nenabled = true\nsince = 2026-01-02\n"
        'required = false\n\n[mcp_servers.dsh-compound.env]\nTZ = "UTC"\n'
    )
    env = {"HOME": str(tmp_path), "CODEX_HOME": str(codex), "DSH_HOME": "/d"}
    run_setup(COMPOUND, "codex", env=env)
    table = tomllib.loads((codex / "config.toml").read_text())["mcp_servers"]["dsh-compound"]
    assert table["command"] == "/opt/dsh bin/dsh-compound"
    assert table["args"] == ["mcp", "--workspace", "/w"]
    assert table["startup_timeout_sec"] == 12.5 and table["enabled"] is True
    assert str(table["since"]) == "2026-01-02" and table["required"] is False
    assert table["default_tools_approval_mode"] == "approve"  # absent: written
    assert table["env"] == {"TZ": "UTC", "DSH_HOME": "/d"}


# --- checked before the first write ---------------------------------------------------------


def test_crlf_files_keep_their_line_endings(project: Path) -> None:
    mcp = project / ".mcp.json"
    mcp.write_bytes(b'{\r\n  "mcpServers": {\r\n    "theirs": {"command": "x"}\r\n  }\r\n}\r\n')
    before = mcp.read_bytes()
    run_setup(COMPOUND, "claude-code", scope="project", project_dir=project)
    assert mcp.read_bytes().count(b"\n") == mcp.read_bytes().count(b"\r\n")
    run_setup(COMPOUND, "claude-code", scope="project", project_dir=project, remove=True)
    assert json.loads(mcp.read_bytes()) == json.loads(before)
    assert b"\r\n" in mcp.read_bytes()


def test_a_deeply_nested_file_is_config_invalid(project: Path) -> None:
    (project / ".mcp.json").write_text('{"x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    before = snapshot(project)
    with pytest.raises(DshError) as caught:
        run_setup(COMPOUND, "claude-code", scope="project", project_dir=project)
    assert caught.value.code == "config-invalid"
    assert snapshot(project) == before


def test_an_undecodable_command_path_is_refused_before_any_write(tmp_path: Path) -> None:
    broken = Integration(**{**COMPOUND.__dict__, "command": "/opt/\udcffbin/dsh-compound"})
    with pytest.raises(DshError) as caught:
        run_setup(broken, "claude-code", env={"HOME": str(tmp_path)})
    assert caught.value.code == "invalid-arguments"
    assert "\\xff" in caught.value.message
    assert list(tmp_path.iterdir()) == []


def test_a_project_folder_that_is_a_file_is_config_invalid(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / ".codex").write_text("not a folder")
    with pytest.raises(DshError) as caught:
        run_setup(
            COMPOUND, "codex", scope="project", project_dir=project, env={"HOME": str(tmp_path)}
        )
    assert caught.value.code == "config-invalid"
    assert sorted(os.listdir(project)) == [".codex"]


def test_a_lock_left_by_a_dead_setup_is_reported_at_once(project: Path) -> None:
    lock = project / ".mcp.json.dsh-setup.lock"
    lock.write_text(json.dumps({"pid": 2**22 + 12345, "hostname": socket.gethostname()}))
    before = snapshot(project)
    with pytest.raises(DshError) as caught:
        run_setup(COMPOUND, "claude-code", scope="project", project_dir=project)
    assert caught.value.code == "lock-held"
    assert "no longer running" in caught.value.message
    assert snapshot(project) == before


def test_a_failed_write_puts_back_the_files_already_written(tmp_path: Path) -> None:
    first, second = tmp_path / "a.json", tmp_path / "gone" / "b.json"
    first.write_text("{}\n")
    changes = [FileChange(first, "{}\n", '{"x": 1}\n'), FileChange(second, None, "{}\n")]
    with pytest.raises(DshError) as caught:
        write_all(changes)  # the folder of the second file does not exist
    assert caught.value.code == "config-unwritable"
    assert first.read_text() == "{}\n"


def test_a_file_changed_since_it_was_read_is_not_overwritten(tmp_path: Path) -> None:
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text("{}\n")
    second.write_text('{"host": "wrote this meanwhile"}\n')
    changes = [FileChange(first, "{}\n", '{"x": 1}\n'), FileChange(second, "{}\n", '{"y": 1}\n')]
    assert write_all(changes) is False  # the caller plans again
    assert first.read_text() == "{}\n"
    assert second.read_text() == '{"host": "wrote this meanwhile"}\n'


def setup_app() -> Any:
    """A Typer app with ``add_setup_command`` declaring one option (``--db``)."""
    import typer

    from dsh_common.cli import add_setup_command

    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)

    @app.command()
    def other() -> None:
        """Another command."""

    def integration() -> Integration:
        return Integration(
            server="demo",
            program="demo",
            command="/opt/bin/demo",
            hooks=(("UserPromptSubmit", ("hook", "user-prompt-submit")),),
        )

    option = SetupOption("--db", "The demo database.", metavar="URL", hooks=("user-prompt-submit",))
    add_setup_command(
        app, integration, summary="Register demo.", examples=["demo setup codex"], options=[option]
    )
    return app


def test_the_setup_command_offers_each_declared_option(tmp_path: Path) -> None:
    app = setup_app()
    env = {**os.environ, "HOME": str(tmp_path), "CODEX_HOME": str(tmp_path / "codex")}

    def demo(*args: str) -> subprocess.CompletedProcess[str]:
        return in_process.run_app(app, "demo", "setup", *args, env=env)

    helped = demo("--help")
    assert helped.returncode == 0 and "--db URL" in helped.stdout
    assert "The demo database." in helped.stdout and "--dry-run" in helped.stdout
    done = demo("codex", "--db", "postgresql://db/dsh")
    assert done.returncode == 0, done.stderr
    config = tomllib.loads((tmp_path / "codex" / "config.toml").read_text())
    assert config["mcp_servers"]["demo"]["args"] == ["mcp", "--db", "postgresql://db/dsh"]
    hooks = json.loads((tmp_path / "codex" / "hooks.json").read_text())["hooks"]
    command = hooks["UserPromptSubmit"][0]["hooks"][0]["command"]
    assert command == "/opt/bin/demo hook user-prompt-submit --db postgresql://db/dsh"
    plain = demo("codex", "--dry-run")
    assert plain.returncode == 0 and json.loads(plain.stdout)["diff"] == ""  # kept as it was


def test_a_hook_with_variables_in_front_is_still_ours_and_keeps_them(project: Path) -> None:
    settings = project / ".claude" / "settings.json"
    line = "DSH_HOME='/my data' \"/old/dsh-knowledge\" hook user-prompt-submit --project p"
    document = {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": line}]}]}}
    settings.write_text(json.dumps(document) + "\n")
    run_setup(KNOWLEDGE, "claude-code", scope="project", project_dir=project)
    assert prompt_hooks(project) == [
        "DSH_HOME='/my data' /opt/bin/dsh-knowledge hook user-prompt-submit --project p"
    ]  # refreshed in place, not a second hook beside it
    # Words already right: the user's own quoting is kept byte for byte.
    mine = "DSH_HOME=\"/my data\" '/opt/bin/dsh-knowledge' hook user-prompt-submit --project p"
    document["hooks"]["UserPromptSubmit"][0]["hooks"][0].update(command=mine, timeout=10)
    settings.write_text(json.dumps(document) + "\n")
    result = run_setup(KNOWLEDGE, "claude-code", scope="project", project_dir=project)
    assert result["files"][1]["action"] == "unchanged" and prompt_hooks(project) == [mine]
    run_setup(KNOWLEDGE, "claude-code", scope="project", project_dir=project, remove=True)
    assert not settings.exists()


# --- variables setup owns (DSH_RANKING): the server's env and NAME=value before our hooks ---

HYBRID = {"DSH_RANKING": "hybrid"}
LEXICAL: dict[str, str | None] = {"DSH_RANKING": None}


def test_a_variable_goes_into_our_server_env_and_before_our_hooks(project: Path) -> None:
    kwargs: dict[str, Any] = {"scope": "project", "project_dir": project}
    before = snapshot(project)
    run_setup(KNOWLEDGE, "claude-code", **kwargs)
    plain = snapshot(project)
    run_setup(KNOWLEDGE, "claude-code", variables=HYBRID, **kwargs)
    server = json.loads((project / ".mcp.json").read_text())["mcpServers"]["dsh-knowledge"]
    assert server["env"] == {"DSH_RANKING": "hybrid"}
    assert prompt_hooks(project) == [
        "DSH_RANKING=hybrid /opt/bin/dsh-knowledge hook user-prompt-submit"
    ]
    again = run_setup(KNOWLEDGE, "claude-code", variables=HYBRID, **kwargs)
    assert [f["action"] for f in again["files"]] == ["unchanged", "unchanged"]
    run_setup(KNOWLEDGE, "claude-code", **kwargs)  # not given: left as it is
    assert prompt_hooks(project)[0].startswith("DSH_RANKING=hybrid ")
    run_setup(KNOWLEDGE, "claude-code", variables=LEXICAL, **kwargs)
    assert snapshot(project) == plain  # taken out again, byte for byte
    run_setup(KNOWLEDGE, "claude-code", remove=True, **kwargs)
    assert snapshot(project) == before


def test_a_variable_changes_only_its_own_words_and_keys(project: Path) -> None:
    mcp = project / ".mcp.json"
    mine = {
        "type": "stdio",
        "command": "/opt/bin/dsh-knowledge",
        "args": ["mcp"],
        "env": {"TZ": "UTC", "DSH_RANKING": "lexical", "LANG": "C"},
    }
    mcp.write_text(json.dumps({"mcpServers": {"dsh-knowledge": mine}}, indent=2) + "\n")
    settings = project / ".claude" / "settings.json"
    line = "TZ=UTC DSH_RANKING=lexical /opt/bin/dsh-knowledge hook user-prompt-submit --project p"
    document = {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": line}]}]}}
    settings.write_text(json.dumps(document) + "\n")
    kwargs: dict[str, Any] = {"scope": "project", "project_dir": project}
    run_setup(KNOWLEDGE, "claude-code", variables=HYBRID, **kwargs)
    entry = json.loads(mcp.read_text())["mcpServers"]["dsh-knowledge"]
    assert entry["env"] == {"TZ": "UTC", "DSH_RANKING": "hybrid", "LANG": "C"}  # in place
    assert prompt_hooks(project) == [
        "TZ=UTC DSH_RANKING=hybrid /opt/bin/dsh-knowledge hook user-prompt-submit --project p"
    ]
    run_setup(KNOWLEDGE, "claude-code", variables=LEXICAL, **kwargs)
    entry = json.loads(mcp.read_text())["mcpServers"]["dsh-knowledge"]
    assert entry["env"] == {"TZ": "UTC", "LANG": "C"}  # the user's variables stay
    assert prompt_hooks(project) == [
        "TZ=UTC /opt/bin/dsh-knowledge hook user-prompt-submit --project p"
    ]


def test_codex_gets_the_variable_in_its_env_table_beside_dsh_home(tmp_path: Path) -> None:
    codex = tmp_path / "codex"
    env = {"HOME": str(tmp_path), "CODEX_HOME": str(codex), "DSH_HOME": "/d"}
    result = run_setup(MEMORY, "codex", env=env, variables=HYBRID, dry_run=True)
    assert 'env = { DSH_HOME = "/d", DSH_RANKING = "hybrid" }' in result["diff"]
    assert "DSH_RANKING=hybrid /opt/bin/dsh-memory hook session-start" in result["diff"]
    assert not codex.exists()  # a dry run writes nothing
    run_setup(MEMORY, "codex", env=env, variables=HYBRID)
    table = tomllib.loads((codex / "config.toml").read_text())["mcp_servers"]["dsh-memory"]
    assert table["env"] == {"DSH_HOME": "/d", "DSH_RANKING": "hybrid"}
    run_setup(MEMORY, "codex", env=env, variables=LEXICAL)
    table = tomllib.loads((codex / "config.toml").read_text())["mcp_servers"]["dsh-memory"]
    assert table["env"] == {"DSH_HOME": "/d"}
    hooks = json.loads((codex / "hooks.json").read_text())["hooks"]["SessionStart"]
    assert hooks[0]["hooks"][0]["command"] == (
        "/opt/bin/dsh-memory hook session-start --host codex"
    )
