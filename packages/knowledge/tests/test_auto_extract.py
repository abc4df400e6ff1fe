"""``dsh-knowledge hook stop``: opt-in extraction after each turn, incremental per session."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from dsh_knowledge.repository import KnowledgeRepository
from dsh_knowledge.store import KnowledgeStore

from .agent_helpers import command


def user_line(text: str) -> str:
    return json.dumps(
        {"type": "user", "sessionId": "s-stop", "message": {"role": "user", "content": text}}
    )


def stop(
    db: Path, transcript: Path, cwd: Path, *flags: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    payload = {
        "session_id": "s-stop",
        "transcript_path": str(transcript),
        "cwd": str(cwd),
        "hook_event_name": "Stop",
        "stop_hook_active": False,
    }
    return subprocess.run(
        [command(), "hook", "stop", "--db", str(db), *flags],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **(env or {})},
    )


def items(db: str | Path) -> list[dict[str, Any]]:
    store = KnowledgeStore(db)
    try:
        return KnowledgeRepository(store).list()
    finally:
        store.close()


def test_stop_hook_extracts_only_when_opted_in_and_only_new_turns(tmp_path: Path, db: str) -> None:
    KnowledgeStore(db).close()
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(user_line("We decided to use Redis for the session cache.") + "\n")

    off = stop(db, transcript, tmp_path)
    assert (off.returncode, off.stdout) == (0, "")
    assert items(db) == []

    on = stop(db, transcript, tmp_path, "--auto-extract")
    assert (on.returncode, on.stdout, on.stderr) == (0, "", "")
    first = items(db)
    assert [(i["type"], i["creationOrigin"], i["status"]) for i in first] == [
        ("decision", "automatic", "candidate")
    ]
    assert first[0]["evidence"][0]["locator"] == "seq=1"
    assert first[0]["scope"] == {"workspace": str(tmp_path)}

    # Archived by a reviewer: a later turn must not bring it back.
    store = KnowledgeStore(db)
    KnowledgeRepository(store).archive(first[0]["id"])
    store.close()
    with transcript.open("a") as handle:
        handle.write(user_line("The backend must never log request bodies.") + "\n")
    env = {"DSH_KNOWLEDGE_AUTO_EXTRACT": "1"}
    assert stop(db, transcript, tmp_path, env=env).stdout == ""
    after = items(db)
    assert len(after) == 2
    newest = next(i for i in after if i["id"] != first[0]["id"])
    assert newest["content"] == "The backend must never log request bodies."
    assert newest["evidence"][0]["locator"] == "seq=2"
    assert stop(db, transcript, tmp_path, env=env).stdout == ""
    assert len(items(db)) == 2


def test_stop_hook_is_silent_without_a_transcript_or_store(
    tmp_path: Path, backend: str, db: str
) -> None:
    # `db` names a store that does not exist yet: no SQLite file, or a PostgreSQL database
    # without the knowledge schema. A hook never creates either.
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(user_line("We decided to use Redis for the session cache.") + "\n")
    for path in (tmp_path / "absent.jsonl", transcript):
        result = stop(db, path, tmp_path, "--auto-extract")
        assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    if backend == "sqlite":
        assert not Path(db).parent.exists()
    else:
        import psycopg

        with psycopg.connect(db) as connection:
            found = connection.execute("SELECT to_regclass('knowledge')").fetchone()
        assert found == (None,)
