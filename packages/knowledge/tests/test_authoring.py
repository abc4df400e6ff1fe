"""add_item and update_item: the one door the command line and the agent tools write through."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh_knowledge import add_item, update_item
from dsh_knowledge.authoring import (
    MAX_SESSION_ID_CHARS,
    capture_skip_reason,
    default_provenance_repo,
    evidence_from_json,
)
from dsh_knowledge.errors import ValidationError
from dsh_knowledge.models import is_iso_timestamp
from dsh_knowledge.privacy import PrivacyRejectedError
from dsh_knowledge.repository import KnowledgeRepository

from .agent_helpers import make_repo

TOKEN = "gh" + "p_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def test_a_secret_is_refused_before_the_store_is_opened() -> None:
    def never() -> KnowledgeRepository:
        raise AssertionError("the store was opened")

    with pytest.raises(PrivacyRejectedError):
        add_item(never, type="fact", content=f"token {TOKEN}", workspace="/w")
    with pytest.raises(PrivacyRejectedError):
        evidence = [{"type": "file", "source": "a.py", "locator": TOKEN}]
        add_item(never, type="fact", content="plain", workspace="/w", evidence=evidence)
    with pytest.raises(PrivacyRejectedError):
        update_item(never, "id", content=f"token {TOKEN}")


def test_evidence_gets_one_timestamp_and_the_session(repository: KnowledgeRepository) -> None:
    given = [{"type": "file", "source": "a.py"}, {"type": "git", "source": "abc"}]
    item, report = add_item(
        repository,
        type="fact",
        content="The API runs on port 8080.",
        workspace="/w",
        project="api",
        evidence=given,
        session_id="sess-1",
    )
    assert report is None  # no work tree named: no capture attempted
    assert item["scope"] == {"workspace": "/w", "project": "api"}
    assert (item["status"], item["creationOrigin"]) == ("candidate", "explicit")
    kinds = [(e["type"], e["source"]) for e in item["evidence"]]
    assert kinds == [("file", "a.py"), ("git", "abc"), ("session", "sess-1")]
    stamps = {e["timestamp"] for e in item["evidence"]}
    assert len(stamps) == 1 and is_iso_timestamp(stamps.pop())
    assert given == [{"type": "file", "source": "a.py"}, {"type": "git", "source": "abc"}]


def test_a_session_is_recorded_once_and_only_when_usable(repository: KnowledgeRepository) -> None:
    kept = [{"type": "session", "source": "s", "timestamp": "2025-01-01T00:00:00.000Z"}]
    item, _ = add_item(
        repository, type="fact", content="a", workspace="/w", evidence=kept, session_id="s"
    )
    assert item["evidence"] == kept  # already there, and its own timestamp is kept
    for unusable in ("  ", "s" * (MAX_SESSION_ID_CHARS + 1)):
        item, _ = add_item(
            repository, type="fact", content="b", workspace="/w", session_id=unusable
        )
        assert item["evidence"] == []


def test_file_evidence_is_captured_or_reported_skipped(
    repository: KnowledgeRepository, tmp_path: Path
) -> None:
    work = make_repo(tmp_path / "ws", {"src/app.py": "PORT = 8080\n"})
    files = [{"type": "file", "source": "src/app.py"}, {"type": "file", "source": "gone.py"}]
    item, report = add_item(
        repository, type="fact", content="port", workspace=str(work), evidence=files, repo=work
    )
    assert item["evidence"][0]["gitProvenance"]["path"] == "src/app.py"
    assert "gitProvenance" not in item["evidence"][1]
    assert report == {
        "attempted": 2,
        "captured": 1,
        "skipped": 1,
        "warnings": [{"evidenceIndex": 1, "reason": "file_not_in_head"}],
    }
    _, skipped = add_item(
        repository,
        type="fact",
        content="port",
        workspace="/other",
        evidence=files,
        skip_capture="workspace_mismatch",
    )
    assert skipped is not None and skipped["captured"] == 0 and skipped["skipped"] == 2
    assert {w["reason"] for w in skipped["warnings"]} == {"workspace_mismatch"}


def test_update_item_stamps_new_evidence(repository: KnowledgeRepository) -> None:
    item, _ = add_item(repository, type="fact", content="a", workspace="/w")
    changed = update_item(repository, item["id"], evidence=[{"type": "git", "source": "abc"}])
    assert is_iso_timestamp(changed["evidence"][0]["timestamp"])


def test_the_front_ends_defaults(tmp_path: Path) -> None:
    work = make_repo(tmp_path / "ws", {"a.txt": "a\n"})
    (work / "sub").mkdir()
    assert default_provenance_repo(str(work), identity=False) == str(work)
    assert default_provenance_repo(str(work / "sub"), identity=False) is None
    assert capture_skip_reason(None, "/w") == "missing_session_workspace"
    assert capture_skip_reason("/w", "/v") == "workspace_mismatch"
    assert capture_skip_reason("/w", "/w") is None


def test_evidence_from_json() -> None:
    assert evidence_from_json(['{"type": "git", "source": "abc"}']) == [
        {"type": "git", "source": "abc"}
    ]
    with pytest.raises(ValidationError, match="--evidence must be one JSON object"):
        evidence_from_json(["[1]"])
