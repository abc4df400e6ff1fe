"""One database resolver for every front end, proved through the installed commands.

``DSH_KNOWLEDGE_DB`` (which ``setup`` carries into agent configs) must name the store that
``add``, the fast-path ``search``/``retrieve``, the prompt hook, the MCP server and the
library all open: a knowledge item added on the command line reaches the agent.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

from dsh_knowledge.repository import KnowledgeRepository
from dsh_knowledge.store import KnowledgeStore
from dsh_knowledge.store_location import default_database_path, resolve_database

from .agent_helpers import command


def cli(
    *args: str, env: dict[str, str], cwd: Path, data: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [command(), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        input=data,
        env={**os.environ, **env},
        timeout=120,
        check=False,
    )


def ok(*args: str, env: dict[str, str], cwd: Path) -> Any:
    done = cli(*args, env=env, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def hook_payload(workspace: Path, prompt: str) -> str:
    return json.dumps({"session_id": "s1", "cwd": str(workspace), "prompt": prompt})


def mcp_search(db_env: dict[str, str], workspace: Path, query: str) -> list[str]:
    pytest.importorskip("mcp", reason="the MCP extra (dsh-knowledge[mcp]) is not installed")
    from .test_mcp_server import session

    found: list[str] = []

    async def body(client: Any) -> None:
        result = await client.call_tool("knowledge_search", {"query": query})
        assert result.is_error is False, result.content
        found.extend(item["id"] for item in result.structured_content["items"])

    old = Path.cwd()
    os.chdir(workspace)  # the MCP server's working directory is its workspace
    try:
        session([], body, db_env)
    finally:
        os.chdir(old)
    return found


def test_add_on_the_command_line_reaches_every_reader_of_dsh_knowledge_db(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str, db: str
) -> None:
    workspace = tmp_path / "proj"
    workspace.mkdir()
    if backend == "sqlite":
        db = str(tmp_path / "team" / "shared.sqlite")
    env = {"DSH_KNOWLEDGE_DB": db}
    content = "Provider calls go through ResponseRouter."
    item = ok(
        "add",
        "--workspace",
        str(workspace),
        "--type",
        "decision",
        "--content",
        content,
        env=env,
        cwd=workspace,
    )
    ok("verify", item["id"], env=env, cwd=workspace)
    assert backend != "sqlite" or Path(db).is_file()
    # Nothing went to the default location: there is one store, not two.
    assert not default_database_path().exists()

    # The fast path (plain search and retrieve) reads it...
    searched = ok("search", "ResponseRouter", "--workspace", str(workspace), env=env, cwd=tmp_path)
    assert [found["id"] for found in searched["items"]] == [item["id"]]
    got = ok("retrieve", "provider calls", "--workspace", str(workspace), env=env, cwd=tmp_path)
    assert [r["knowledge"]["id"] for r in got["results"]] == [item["id"]]
    # ...and so does the parser path (an option the fast path leaves to typer).
    got = ok(
        "retrieve",
        "provider",
        "--workspace",
        str(workspace),
        "--prefer",
        "decision",
        env=env,
        cwd=tmp_path,
    )
    assert [r["knowledge"]["id"] for r in got["results"]] == [item["id"]]

    # The prompt hook, started by the agent host in the workspace with the same environment.
    hook = cli(
        "hook",
        "user-prompt-submit",
        env=env,
        cwd=workspace,
        data=hook_payload(workspace, "How are provider calls routed?"),
    )
    assert hook.returncode == 0 and hook.stderr == ""
    assert "ResponseRouter" in json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]

    # The MCP server.
    assert mcp_search(env, workspace, "ResponseRouter") == [item["id"]]

    # The library: KnowledgeStore() with no argument.
    monkeypatch.setenv("DSH_KNOWLEDGE_DB", db)
    with KnowledgeStore() as store:
        assert KnowledgeRepository(store).require(item["id"])["status"] == "verified"
    assert not default_database_path().exists()


def test_a_relative_path_and_the_option_resolve_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DSH_KNOWLEDGE_DB", "rel/k.sqlite")
    assert resolve_database() == str(tmp_path / "rel" / "k.sqlite")
    assert resolve_database("other.sqlite") == str(tmp_path / "other.sqlite")
    assert resolve_database("  ") == str(tmp_path / "rel" / "k.sqlite")  # blank is "not given"
    monkeypatch.setenv("DSH_KNOWLEDGE_DB", " ")
    assert resolve_database() == str(default_database_path())
    assert resolve_database(":memory:") == ":memory:"


def test_the_option_wins_over_the_environment(tmp_path: Path) -> None:
    env = {"DSH_KNOWLEDGE_DB": str(tmp_path / "env.sqlite")}
    explicit = tmp_path / "explicit.sqlite"
    ok(
        "--db",
        str(explicit),
        "add",
        "--workspace",
        "/w",
        "--type",
        "fact",
        "--content",
        "x",
        env=env,
        cwd=tmp_path,
    )
    assert explicit.is_file() and not (tmp_path / "env.sqlite").exists()
    found = ok("search", "x", "--db", str(explicit), env=env, cwd=tmp_path)
    assert len(found["items"]) == 1


def test_setup_writes_the_resolved_database_into_the_agent_configs(
    tmp_path: Path, backend: str, db: str
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    if backend == "sqlite":
        # A relative DSH_KNOWLEDGE_DB, as a user might export it in the repository's shell.
        env = {"DSH_KNOWLEDGE_DB": "kb/team.sqlite"}
        db = str(project / "kb" / "team.sqlite")
    else:
        env = {"DSH_KNOWLEDGE_DB": db}  # a URL without a password (setup refuses those)
    ok(
        "setup",
        "claude-code",
        "--scope",
        "project",
        "--project-dir",
        str(project),
        env=env,
        cwd=project,
    )
    server = json.loads((project / ".mcp.json").read_text())["mcpServers"]["dsh-knowledge"]
    assert server["args"] == ["mcp", "--db", db]
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    hook_line = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    assert shlex.split(hook_line)[1:] == ["hook", "user-prompt-submit", "--db", db]

    item = ok(
        "add",
        "--workspace",
        str(project),
        "--type",
        "fact",
        "--content",
        "The billing export runs nightly.",
        env=env,
        cwd=project,
    )
    ok("verify", item["id"], env=env, cwd=project)
    # The host runs the hook line somewhere else, without the user's shell environment.
    clean = {k: v for k, v in os.environ.items() if k != "DSH_KNOWLEDGE_DB"}
    done = subprocess.run(
        shlex.split(hook_line),
        input=hook_payload(project, "when does billing export run"),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=clean,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and done.stderr == ""
    assert "billing export" in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]

    # Codex: the same absolute --db in the server's arguments.
    codex_home = tmp_path / "codex-home"
    ok("setup", "codex", env={**env, "CODEX_HOME": str(codex_home)}, cwd=project)
    config = (codex_home / "config.toml").read_text()
    assert f'args = ["mcp", "--db", {json.dumps(db)}]' in config


def test_setup_with_the_default_database_writes_no_db_option(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    ok(
        "setup",
        "claude-code",
        "--scope",
        "project",
        "--project-dir",
        str(project),
        env={},
        cwd=project,
    )
    server = json.loads((project / ".mcp.json").read_text())["mcpServers"]["dsh-knowledge"]
    assert server["args"] == ["mcp"]


# --- PostgreSQL URLs ------------------------------------------------------------------------


def test_a_url_is_resolved_as_given_and_shown_without_its_password(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from dsh_knowledge.store_location import display_location, has_password, redact_url

    url = "postgresql://team:pa/ss@word@db.internal:6432/kb?sslmode=require"
    monkeypatch.setenv("DSH_KNOWLEDGE_DB", url)
    assert resolve_database() == url  # never made into a path
    assert resolve_database("postgres://db.internal/kb") == "postgres://db.internal/kb"
    assert redact_url(url) == "postgresql://team:***@db.internal:6432/kb?sslmode=require"
    assert redact_url("postgresql:///kb?host=/run/pg&password=hunter2") == (
        "postgresql:///kb?host=/run/pg&password=***"
    )
    assert display_location("/srv/k.sqlite") == "/srv/k.sqlite"
    assert has_password(url) and not has_password("postgresql://team@db.internal/kb")
    assert not has_password("/tmp/odd://name@x")  # a path is never a URL


def test_setup_writes_a_url_but_never_a_password(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    url = "postgresql://team@db.internal/kb?sslmode=require"
    ok(
        "setup",
        "claude-code",
        "--scope",
        "project",
        "--project-dir",
        str(project),
        env={"DSH_KNOWLEDGE_DB": url},
        cwd=project,
    )
    server = json.loads((project / ".mcp.json").read_text())["mcpServers"]["dsh-knowledge"]
    assert server["args"] == ["mcp", "--db", url]

    secret = "postgresql://team:hunter2@db.internal/kb"  # noqa: S105 - the refused example
    other = tmp_path / "other"
    other.mkdir()
    for env, args in (({"DSH_KNOWLEDGE_DB": secret}, []), ({}, ["--db", secret])):
        done = cli(
            *args,
            "setup",
            "claude-code",
            "--scope",
            "project",
            "--project-dir",
            str(other),
            "--dry-run",
            env=env,
            cwd=other,
        )
        assert done.returncode == 1 and done.stdout == ""
        error = json.loads(done.stderr)["error"]
        assert error["code"] == "invalid-input" and "~/.pgpass" in error["message"]
        assert "hunter2" not in done.stderr
        assert "postgresql://team:***@db.internal/kb" in error["message"]
    assert list(other.iterdir()) == []


def test_an_undecodable_url_is_refused_without_echoing_its_password(tmp_path: Path) -> None:
    done = subprocess.run(
        [command(), "--db", os.fsdecode(b"postgresql://me:hunter2@db/kb\xff"), "list"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 1 and "hunter2" not in done.stdout + done.stderr
    error = json.loads(done.stderr)["error"]
    assert error["code"] == "invalid-path"
    assert error["message"] == (
        "--db 'postgresql://me:***@db/kb\\xff' is not valid UTF-8; nothing was changed."
    )
