"""The real ``claude -p`` after ``setup claude-code --scope project`` for all three products."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from dsh_test_support.fake_model import FakeModel, running

from .conftest import AgentClis
from .scenario import (
    ADDED_MARKER,
    KNOWLEDGE_MARKER,
    PROMPT,
    SUMMARY_MARKER,
    build_project,
    dsh,
    request_text,
    result_text,
    setup_all,
    snapshot,
    tool_results,
)

TOOLS = (
    "mcp__dsh-knowledge__knowledge_add",
    "mcp__dsh-compound__compound_recall",
    "mcp__dsh-memory__memory_search",
)
SCRIPT = (
    ("tool", TOOLS[0], {"type": "fact", "content": ADDED_MARKER}),
    ("tool", TOOLS[1], {"query": "login timeout"}),
    ("tool", TOOLS[2], {"query": "codegen"}),
    ("text", "All three dsh tools answered."),
)


def test_claude_code_gets_context_from_every_hook_and_runs_every_mcp_server(
    agent_clis: AgentClis, agent_home: Path, tmp_path: Path
) -> None:
    project = build_project(tmp_path, agent_home)
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"permissions": {"allow": ["Read"]}}, indent=2) + "\n")
    files = (project / ".mcp.json", settings, project / ".claude" / "skills" / "dsh" / "SKILL.md")
    before = snapshot(*files)

    setup_all("claude-code", "--scope", "project", "--project-dir", str(project))
    assert json.loads(settings.read_text())["permissions"] == {"allow": ["Read"]}

    with running(FakeModel(script=SCRIPT)) as model:
        done = subprocess.run(
            [str(agent_clis.claude), "-p", PROMPT, "--allowedTools", ",".join(TOOLS)],
            cwd=project,
            env={**os.environ, "ANTHROPIC_BASE_URL": model.url},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    assert "All three dsh tools answered." in done.stdout

    first = request_text(model.requests[0])
    # dsh-memory session-start: the prompt section, naming the wired tools, with the summary.
    assert "SessionStart hook additional context" in first
    assert "[DPSK MEMORY: UNTRUSTED CONTEXT]" in first and SUMMARY_MARKER in first
    assert "`mcp__dsh-memory__memory_search`" in first
    # dsh-compound session-start: the lesson whose source changed.
    assert "<dsh-compound-stale>" in first
    assert "- login-timeout [changed: src/login.js]" in first
    # The prompt hooks: knowledge and lessons for this prompt, fenced.
    assert "UserPromptSubmit hook additional context" in first
    assert "<dsh-knowledge" in first and KNOWLEDGE_MARKER in first
    assert "<dsh-compound>" in first and "Raise timeoutMs in src/login.js" in first

    # The dsh skill that setup installed is offered to the model.
    assert "capture a lesson after a fix is verified" in first

    # Each scripted tool call ran and its result reached the next request.
    assert len(model.requests) >= 4
    results = tool_results(model.requests[3])
    added, recalled, searched = (results[f"toolu_{n}"] for n in (1, 2, 3))
    for block in (added, recalled, searched):
        assert not block.get("is_error"), result_text(block)
    assert ADDED_MARKER in result_text(added)
    recall = json.loads(result_text(recalled))
    assert recall["results"][0]["id"] == "login-timeout"
    assert recall["results"][0]["evidenceStatus"] == "changed"
    assert "untrusted" in recall["notice"]
    assert "[source: handbook/project.md · id: project/codegen]" in result_text(searched)
    # knowledge_add really stored the item, in this workspace.
    listed = dsh("dsh-knowledge", "list", "--workspace", str(project)).stdout
    assert ADDED_MARKER in listed

    setup_all("claude-code", "--scope", "project", "--project-dir", str(project), remove=True)
    assert snapshot(*files) == before
