"""The Claude Code plugin: add this repository as a marketplace, install ``dsh``, use it.

Exactly the user's path (``/plugin marketplace add <repo>``, ``/plugin install dsh``), with
the real CLI's non-interactive equivalents. The plugin's commands are bare names, so the
dsh console scripts must be on ``PATH`` (as after ``uv tool install``/``pipx install``).
Adding and installing each take ~20 s here: the CLI waits for name lookups that fail
offline.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from dsh_test_support.fake_model import FakeModel, running

from .conftest import REPO_ROOT, AgentClis
from .scenario import (
    BIN,
    KNOWLEDGE_MARKER,
    PROMPT,
    SUMMARY_MARKER,
    build_project,
    request_text,
    result_text,
    tool_results,
)

TOOLS = (
    "mcp__plugin_dsh_dsh-compound__compound_recall",
    "mcp__plugin_dsh_dsh-memory__memory_search",
)


def claude(clis: AgentClis, *args: str, cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        [str(clis.claude), *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_marketplace_and_plugin_validate(agent_clis: AgentClis, agent_home: Path) -> None:
    env = dict(os.environ)
    for target in (REPO_ROOT, REPO_ROOT / "integrations" / "claude-code"):
        assert "Validation passed" in claude(
            agent_clis, "plugin", "validate", str(target), cwd=REPO_ROOT, env=env
        )


def test_marketplace_add_install_then_a_session_uses_hooks_and_tools(
    agent_clis: AgentClis, agent_home: Path, tmp_path: Path
) -> None:
    project = build_project(tmp_path, agent_home)
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    claude(agent_clis, "plugin", "marketplace", "add", str(REPO_ROOT), cwd=project, env=env)
    claude(agent_clis, "plugin", "install", "dsh@dsh", cwd=project, env=env)
    # The user's project has no dsh configuration of its own: everything comes from the plugin.
    assert not (project / ".mcp.json").exists() and not (project / ".claude").exists()

    script = (
        ("tool", TOOLS[0], {"query": "login timeout"}),
        ("tool", TOOLS[1], {"query": "codegen"}),
        ("text", "The plugin's tools answered."),
    )
    with running(FakeModel(script=script)) as model:
        env["ANTHROPIC_BASE_URL"] = model.url
        out = claude(
            agent_clis, "-p", PROMPT, "--allowedTools", ",".join(TOOLS), cwd=project, env=env
        )
    assert "The plugin's tools answered." in out

    first = request_text(model.requests[0])
    assert SUMMARY_MARKER in first
    assert "`mcp__plugin_dsh_dsh-memory__memory_search`" in first  # the names it really has
    assert "- login-timeout [changed: src/login.js]" in first
    assert "<dsh-knowledge" in first and KNOWLEDGE_MARKER in first
    assert "<dsh-compound>" in first
    assert "capture a lesson after a fix is verified" in first  # the plugin's skill

    results = tool_results(model.requests[2])
    recalled, searched = results["toolu_1"], results["toolu_2"]
    assert not recalled.get("is_error") and not searched.get("is_error")
    assert json.loads(result_text(recalled))["results"][0]["id"] == "login-timeout"
    assert "[source: handbook/project.md · id: project/codegen]" in result_text(searched)
