"""``dsh-knowledge provenance ID…``: provenance captured after the commit, as an explicit change."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from dsh_test_support import gitcmd, in_process
from dsh_test_support.gitcmd import git

from dsh_knowledge.repository import KnowledgeRepository
from dsh_knowledge.store import KnowledgeStore
from dsh_knowledge.tools import ToolContext, call_tool

from .agent_helpers import make_repo


def run(db: str | Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``dsh-knowledge --db DB ARGS`` in process (the tests read its output and the store)."""
    return in_process.run("dsh-knowledge", "--db", str(db), *args, cwd=cwd)


def test_capture_after_commit_moves_updated_at(tmp_path: Path, db: str) -> None:
    workspace = make_repo(tmp_path / "ws", {"README.md": "hi\n"})
    (workspace / "src").mkdir()
    (workspace / "src/new.py").write_text("VALUE = 1\n")  # written, not committed yet
    store = KnowledgeStore(db)
    context = ToolContext(repository=KnowledgeRepository(store), workspace=str(workspace))
    added: dict[str, Any] = call_tool(
        context,
        "knowledge_add",
        {
            "type": "fact",
            "content": "VALUE starts at one.",
            "evidence": [
                {"type": "file", "source": "src/new.py"},
                {"type": "session", "source": "s-1"},
            ],
        },
    )
    store.close()
    item_id = added["item"]["id"]
    assert added["provenanceCapture"]["warnings"][0]["reason"] == "file_not_in_head"
    before = json.loads(run(db, "get", item_id).stdout)

    dirty = json.loads(run(db, "provenance", item_id, "--repo", str(workspace)).stdout)
    assert dirty["results"][0]["captured"] == 0
    assert dirty["results"][0]["warnings"] == [{"evidenceIndex": 0, "reason": "file_not_in_head"}]
    assert json.loads(run(db, "get", item_id).stdout) == before  # untouched
    pending = json.loads(run(db, "review", "--repo", str(workspace)).stdout)["candidates"][0]
    assert pending["health"]["guidance"][-1]["code"] == "capture_provenance"

    git(workspace, "add", "src/new.py")
    staged = json.loads(run(db, "provenance", item_id, "--repo", str(workspace)).stdout)
    assert staged["results"][0]["captured"] == 0  # staged but not committed: still nothing
    git(workspace, "commit", "-q", "-m", "add new.py")
    head = gitcmd.head(workspace)
    done = run(db, "provenance", item_id, cwd=workspace)  # --repo defaults to the cwd
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)["results"][0]
    assert (result["attempted"], result["captured"], result["warnings"]) == (1, 1, [])
    after = json.loads(run(db, "get", item_id).stdout)
    assert after["evidence"][0]["gitProvenance"] == {"commit": head, "path": "src/new.py"}
    assert after["evidence"][1] == before["evidence"][1]
    assert after["updatedAt"] == result["updatedAt"] > before["updatedAt"]
    fresh = json.loads(run(db, "freshness", item_id, "--repo", str(workspace)).stdout)
    assert fresh["status"] == "current"

    review = json.loads(run(db, "review", "--repo", str(workspace)).stdout)
    assert review["candidates"][0]["health"]["status"] == "current"


def test_unknown_id_changes_nothing(tmp_path: Path, db: str) -> None:
    item = json.loads(
        run(db, "add", "--workspace", "/w", "--type", "fact", "--content", "x").stdout
    )
    before = run(db, "list").stdout
    result = run(db, "provenance", "missing-id", "--repo", str(tmp_path))
    assert result.returncode == 1 and result.stdout == ""
    assert json.loads(result.stderr)["error"]["code"] == "not-found"
    assert run(db, "list").stdout == before
    assert json.loads(before)["items"][0]["id"] == item["id"]
