"""``dsh-knowledge setup codex --ranking hybrid`` reaches the real ``codex exec``.

Codex starts MCP servers with a minimal environment and runs hooks through a shell, so
this proves both places setup writes DSH_RANKING: the prompt hook (``DSH_RANKING=hybrid``
in front of its command) injects a lesson written in Chinese for an English prompt that
shares no word with it, and the MCP server (``env`` of its table) answers
``knowledge_search`` with the hybrid ranking. ``--ranking lexical`` then puts the files back.
"""

from __future__ import annotations

import json
from pathlib import Path

from dsh_test_support.fake_model import FakeModel, running
from dsh_test_support.gitcmd import init

from .conftest import AgentClis
from .scenario import dsh, request_text, run_codex, snapshot
from .test_codex import USER_CONFIG, outputs

LESSON = "登录请求在测试环境超时：把登录接口的超时时间调大到 45 秒。"
PROMPT = "Why does the login request time out in the test environment?"
SCRIPT = (
    ("tool", "mcp__dsh-knowledge__knowledge_search", {"query": "login request times out in tests"}),
    ("text", "Found it."),
)


def test_codex_ranks_by_meaning_after_setup_ranking_hybrid(
    agent_clis: AgentClis, agent_home: Path, tmp_path: Path
) -> None:
    project = init(tmp_path / "proj")
    dsh(
        "dsh-knowledge", "add", "--workspace", str(project), "--type", "lesson", "--content", LESSON
    )
    codex_home = agent_home / ".codex"
    config = codex_home / "config.toml"
    config.write_text(USER_CONFIG)
    dsh("dsh-knowledge", "setup", "codex")
    plain = snapshot(config, codex_home / "hooks.json")
    result = json.loads(dsh("dsh-knowledge", "setup", "codex", "--ranking", "hybrid").stdout)
    assert result["ranking"] == "hybrid" and result["weights"] in {"built", "mapped"}

    with running(FakeModel(script=SCRIPT)) as model:
        done = run_codex(agent_clis.codex, model.url, project, PROMPT)
    assert done.returncode == 0, done.stderr
    first = request_text(model.requests[0])
    assert "<dsh-knowledge" in first and "登录请求在测试环境超时" in first  # the hook, hybrid
    searched = outputs(model.requests[1])["call_1"]  # Codex prefixes its wall time
    assert '"ranking":"hybrid"' in searched  # the MCP server, by the env setup wrote
    assert LESSON in searched and '"channels":["semantic"]' in searched

    dsh("dsh-knowledge", "setup", "codex", "--ranking", "lexical")
    assert snapshot(config, codex_home / "hooks.json") == plain
