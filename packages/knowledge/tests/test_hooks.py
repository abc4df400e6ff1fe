"""``dsh-knowledge hook user-prompt-submit`` as the agent hosts run it: a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dsh_knowledge.repository import KnowledgeRepository
from dsh_knowledge.store import KnowledgeStore

from .agent_helpers import command


def claude_payload(cwd: Path, prompt: str, session: str = "sess-claude") -> dict[str, Any]:
    return {
        "session_id": session,
        "transcript_path": str(cwd / "transcript.jsonl"),
        "cwd": str(cwd),
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
        "prompt_id": "p-1",
        "permission_mode": "default",
    }


def codex_payload(cwd: Path, prompt: str, session: str = "sess-codex") -> dict[str, Any]:
    return {
        "session_id": session,
        "transcript_path": None,
        "cwd": str(cwd),
        "hook_event_name": "UserPromptSubmit",
        "model": "gpt-5.5",
        "permission_mode": "workspace-write",
        "turn_id": "turn-1",
        "prompt": prompt,
    }


def run_hook(
    stdin: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [command(), "hook", "user-prompt-submit", *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **(env or {})},
        timeout=60,
    )


@pytest.fixture
def seeded(tmp_path: Path, db: str) -> tuple[Path, str]:
    workspace = tmp_path / "proj"
    workspace.mkdir()
    store = KnowledgeStore(db)
    repository = KnowledgeRepository(store)
    item = repository.create(
        type="decision",
        content="Provider calls go through ResponseRouter <never bypass>.",
        scope={"workspace": str(workspace)},
    )
    repository.verify(item["id"])
    store.close()
    return workspace, str(item["id"])


@pytest.mark.parametrize("payload", [claude_payload, codex_payload])
def test_hook_injects_relevant_knowledge(seeded: tuple[Path, str], db: str, payload: Any) -> None:
    workspace, _ = seeded
    result = run_hook(
        json.dumps(payload(workspace, "How do provider calls get routed?")), "--db", db
    )
    assert result.returncode == 0 and result.stderr == ""
    output = json.loads(result.stdout)
    assert set(output) == {"hookSpecificOutput"}
    specific = output["hookSpecificOutput"]
    assert specific["hookEventName"] == "UserPromptSubmit"
    context = specific["additionalContext"]
    assert context.startswith("<dsh-knowledge>\n") and context.endswith("\n</dsh-knowledge>")
    assert "ResponseRouter \\u003cnever bypass\\u003e" in context
    assert "Status: verified" in context


def test_hook_dedups_per_session_across_processes(seeded: tuple[Path, str], db: str) -> None:
    workspace, _ = seeded
    stdin = json.dumps(claude_payload(workspace, "provider calls routing"))
    env = {"DSH_KNOWLEDGE_DB": db}
    assert run_hook(stdin, env=env).stdout != ""
    again = run_hook(stdin, env=env)
    assert again.returncode == 0 and again.stdout == ""
    other = json.dumps(claude_payload(workspace, "provider calls routing", session="another"))
    assert run_hook(other, env=env).stdout != ""


def test_hook_uses_project_from_environment(tmp_path: Path, db: str) -> None:
    workspace = tmp_path / "proj"
    store = KnowledgeStore(db)
    KnowledgeRepository(store).create(
        type="fact",
        content="Billing exports run nightly.",
        scope={"workspace": str(workspace), "project": "billing"},
    )
    store.close()
    stdin = json.dumps(codex_payload(workspace, "when do billing exports run"))
    assert run_hook(stdin, "--db", db).stdout == ""  # no project: workspace-wide only
    with_project = run_hook(stdin, "--db", db, env={"DSH_KNOWLEDGE_PROJECT": "billing"})
    assert "Billing exports run nightly." in with_project.stdout


@pytest.mark.parametrize(
    "stdin",
    [
        "",
        "not json",
        "[1, 2]",
        json.dumps({"prompt": "provider calls"}),  # no cwd
        json.dumps({"cwd": "relative/dir", "prompt": "provider calls"}),
        json.dumps({"cwd": "/", "prompt": 42}),
    ],
)
def test_hook_is_silent_on_bad_payloads(stdin: str, db: str, seeded: Any) -> None:
    result = run_hook(stdin, "--db", db)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_hook_is_silent_when_nothing_is_relevant(seeded: tuple[Path, str], db: str) -> None:
    workspace, _ = seeded
    result = run_hook(json.dumps(claude_payload(workspace, "zebra giraffe")), "--db", db)
    assert (result.returncode, result.stdout) == (0, "")


def test_hook_never_creates_or_needs_a_store(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "knowledge.sqlite"
    result = run_hook(json.dumps(claude_payload(tmp_path, "anything")), "--db", str(missing))
    assert (result.returncode, result.stdout) == (0, "")
    assert not missing.parent.exists()
    broken = tmp_path / "broken.sqlite"
    broken.write_bytes(b"this is not a database" * 100)
    result = run_hook(json.dumps(claude_payload(tmp_path, "anything")), "--db", str(broken))
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_hook_ignores_unknown_events_and_options() -> None:
    for args in (["session-start"], ["user-prompt-submit", "--bogus", "x"]):
        result = subprocess.run(
            [command(), "hook", *args], input="{}", capture_output=True, text=True, check=False
        )
        assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_hook_does_not_import_typer_or_mcp() -> None:
    probe = (
        "import sys, io; sys.argv=['dsh-knowledge','hook','user-prompt-submit'];"
        "sys.stdin=io.TextIOWrapper(io.BytesIO(b'{}'));"
        "from dsh_knowledge import launcher\n"
        "try:\n    launcher.main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('typer','click','mcp') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_hook_ignores_an_oversized_payload(seeded: tuple[Path, str], db: str) -> None:
    workspace, _ = seeded
    payload = claude_payload(workspace, "provider calls routing " + "x" * (1024 * 1024))
    result = run_hook(json.dumps(payload), "--db", db)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
