"""The project both end-to-end tests give an agent: one lesson, memory, knowledge.

- A Git project with a captured lesson ``login-timeout`` whose source ``src/login.js``
  changed afterwards (the session-start hook must report it as stale).
- A memory repository with a summary (the prompt section carries it) and one record.
- A knowledge item about the login timeout, in this workspace (the prompt hook injects it).

It also reads what the CLIs sent to the fake model: all the text of a request, and the
tool results it carries.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from dsh_test_support import commands, gitcmd

BIN = commands.BIN
PRODUCTS = ("dsh-compound", "dsh-memory", "dsh-knowledge")
PROMPT = "Why does the login request time out?"
SUMMARY_MARKER = "The team ships the login service on Fridays."
KNOWLEDGE_MARKER = "LOGIN_TIMEOUT_MS configures the login request timeout"
ADDED_MARKER = "E2E: login retries are capped at three"


def dsh(program: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run an installed dsh console script (this environment's), checking success."""
    done = commands.run(program, *args, cwd=cwd)
    assert done.returncode == 0, f"{program} {args}: {done.stderr}"
    return done


def run_codex(
    codex: Path, model_url: str, project: Path, prompt: str
) -> subprocess.CompletedProcess[str]:
    """``codex exec`` in ``project`` against the fake model at ``model_url``, hooks trusted."""
    return subprocess.run(
        [
            str(codex),
            "exec",
            "--skip-git-repo-check",
            "-s",
            "workspace-write",
            # Hooks Codex has not been told to trust are skipped; a test cannot click.
            "--dangerously-bypass-hook-trust",
            "-c",
            f'model_providers.fake.base_url="{model_url}/v1"',
            "-C",
            str(project),
            prompt,
        ],
        cwd=project,
        env=dict(os.environ),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def build_project(root: Path, home: Path) -> Path:
    project = gitcmd.init(root / "proj")
    (project / "src").mkdir()
    (project / "src" / "login.js").write_text("export const timeoutMs = 30000;\n")
    draft = {
        "id": "login-timeout",
        "title": "Login requests time out in the test environment",
        "tags": ["login", "timeout"],
        "problem": "The login request times out after 30 s in CI.",
        "rootCause": "The test proxy adds latency.",
        "resolution": "Raise timeoutMs in src/login.js for the test environment.",
        "whenToUse": "When a login request times out in tests.",
        "verification": {"command": "npm test", "result": "The author reports it passed."},
        "files": ["src/login.js"],
    }
    (project / "draft.json").write_text(json.dumps(draft))
    dsh(
        "dsh-compound", "capture", "--workspace", str(project), "--input", "draft.json", cwd=project
    )
    (project / "draft.json").unlink()
    (project / "src" / "login.js").write_text("export const timeoutMs = 45000;\n")

    dsh("dsh-memory", "init")
    memory = home / ".dsh" / "storages" / "memory"
    (memory / "summary.md").write_text(f"# Summary\n{SUMMARY_MARKER}\n")
    (memory / "handbook" / "project.md").write_text(
        "---\nschema_version: 1\nid: project/codegen\ntype: decision\n---\n"
        "We chose TypeScript for the codegen pipeline.\n"
    )
    dsh(
        "dsh-knowledge",
        "add",
        "--workspace",
        str(project),
        "--type",
        "fact",
        "--content",
        f"{KNOWLEDGE_MARKER} (src/login.js).",
    )
    return project


def setup_all(host: str, *extra: str, remove: bool = False) -> None:
    for product in PRODUCTS:
        dsh(product, "setup", host, *extra, *(["--remove"] if remove else []))


def request_text(request: Any) -> str:
    """Every string inside a request body, one per line."""
    if isinstance(request, str):
        return request
    if isinstance(request, dict):
        return "\n".join(request_text(value) for value in request.values())
    if isinstance(request, list):
        return "\n".join(request_text(value) for value in request)
    return ""


def snapshot(*paths: Path) -> dict[str, str | None]:
    return {str(path): path.read_text() if path.exists() else None for path in paths}


def tool_results(request: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``tool_use_id`` -> the tool_result block, for every result in the request."""
    results = {}
    for message in request["messages"]:
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_result":
                results[block["tool_use_id"]] = block
    return results


def result_text(block: dict[str, Any]) -> str:
    content = block["content"]
    if isinstance(content, str):
        return content
    return "\n".join(part.get("text", "") for part in content)
