"""The real Claude Code and Codex CLIs as sync agents, against a scripted fake model server.

The CLIs are installed from the npm registry into ``<repo>/.tools/agent-clis`` when missing
(one install shared with the other agent tests); only when that is impossible are these
tests skipped, with the reason. The model is the only fake: a real HTTP server on
127.0.0.1 (the test toolkit's dsh_test_support.fake_model) scripts the turns that make each
CLI write a record in the staging folder; the sync then validates and applies it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dsh_test_support.fake_model import FakeModel, Turn, offered_tools, running

from dsh_memory.sync.sessions import SessionSources
from dsh_memory.sync.syncrun import SyncOptions, run_sync

REPO_ROOT = Path(__file__).resolve().parents[3]
CLI_DIR = REPO_ROOT / ".tools" / "agent-clis"
BIN = CLI_DIR / "node_modules" / ".bin"
PACKAGES = ("@anthropic-ai/claude-code@2.1.332", "@openai/codex@0.171.0")
CLAUDE_RECORD = (
    "---\nschema_version: 1\nid: agent/claude-fact\ntype: fact\n---\n"
    "Written by Claude Code through the sync.\n"
)
CODEX_RECORD_LINES = [
    "---",
    "schema_version: 1",
    "id: agent/codex-fact",
    "type: fact",
    "---",
    "Written by Codex through the sync.",
]
CODEX_PATCH = (
    "*** Begin Patch\n*** Add File: handbook/codex-fact.md\n"
    + "".join(f"+{line}\n" for line in CODEX_RECORD_LINES)
    + "*** End Patch\n"
)
STAGING_RE = re.compile(r"staging memory repository (\S+) \(read")


def write_one_record(request: dict[str, Any]) -> Turn:
    """The model's first turn: the agent writes one record in the sync's staging folder.

    Codex adds it with an ``apply_patch`` custom tool call; Claude Code with its ``Write``
    tool at the staging path the sync's prompt names (a request without that path or that
    tool - one the CLI sends for itself - gets a plain answer)."""
    if "input" in request:
        return ("custom", "apply_patch", CODEX_PATCH)
    staging = STAGING_RE.search(json.dumps(request.get("messages", [])))
    if staging is None or "Write" not in offered_tools(request):
        return ("text", "done")
    path = f"{staging.group(1)}/handbook/claude-fact.md"
    return ("tool", "Write", {"file_path": path, "content": CLAUDE_RECORD})


@pytest.fixture(scope="session")
def agent_bin() -> Path:
    if (BIN / "claude").exists() and (BIN / "codex").exists():
        return BIN
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed: the real agent CLIs cannot be installed")
    done = subprocess.run(
        [npm, "install", "--prefix", str(CLI_DIR), *PACKAGES],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    if done.returncode != 0 or not (BIN / "claude").exists() or not (BIN / "codex").exists():
        pytest.skip(f"npm could not install the agent CLIs: {done.stderr[-500:]}")
    return BIN


@pytest.fixture(scope="module")
def model_port() -> Iterator[int]:
    """The scripted model: one record written, then "done" once the tool result is back."""
    with running(FakeModel(script=(write_one_record, ("text", "done")))) as model:
        yield model.port


def _sync(root: Path, logs: Any, agent: str, env: dict[str, str]) -> dict[str, Any]:
    return run_sync(
        SyncOptions(
            root=root,
            sources=SessionSources(logs.dsh_sessions, logs.claude_projects, logs.codex_sessions),
            env=env,
            agent=agent,
            timeout=180.0,
        )
    )


def test_claude_code_writes_a_record_the_sync_applies(
    sync_root: Path, session_logs: Any, agent_bin: Path, model_port: int, isolated_env: Path
) -> None:
    session_logs.dsh("d1", "remember: claude edits memory")
    env = dict(os.environ)
    env.update(
        {
            "PATH": f"{agent_bin}{os.pathsep}{env.get('PATH', '')}",
            "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{model_port}",
            "ANTHROPIC_API_KEY": "test",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DSH_MEMORY_PROVIDER_ENV_NAMES": "ANTHROPIC_BASE_URL ANTHROPIC_API_KEY"
            " CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC DISABLE_AUTOUPDATER DISABLE_TELEMETRY"
            " DISABLE_ERROR_REPORTING",
        }
    )
    result = _sync(sync_root, session_logs, "claude", env)
    assert result["status"] == "applied", result
    assert result["changedPaths"] == ["handbook/claude-fact.md"]
    text = (sync_root / "handbook" / "claude-fact.md").read_text()
    assert "Written by Claude Code through the sync." in text
    record = json.loads((sync_root / ".sync" / "last-run.json").read_text())
    assert record["status"] == "applied"


def test_codex_writes_a_record_the_sync_applies(
    sync_root: Path, session_logs: Any, agent_bin: Path, model_port: int, isolated_env: Path
) -> None:
    session_logs.codex("x1", "remember: codex edits memory")
    codex_home = isolated_env / ".codex"
    codex_home.mkdir(exist_ok=True)
    (codex_home / "config.toml").write_text(
        'model = "gpt-5.5"\nmodel_provider = "fake"\ncheck_for_update_on_startup = false\n'
        '[model_providers.fake]\nname = "fake"\n'
        f'base_url = "http://127.0.0.1:{model_port}/v1"\nenv_key = "FAKE_API_KEY"\n'
        'wire_api = "responses"\n[analytics]\nenabled = false\n'
    )
    env = dict(os.environ)
    env.update(
        {
            "PATH": f"{agent_bin}{os.pathsep}{env.get('PATH', '')}",
            "CODEX_HOME": str(codex_home),
            "FAKE_API_KEY": "test",
            "DSH_MEMORY_PROVIDER_ENV_NAMES": "CODEX_HOME FAKE_API_KEY",
        }
    )
    result = _sync(sync_root, session_logs, "codex", env)
    assert result["status"] == "applied", result
    assert result["changedPaths"] == ["handbook/codex-fact.md"]
    text = (sync_root / "handbook" / "codex-fact.md").read_text()
    assert "Written by Codex through the sync." in text
