"""``setup`` never loses a user's settings and never writes outside the project.

Each test plays out a hostile project or a mishap through the installed commands, as a user
(or a bootstrap script) runs them: concurrent setups, a re-run over entries the user tuned, a
project whose ``.claude`` / ``.codex`` is a link into the home folder, a valid JSON file
holding a lone-surrogate escape, a folder that cannot be written.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
from dsh_test_support import commands as dsh_commands

BIN = dsh_commands.BIN
PRODUCTS = ("dsh-compound", "dsh-memory", "dsh-knowledge")


def environment(home: Path, **extra: str) -> dict[str, str]:
    """The test's environment with ``home`` as HOME and CODEX_HOME there; the DSH data in
    its default place in that home unless ``extra`` names DSH_HOME."""
    changes: dict[str, str | None] = {"HOME": str(home), "CODEX_HOME": str(home / ".codex")}
    changes["DSH_HOME"] = None
    return dsh_commands.environ(**{**changes, **extra})


def setup(
    program: str, *args: str, home: Path, prefix: tuple[str, ...] = (), **extra: str
) -> subprocess.CompletedProcess[str]:
    """``PROGRAM setup ARGS`` through the console script (setup writes the command it was
    started as)."""
    env = environment(home, **extra)
    return dsh_commands.run(program, "setup", *args, env=env, prefix=prefix)


def start(program: str, *args: str, home: Path, **extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(dsh_commands.program(program)), "setup", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment(home, **extra),
        stdin=subprocess.DEVNULL,
    )


def finish(process: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    result: dict[str, Any] = json.loads(out)
    return result


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and not path.is_symlink()
    }


def hook_commands(settings: Path) -> list[str]:
    hooks = json.loads(settings.read_text())["hooks"]
    return [h["command"] for groups in hooks.values() for g in groups for h in g["hooks"]]


# --- concurrent setups keep each other's entries ----------------------------------------

#: ~3 MB, the size a ~/.claude.json reaches with a few months of project history. Parsing
#: and writing it takes long enough that concurrent setups really overlap.
HISTORY = {
    "numStartups": 412,
    "projects": {
        f"/work/p{i}": {"history": [{"display": "x" * 200, "pastedContents": {}}] * 5}
        for i in range(2000)
    },
}


def test_three_products_set_up_at_once_keep_every_entry(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude.json").write_text(json.dumps(HISTORY, indent=2))
    user_settings = {"permissions": {"allow": ["Bash(ls:*)"]}, "projects": HISTORY["projects"]}
    (home / ".claude" / "settings.json").write_text(json.dumps(user_settings, indent=2))
    for round_ in range(2):
        processes = [start(program, "claude-code", home=home) for program in PRODUCTS]
        results = [finish(process) for process in processes]
        if round_ == 0:
            assert all(r["files"][0]["action"] == "updated" for r in results)
        claude = json.loads((home / ".claude.json").read_text())
        assert sorted(claude["mcpServers"]) == sorted(PRODUCTS)
        assert claude["projects"] == HISTORY["projects"] and claude["numStartups"] == 412
        settings = json.loads((home / ".claude" / "settings.json").read_text())
        assert settings["permissions"] == user_settings["permissions"]
        commands = hook_commands(home / ".claude" / "settings.json")
        for program in PRODUCTS:
            assert any(c.startswith(f"{BIN / program} hook ") for c in commands), program
        assert len(commands) == 4  # compound 2, memory 1, knowledge 1: no duplicates
    assert not list(home.rglob("*.dsh-setup.lock"))  # every lock was released


def test_three_products_switch_ranking_at_once_and_back_keeping_every_entry(
    tmp_path: Path,
) -> None:
    # --ranking hybrid rewrites our server entries and hook commands in the same shared files
    # at once; the locks and the re-read keep every product's change and the user's keys.
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude.json").write_text(json.dumps(HISTORY, indent=2))
    user_settings = {"permissions": {"allow": ["Bash(ls:*)"]}}
    (home / ".claude" / "settings.json").write_text(json.dumps(user_settings, indent=2))
    shared = {"DSH_HOME": str(tmp_path / "dsh")}  # one weight cache for the three
    for process in [start(program, "claude-code", home=home, **shared) for program in PRODUCTS]:
        finish(process)
    plain = snapshot(home)
    for ranking, expected in (("hybrid", {"DSH_RANKING": "hybrid"}), ("lexical", None)):
        processes = [
            start(program, "claude-code", "--ranking", ranking, home=home, **shared)
            for program in PRODUCTS
        ]
        assert {finish(process)["ranking"] for process in processes} == {ranking}
        claude = json.loads((home / ".claude.json").read_text())
        assert claude["projects"] == HISTORY["projects"]
        assert [claude["mcpServers"][p].get("env") for p in PRODUCTS] == [expected] * 3
        commands = hook_commands(home / ".claude" / "settings.json")
        assert len(commands) == 4
        assert all(c.startswith("DSH_RANKING=hybrid ") == (ranking == "hybrid") for c in commands)
    assert snapshot(home) == plain
    assert not list(home.rglob("*.dsh-setup.lock"))


def test_the_same_setup_three_times_at_once_writes_one_entry(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".claude.json").write_text(json.dumps(HISTORY, indent=2))
    processes = [start("dsh-memory", "claude-code", home=home) for _ in range(3)]
    actions = [finish(process)["files"][0]["action"] for process in processes]
    assert sorted(actions) == ["unchanged", "unchanged", "updated"]  # one wrote, two saw it
    claude = json.loads((home / ".claude.json").read_text())
    assert list(claude["mcpServers"]) == ["dsh-memory"]
    assert claude["projects"] == HISTORY["projects"]
    assert len(hook_commands(home / ".claude" / "settings.json")) == 1


#: A Codex config.toml that trusts a few thousand projects (one table each).
TRUSTED = "".join(f'[projects."/work/p{i}"]\ntrust_level = "trusted"\n\n' for i in range(6000))


def test_three_products_at_once_for_codex_keep_every_table(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    (home / ".codex" / "config.toml").write_text(TRUSTED)
    processes = [start(program, "codex", home=home) for program in PRODUCTS]
    for process in processes:
        finish(process)
    text = (home / ".codex" / "config.toml").read_text()
    assert text.startswith(TRUSTED)
    assert sorted(tomllib.loads(text)["mcp_servers"]) == sorted(PRODUCTS)
    commands = hook_commands(home / ".codex" / "hooks.json")
    assert len(commands) == 4


# --- a re-run keeps what the user tuned --------------------------------------------------


def test_ranking_keeps_the_users_env_and_the_words_in_front_of_our_hook(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert setup("dsh-knowledge", "codex", home=home).returncode == 0
    config = home / ".codex" / "config.toml"
    config.write_text(
        config.read_text().replace(
            'default_tools_approval_mode = "approve"',
            'default_tools_approval_mode = "approve"\nenv = { TZ = "UTC" }',
        )
    )
    hooks_file = home / ".codex" / "hooks.json"
    hooks = json.loads(hooks_file.read_text())
    ours = hooks["hooks"]["UserPromptSubmit"][0]["hooks"][0]
    ours["command"] = "LANG=C " + ours["command"] + " --project payments"
    hooks_file.write_text(json.dumps(hooks, indent=2) + "\n")
    tuned = hook_commands(hooks_file)
    dsh = str(tmp_path / "dsh")  # a DSH_HOME set when setup runs is written for Codex
    done = setup("dsh-knowledge", "codex", "--ranking", "hybrid", home=home, DSH_HOME=dsh)
    assert done.returncode == 0, done.stderr
    table = tomllib.loads(config.read_text())["mcp_servers"]["dsh-knowledge"]
    assert table["env"] == {"TZ": "UTC", "DSH_HOME": dsh, "DSH_RANKING": "hybrid"}
    command = f"{BIN / 'dsh-knowledge'} hook user-prompt-submit --project payments"
    assert hook_commands(hooks_file) == [f"LANG=C DSH_RANKING=hybrid {command}"]
    done = setup("dsh-knowledge", "codex", "--ranking", "lexical", home=home, DSH_HOME=dsh)
    assert done.returncode == 0, done.stderr
    table = tomllib.loads(config.read_text())["mcp_servers"]["dsh-knowledge"]
    assert table["env"] == {"TZ": "UTC", "DSH_HOME": dsh}
    assert hook_commands(hooks_file) == tuned == [f"LANG=C {command}"]


def test_rerunning_setup_keeps_the_users_env_options_and_hook_settings(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert setup("dsh-knowledge", "claude-code", home=home).returncode == 0
    claude_json = home / ".claude.json"
    settings = home / ".claude" / "settings.json"
    servers = json.loads(claude_json.read_text())
    ours = servers["mcpServers"]["dsh-knowledge"]
    ours["env"] = {"DSH_KNOWLEDGE_PROJECT": "payments"}
    ours["args"] += ["--db", "/data/knowledge.sqlite"]
    claude_json.write_text(json.dumps(servers, indent=2) + "\n")
    document = json.loads(settings.read_text())
    group = document["hooks"]["UserPromptSubmit"][0]
    group["matcher"] = "*"
    group["hooks"][0]["command"] += " --db /data/knowledge.sqlite --project payments"
    group["hooks"][0]["timeout"] = 30
    stop = f"{BIN / 'dsh-knowledge'} hook stop --auto-extract"  # registered by hand
    document["hooks"]["Stop"] = [{"hooks": [{"type": "command", "command": stop}]}]
    settings.write_text(json.dumps(document, indent=2) + "\n")
    tuned = snapshot(home)

    done = setup("dsh-knowledge", "claude-code", home=home)
    assert done.returncode == 0, done.stderr
    assert [f["action"] for f in json.loads(done.stdout)["files"]] == ["unchanged", "unchanged"]
    assert snapshot(home) == tuned

    # A reinstall elsewhere refreshes the command and keeps everything else.
    stale = json.loads(claude_json.read_text())
    stale["mcpServers"]["dsh-knowledge"]["command"] = "/old/place/dsh-knowledge"
    claude_json.write_text(json.dumps(stale, indent=2) + "\n")
    hooks = json.loads(settings.read_text())
    ours_hook = hooks["hooks"]["UserPromptSubmit"][0]["hooks"][0]
    ours_hook["command"] = ours_hook["command"].replace(str(BIN), "/old/place")
    settings.write_text(json.dumps(hooks, indent=2) + "\n")
    assert setup("dsh-knowledge", "claude-code", home=home).returncode == 0
    assert snapshot(home) == tuned

    assert setup("dsh-knowledge", "claude-code", "--remove", home=home).returncode == 0
    left = json.loads(settings.read_text())["hooks"]
    assert list(left) == ["Stop"]  # the user's own hook is not ours to remove
    assert not claude_json.exists()  # it held only our server


def test_rerunning_codex_setup_keeps_the_users_keys_in_our_table(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert setup("dsh-memory", "codex", home=home, DSH_HOME=str(tmp_path / "dsh")).returncode == 0
    config = home / ".codex" / "config.toml"
    text = config.read_text().replace(
        "required = true",
        "required = false\nstartup_timeout_sec = 30.5\nargs_extra_note = 'mine'",
    )
    text = text.replace('env = { DSH_HOME = "', 'env = { TZ = "UTC", DSH_HOME = "')
    config.write_text(text)
    before = config.read_bytes()
    assert setup("dsh-memory", "codex", home=home, DSH_HOME=str(tmp_path / "dsh")).returncode == 0
    assert config.read_bytes() == before
    done = setup("dsh-memory", "codex", home=home, DSH_HOME=str(tmp_path / "other"))
    assert done.returncode == 0, done.stderr
    table = tomllib.loads(config.read_text())["mcp_servers"]["dsh-memory"]
    assert table["required"] is False and table["startup_timeout_sec"] == 30.5
    assert table["args_extra_note"] == "mine"
    assert table["env"] == {"TZ": "UTC", "DSH_HOME": str(tmp_path / "other")}
    assert table["command"] == str(BIN / "dsh-memory") and table["args"] == ["mcp"]


# --- a project's links never lead setup outside it ---------------------------------------


@pytest.mark.parametrize(
    ("host", "folder", "home_folder"),
    [("claude-code", ".claude", ".claude"), ("codex", ".codex", ".codex")],
)
def test_a_project_folder_linked_into_the_home_is_refused(
    tmp_path: Path, host: str, folder: str, home_folder: str
) -> None:
    home = tmp_path / "home"
    (home / home_folder).mkdir(parents=True)
    global_file = home / home_folder / ("settings.json" if host == "claude-code" else "hooks.json")
    global_file.write_text('{"hooks": {}}\n')
    project = tmp_path / "cloned"
    project.mkdir()
    (project / folder).symlink_to(home / home_folder)  # what a hostile repository ships
    home_before, project_before = snapshot(home), snapshot(project)
    for program in PRODUCTS:
        done = setup(program, host, "--scope", "project", "--project-dir", str(project), home=home)
        assert done.returncode == 1 and done.stdout == ""
        error = json.loads(done.stderr)["error"]
        assert error["code"] == "symlink-rejected", error
        assert f"{project / folder}" in error["message"]
    assert snapshot(home) == home_before and snapshot(project) == project_before
    assert not (project / ".mcp.json").exists()


def test_a_linked_folder_deeper_in_the_project_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    project = tmp_path / "cloned"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "skills").symlink_to(elsewhere)  # the skill would land outside
    done = setup(
        "dsh-compound",
        "claude-code",
        "--scope",
        "project",
        "--project-dir",
        str(project),
        home=home,
    )
    assert done.returncode == 1
    assert json.loads(done.stderr)["error"]["code"] == "symlink-rejected"
    assert list(elsewhere.iterdir()) == [] and sorted(os.listdir(project)) == [".claude"]


def test_a_home_folder_that_is_a_link_is_followed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    dotfiles = tmp_path / "dotfiles" / "claude"
    dotfiles.mkdir(parents=True)
    (home / ".claude").symlink_to(dotfiles)  # ~/.claude kept in a dotfiles repository
    done = setup("dsh-compound", "claude-code", home=home)
    assert done.returncode == 0, done.stderr
    assert (home / ".claude").is_symlink()
    assert "hook session-start" in (dotfiles / "settings.json").read_text()
    assert (dotfiles / "skills" / "dsh" / "SKILL.md").is_file()
    assert setup("dsh-compound", "claude-code", "--remove", home=home).returncode == 0
    assert list(dotfiles.iterdir()) == []


# --- everything is checked before the first write ----------------------------------------


def test_a_lone_surrogate_escape_is_kept_and_both_files_are_written(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude.json").write_text('{"numStartups": 3}\n')
    # Valid JSON: an escape for half of a UTF-16 pair, as some tools write broken emoji.
    settings = home / ".claude" / "settings.json"
    settings.write_text('{\n  "statusLine": {"text": "\\ud83d end"}\n}\n')
    done = setup("dsh-compound", "claude-code", home=home)
    assert done.returncode == 0, done.stderr
    assert [f["action"] for f in json.loads(done.stdout)["files"]][:2] == ["updated", "updated"]
    assert "dsh-compound" in json.loads((home / ".claude.json").read_text())["mcpServers"]
    written = settings.read_text()
    assert json.loads(written)["statusLine"] == {"text": "\ud83d end"}  # the same value
    assert "\\ud83d end" in written
    assert setup("dsh-compound", "claude-code", "--remove", home=home).returncode == 0
    assert json.loads(settings.read_text()) == {"statusLine": {"text": "\ud83d end"}}


def test_a_broken_later_file_leaves_the_first_one_alone(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    (home / ".codex" / "config.toml").write_text('model = "gpt-5.5"\n')
    (home / ".codex" / "hooks.json").write_text('{"hooks": {"SessionStart": "oops"}}')
    before = snapshot(home)
    for program in PRODUCTS:
        done = setup(program, "codex", home=home)
        assert done.returncode == 1
        assert json.loads(done.stderr)["error"]["code"] == "config-invalid"
    assert snapshot(home) == before


@functools.cache
def _namespace_problem() -> str | None:
    unshare = shutil.which("unshare")
    if unshare is None:
        return "unshare (util-linux) is missing"
    probe = subprocess.run(
        [
            unshare,
            "--mount",
            "--propagation",
            "private",
            "--",
            "sh",
            "-c",
            "mount -t tmpfs -o size=4k tmpfs /mnt",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return None if probe.returncode == 0 else f"no private mount namespace: {probe.stderr}"


def test_a_read_only_settings_folder_fails_before_anything_is_written(tmp_path: Path) -> None:
    problem = _namespace_problem()
    if problem is not None:
        pytest.skip(problem)
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude.json").write_text('{"numStartups": 3}\n')
    (home / ".claude" / "settings.json").write_text("{}\n")
    before = snapshot(home)
    folder = home / ".claude"
    # Root ignores permission bits: a read-only bind mount is what really refuses the write.
    prefix = (
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "--",
        "sh",
        "-c",
        f"mount --bind -o ro '{folder}' '{folder}' && exec \"$@\"",
        "sh",
    )
    done = setup("dsh-memory", "claude-code", home=home, prefix=prefix)
    assert done.returncode == 1
    error = json.loads(done.stderr)["error"]
    assert error["code"] == "config-unwritable", error
    assert "Read-only file system" in error["message"]
    assert snapshot(home) == before  # ~/.claude.json was not written either
