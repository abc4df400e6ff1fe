"""The real ``codex exec`` after ``setup codex`` (user scope) for all three products."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
    run_codex,
    setup_all,
    snapshot,
)

# The fake model turns mcp__<server>__<tool> into Codex's namespace call (mcp__dsh_x, tool).
SCRIPT = (
    ("tool", "mcp__dsh-knowledge__knowledge_add", {"type": "fact", "content": ADDED_MARKER}),
    ("tool", "mcp__dsh-compound__compound_recall", {"query": "login timeout"}),
    ("tool", "mcp__dsh-memory__memory_search", {"query": "codegen"}),
    ("text", "All three dsh tools answered."),
)

USER_CONFIG = """# The user's own Codex configuration: setup must keep every byte of it.
model = "gpt-5.5"
model_provider = "fake"
check_for_update_on_startup = false

[model_providers.fake]
name = "fake"
base_url = "http://127.0.0.1:9/v1"   # replaced per run with -c
env_key = "FAKE_API_KEY"
wire_api = "responses"

[analytics]
enabled = false
"""


def outputs(request: dict[str, Any]) -> dict[str, str]:
    """``call_id`` -> the text of its ``function_call_output``."""
    found = {}
    for item in request.get("input", []):
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            output = item["output"]
            if isinstance(output, list):
                output = "\n".join(part.get("text", "") for part in output)
            found[item["call_id"]] = output
    return found


def test_codex_gets_context_from_every_hook_and_runs_every_mcp_server(
    agent_clis: AgentClis, agent_home: Path, tmp_path: Path
) -> None:
    project = build_project(tmp_path, agent_home)
    codex_home = agent_home / ".codex"
    config = codex_home / "config.toml"
    config.write_text(USER_CONFIG)
    files = (config, codex_home / "hooks.json", codex_home / "skills" / "dsh" / "SKILL.md")
    before = snapshot(*files)

    setup_all("codex")
    assert config.read_text().startswith(USER_CONFIG)

    with running(FakeModel(script=SCRIPT)) as model:
        done = run_codex(agent_clis.codex, model.url, project, PROMPT)
    assert done.returncode == 0, done.stderr
    assert "All three dsh tools answered." in done.stdout

    first = request_text(model.requests[0])
    assert "[DPSK MEMORY: UNTRUSTED CONTEXT]" in first and SUMMARY_MARKER in first
    assert "`memory_search` (namespace `mcp__dsh_memory`)" in first
    assert "<dsh-compound-stale>" in first
    assert "- login-timeout [changed: src/login.js]" in first
    assert "<dsh-knowledge" in first and KNOWLEDGE_MARKER in first
    assert "<dsh-compound>" in first and "Raise timeoutMs in src/login.js" in first

    # The dsh skill that setup installed is offered to the model.
    assert "capture a lesson after a fix is verified" in first

    assert len(model.requests) >= 4
    results = outputs(model.requests[3])
    added, recalled, searched = (results[f"call_{n}"] for n in (1, 2, 3))
    assert ADDED_MARKER in added
    assert '"id":"login-timeout"' in recalled and '"evidenceStatus":"changed"' in recalled
    assert "[source: handbook/project.md · id: project/codegen]" in searched
    listed = dsh("dsh-knowledge", "list", "--workspace", str(project)).stdout
    assert ADDED_MARKER in listed

    setup_all("codex", remove=True)
    assert snapshot(*files) == before
    assert before[str(codex_home / "hooks.json")] is None  # created by setup, removed again
