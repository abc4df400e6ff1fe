"""The agent tool layer: bounds, messages, scope, summaries, session evidence, provenance."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dsh_test_support import gitcmd

from dsh_knowledge.errors import KnowledgeError
from dsh_knowledge.privacy import PRIVACY_REJECTION_MESSAGE
from dsh_knowledge.repository import KnowledgeRepository
from dsh_knowledge.tool_schemas import INPUT_SCHEMAS, OUTPUT_SCHEMAS, TOOL_NAMES
from dsh_knowledge.tools import (
    STORAGE_UNAVAILABLE,
    WORKSPACE_UNAVAILABLE,
    ToolContext,
    call_tool,
)

from .agent_helpers import make_repo

TOKEN = "gh" + "p_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "ws", {"src/router.py": "ROUTER = 1\n", "README.md": "hi\n"})


@pytest.fixture
def ctx(repository: KnowledgeRepository, workspace: Path) -> ToolContext:
    return ToolContext(repository=repository, workspace=str(workspace), session_id="sess-1")


jsonschema = pytest.importorskip("jsonschema", reason="jsonschema comes with the [mcp] extra")


def call(context: ToolContext, name: str, **arguments: Any) -> dict[str, Any]:
    """Call a tool; its arguments must satisfy the input schema, its result the output schema."""
    jsonschema.Draft202012Validator(INPUT_SCHEMAS[name]).validate(arguments)
    result = call_tool(context, name, arguments)
    jsonschema.Draft202012Validator(OUTPUT_SCHEMAS[name]).validate(result)
    return result


def refused(context: ToolContext, name: str, **arguments: Any) -> str:
    with pytest.raises(KnowledgeError) as caught:
        call_tool(context, name, arguments)
    return caught.value.message


def test_every_tool_has_closed_input_and_output_schemas() -> None:
    assert set(INPUT_SCHEMAS) == set(OUTPUT_SCHEMAS) == set(TOOL_NAMES)
    for name in TOOL_NAMES:
        assert INPUT_SCHEMAS[name]["type"] == "object"
        assert INPUT_SCHEMAS[name]["additionalProperties"] is False
        assert OUTPUT_SCHEMAS[name]["additionalProperties"] is False


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"type": "fact", "content": "x" * 8001}, "content must be at most 8000 characters."),
        ({"type": "fact", "content": "   "}, "content must not be empty."),
        ({"type": "rumour", "content": "x"}, "type must be one of: fact, decision, lesson."),
        (
            {"type": "fact", "content": "ok", "workspace": "w" * 513},
            "workspace must be at most 512 characters.",
        ),
        (
            {"type": "fact", "content": "ok", "project": "p" * 129},
            "project must be at most 128 characters.",
        ),
        (
            {"type": "fact", "content": "ok", "evidence": [{"type": "file", "source": "a"}] * 17},
            "evidence must contain at most 16 items.",
        ),
        (
            {"type": "fact", "content": "ok", "evidence": [{"type": "file", "source": "s" * 257}]},
            "source must be at most 256 characters.",
        ),
        (
            {
                "type": "fact",
                "content": "ok",
                "evidence": [{"type": "file", "source": "a", "locator": "l" * 257}],
            },
            "locator must be at most 256 characters.",
        ),
        (
            {"type": "fact", "content": "ok", "colour": "red"},
            "knowledge_add does not accept that argument.",
        ),
    ],
)
def test_add_bounds(ctx: ToolContext, arguments: dict[str, Any], message: str) -> None:
    assert refused(ctx, "knowledge_add", **arguments) == message
    # The published input schema refuses the same arguments.
    assert not jsonschema.Draft202012Validator(INPUT_SCHEMAS["knowledge_add"]).is_valid(arguments)
    assert call(ctx, "knowledge_list", project=None)["items"] == []


def test_other_bounds(ctx: ToolContext) -> None:
    assert refused(ctx, "knowledge_search", query="q" * 257) == (
        "query must be at most 256 characters."
    )
    assert refused(ctx, "knowledge_get", id="i" * 129) == "id must be at most 128 characters."
    assert refused(ctx, "knowledge_health", ids=[]) == "ids must not be empty."
    assert refused(ctx, "knowledge_health", ids=["a"] * 17) == (
        "ids must contain at most 16 items."
    )


@pytest.mark.parametrize(
    "arguments",
    [
        {"content": "deploy token " + TOKEN},
        {"content": "Plain.", "evidence": [{"type": "file", "source": TOKEN}]},
        {"content": "Plain.", "evidence": [{"type": "file", "source": "a", "locator": TOKEN}]},
    ],
)
def test_secrets_are_refused_and_nothing_is_stored(
    ctx: ToolContext, repository: KnowledgeRepository, arguments: dict[str, Any]
) -> None:
    message = refused(ctx, "knowledge_add", type="fact", **arguments)
    assert message == PRIVACY_REJECTION_MESSAGE
    assert TOKEN not in message
    assert repository.list() == []


def test_limit_rules(ctx: ToolContext) -> None:
    for index in range(25):
        call(ctx, "knowledge_add", type="fact", content=f"Fact number {index} about caching.")
    assert len(call(ctx, "knowledge_list")["items"]) == 10
    assert len(call(ctx, "knowledge_list", limit=100)["items"]) == 20
    assert len(call(ctx, "knowledge_list", limit=0)["items"]) == 1
    assert len(call(ctx, "knowledge_list", limit=3.9)["items"]) == 3
    assert len(call(ctx, "knowledge_search", query="caching", limit=5)["items"]) == 5


def test_list_results_say_how_many_matched_and_whether_they_were_cut(ctx: ToolContext) -> None:
    for index in range(12):
        call(ctx, "knowledge_add", type="fact", content=f"Shard {index} rebalances on deploy.")
    call(ctx, "knowledge_add", type="fact", content="The logo is blue.")
    listed = call(ctx, "knowledge_list", limit=5)
    assert (len(listed["items"]), listed["total"], listed["truncated"]) == (5, 13, True)
    everything = call(ctx, "knowledge_list", limit=20)
    assert (len(everything["items"]), everything["total"], everything["truncated"]) == (
        13,
        13,
        False,
    )
    # The first page is the first items of the uncut list, in the same order.
    assert [i["id"] for i in listed["items"]] == [i["id"] for i in everything["items"][:5]]
    found = call(ctx, "knowledge_search", query="shard rebalances", limit=3)
    assert (len(found["items"]), found["truncated"]) == (3, True)
    assert found["total"] >= 12
    whole = call(ctx, "knowledge_search", query="logo", limit=3)
    assert (len(whole["items"]), whole["total"], whole["truncated"]) == (1, 1, False)


def test_summaries_truncate_content(ctx: ToolContext) -> None:
    long_text = "caching " * 300  # 2400 characters
    added = call(ctx, "knowledge_add", type="fact", content=long_text)["item"]
    assert len(added["content"]) == 1200 and added["contentTruncated"] is True
    listed = call(ctx, "knowledge_list")["items"][0]
    assert len(listed["content"]) == 280 and listed["contentTruncated"] is True
    found = call(ctx, "knowledge_search", query="caching")["items"][0]
    assert len(found["content"]) == 280
    got = call(ctx, "knowledge_get", id=added["id"])["item"]
    assert len(got["content"]) == 1200


def test_session_evidence_is_attached_once(ctx: ToolContext) -> None:
    item = call(ctx, "knowledge_add", type="fact", content="Builds use uv.")["item"]
    assert [(e["type"], e["source"]) for e in item["evidence"]] == [("session", "sess-1")]
    again = call(
        ctx,
        "knowledge_add",
        type="fact",
        content="Tests use pytest.",
        evidence=[{"type": "session", "source": "sess-1", "locator": "seq=3"}],
    )["item"]
    assert len(again["evidence"]) == 1 and again["evidence"][0]["locator"] == "seq=3"


def test_no_session_means_no_session_evidence(
    repository: KnowledgeRepository, workspace: Path
) -> None:
    context = ToolContext(repository=repository, workspace=str(workspace))
    item = call(context, "knowledge_add", type="fact", content="Builds use uv.")["item"]
    assert item["evidence"] == []


def test_get_returns_at_most_eight_evidence(ctx: ToolContext) -> None:
    evidence = [{"type": "git", "source": f"commit {n}"} for n in range(12)]
    item = call(ctx, "knowledge_add", type="fact", content="Many refs.", evidence=evidence)
    assert len(item["item"]["evidence"]) == 8
    assert len(call(ctx, "knowledge_get", id=item["item"]["id"])["item"]["evidence"]) == 8


def test_scope_resolution(repository: KnowledgeRepository, workspace: Path) -> None:
    ctx = ToolContext(repository=repository, workspace=str(workspace), project="payments")
    scoped = call(ctx, "knowledge_add", type="fact", content="Payments use Stripe.")["item"]
    wide = call(ctx, "knowledge_add", type="fact", content="Repo uses uv.", project=None)["item"]
    assert scoped["project"] == "payments" and "project" not in wide
    assert [i["id"] for i in call(ctx, "knowledge_list")["items"]] == [scoped["id"]]
    assert [i["id"] for i in call(ctx, "knowledge_list", project=None)["items"]] == [wide["id"]]
    other = ToolContext(repository=repository, workspace=str(workspace), project="billing")
    # Another project's item is invisible: get, archive, freshness and health answer null.
    assert call(other, "knowledge_get", id=scoped["id"]) == {"item": None}
    assert call(other, "knowledge_archive", id=scoped["id"]) == {"item": None}
    assert call(other, "knowledge_check_freshness", id=scoped["id"]) == {"report": None}
    assert call(other, "knowledge_health", ids=[scoped["id"]]) == {
        "results": [{"id": scoped["id"], "health": None}]
    }
    assert repository.require(scoped["id"])["status"] == "candidate"
    # Workspace-wide items of the same workspace stay visible from a project.
    assert call(other, "knowledge_get", id=wide["id"])["item"]["id"] == wide["id"]
    elsewhere = ToolContext(repository=repository, workspace="/somewhere/else")
    assert call(elsewhere, "knowledge_get", id=wide["id"]) == {"item": None}
    assert call(ctx, "knowledge_get", id="no-such-id") == {"item": None}


def test_archive_in_scope(ctx: ToolContext, repository: KnowledgeRepository) -> None:
    item = call(ctx, "knowledge_add", type="decision", content="We use uv.")["item"]
    archived = call(ctx, "knowledge_archive", id=item["id"])["item"]
    assert archived["status"] == "archived"
    assert call(ctx, "knowledge_archive", id=item["id"])["item"]["status"] == "archived"
    assert call(ctx, "knowledge_search", query="uv")["items"] == []


def test_unavailable_workspace_and_store(repository: KnowledgeRepository) -> None:
    no_workspace = ToolContext(repository=repository)
    assert refused(no_workspace, "knowledge_list") == WORKSPACE_UNAVAILABLE
    assert refused(no_workspace, "knowledge_check_freshness", id="x") == WORKSPACE_UNAVAILABLE
    explicit = call(no_workspace, "knowledge_add", type="fact", content="ok", workspace="/w")
    assert explicit["item"]["workspace"] == "/w"
    no_store = ToolContext(repository=None, workspace="/w")
    assert refused(no_store, "knowledge_list") == STORAGE_UNAVAILABLE


def test_provenance_capture_for_clean_committed_files(ctx: ToolContext, workspace: Path) -> None:
    head = gitcmd.head(workspace)
    (workspace / "README.md").write_text("changed\n")
    result = call(
        ctx,
        "knowledge_add",
        type="fact",
        content="Routing lives in the router module.",
        evidence=[
            {"type": "file", "source": "src/router.py"},
            {"type": "file", "source": "README.md"},
            {"type": "git", "source": head},
        ],
    )
    evidence = result["item"]["evidence"]
    assert evidence[0]["gitProvenance"] == {"commit": head, "path": "src/router.py"}
    assert "gitProvenance" not in evidence[1]
    assert result["provenanceCapture"] == {
        "attempted": 2,
        "captured": 1,
        "skipped": 1,
        "warnings": [{"evidenceIndex": 1, "reason": "working_tree_changed"}],
    }


def test_provenance_capture_limits_and_mismatch(ctx: ToolContext, workspace: Path) -> None:
    files = [{"type": "file", "source": "src/router.py"}] * 10
    report = call(ctx, "knowledge_add", type="fact", content="Ten refs.", evidence=files)[
        "provenanceCapture"
    ]
    assert report["attempted"] == 10 and report["captured"] == 8
    assert [w["reason"] for w in report["warnings"]] == ["evidence_limit_exceeded"] * 2
    mismatch = call(
        ctx,
        "knowledge_add",
        type="fact",
        content="Elsewhere.",
        workspace="/other",
        evidence=[{"type": "file", "source": "src/router.py"}],
    )["provenanceCapture"]
    assert mismatch["warnings"] == [{"evidenceIndex": 0, "reason": "workspace_mismatch"}]
    plain = call(ctx, "knowledge_add", type="fact", content="No files.")
    assert "provenanceCapture" not in plain


def test_freshness_and_health(ctx: ToolContext, workspace: Path) -> None:
    item = call(
        ctx,
        "knowledge_add",
        type="fact",
        content="ROUTER is one.",
        evidence=[{"type": "file", "source": "src/router.py"}],
    )["item"]
    report = call(ctx, "knowledge_check_freshness", id=item["id"])["report"]
    assert report["status"] == "current"
    (workspace / "src/router.py").write_text("ROUTER = 2\n")
    assert call(ctx, "knowledge_check_freshness", id=item["id"])["report"]["status"] == (
        "potentially_stale"
    )
    got = call(ctx, "knowledge_get", id=item["id"], includeHealth=True)
    assert got["health"]["status"] == "potentially_stale"
    assert "health" not in call(ctx, "knowledge_get", id=item["id"])
    results = call(ctx, "knowledge_health", ids=[item["id"], "missing"], includeGuidance=True)
    first, second = results["results"]
    assert first["health"]["reasons"] == ["working_tree_changed"]
    assert [g["code"] for g in first["health"]["guidance"]] == ["review_claim"]
    assert second == {"id": "missing", "health": None}
    plain = call(ctx, "knowledge_health", ids=[item["id"]])["results"][0]["health"]
    assert "guidance" not in plain


def test_health_guidance_offers_provenance_capture(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "new.py").write_text("x = 1\n")  # untracked: no provenance at add time
    item = call(
        ctx,
        "knowledge_add",
        type="fact",
        content="New module.",
        evidence=[{"type": "file", "source": "new.py"}],
    )["item"]
    health = call(ctx, "knowledge_health", ids=[item["id"]], includeGuidance=True)["results"][0]
    codes = [g["code"] for g in health["health"]["guidance"]]
    assert codes[-1] == "capture_provenance"
    assert f"dsh-knowledge provenance {item['id']}" in health["health"]["guidance"][-1]["message"]
    assert all(len(g["message"]) <= 160 for g in health["health"]["guidance"])
