"""``dsh-knowledge mcp`` through a real MCP client session over stdio (a real server process)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from dsh_test_support import gitcmd

pytest.importorskip("mcp", reason="the MCP extra (dsh-knowledge[mcp]) is not installed")

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from dsh_knowledge.privacy import PRIVACY_REJECTION_MESSAGE
from dsh_knowledge.repository import KnowledgeRepository
from dsh_knowledge.store import KnowledgeStore
from dsh_knowledge.tool_schemas import INPUT_SCHEMAS, OUTPUT_SCHEMAS, TOOL_NAMES

from .agent_helpers import command, make_repo

TOKEN = "sk" + "-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6"
READ_ONLY = {
    "knowledge_search",
    "knowledge_list",
    "knowledge_get",
    "knowledge_check_freshness",
    "knowledge_health",
}


def session(
    args: list[str],
    body: Callable[[ClientSession], Awaitable[None]],
    env: dict[str, str],
    errlog: Path | None = None,
) -> None:
    params = StdioServerParameters(
        command=command(), args=["mcp", *args], env={**os.environ, **env}
    )

    async def main() -> None:
        log = open(errlog or os.devnull, "w")  # noqa: SIM115 - the server's stderr
        with log, anyio.fail_after(60):
            async with (
                stdio_client(params, errlog=log) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                await body(client)

    anyio.run(main)


def test_tools_schemas_annotations_and_every_call(tmp_path: Path, db: str, backend: str) -> None:
    workspace = make_repo(tmp_path / "ws", {"src/app.py": "PORT = 8080\n"})
    head = gitcmd.head(workspace)
    seen: dict[str, Any] = {}

    async def body(client: ClientSession) -> None:
        listed = (await client.list_tools()).tools
        assert [tool.name for tool in listed] == list(TOOL_NAMES)
        for tool in listed:
            assert tool.input_schema == INPUT_SCHEMAS[tool.name]
            assert tool.output_schema == OUTPUT_SCHEMAS[tool.name]
            notes = tool.annotations
            assert notes is not None
            assert notes.read_only_hint is (tool.name in READ_ONLY)
            assert notes.destructive_hint is (tool.name == "knowledge_archive")
            assert notes.idempotent_hint is (tool.name != "knowledge_add")
            assert notes.open_world_hint is False

        async def ok(name: str, arguments: dict[str, Any]) -> Any:
            result = await client.call_tool(name, arguments)
            assert result.is_error is False, result.content
            assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]
            return result.structured_content

        added = await ok(
            "knowledge_add",
            {
                "type": "fact",
                "content": "The app listens on port 8080.",
                "evidence": [{"type": "file", "source": "src/app.py"}],
            },
        )
        item_id = added["item"]["id"]
        assert added["item"]["project"] == "web"  # the --project default
        assert added["provenanceCapture"]["captured"] == 1
        assert added["item"]["evidence"][0]["gitProvenance"]["commit"] == head
        assert added["item"]["evidence"][1] == {
            "type": "session",
            "source": "mcp-session-7",
            "timestamp": added["item"]["evidence"][1]["timestamp"],
        }
        found = await ok("knowledge_search", {"query": "which port does the app listen on"})
        assert [i["id"] for i in found["items"]] == [item_id]
        assert [i["id"] for i in (await ok("knowledge_list", {}))["items"]] == [item_id]
        got = await ok("knowledge_get", {"id": item_id, "includeHealth": True})
        assert got["health"]["status"] == "current"
        fresh = await ok("knowledge_check_freshness", {"id": item_id})
        assert fresh["report"]["status"] == "current"
        health = await ok("knowledge_health", {"ids": [item_id], "includeGuidance": True})
        assert health["results"][0]["health"]["guidance"] == []
        archived = await ok("knowledge_archive", {"id": item_id})
        assert archived["item"]["status"] == "archived"
        assert (await ok("knowledge_get", {"id": "missing"})) == {"item": None}

        refused = await client.call_tool(
            "knowledge_add", {"type": "fact", "content": "key " + TOKEN}
        )
        assert refused.is_error is True
        assert refused.content[0].text == PRIVACY_REJECTION_MESSAGE  # type: ignore[union-attr]
        assert refused.structured_content is None
        bound = await client.call_tool("knowledge_search", {"query": "q" * 300})
        assert bound.is_error is True
        assert bound.content[0].text == "query must be at most 256 characters."  # type: ignore[union-attr]
        seen["done"] = True

    stderr = tmp_path / "server-stderr.txt"
    session(
        ["--db", db, "--project", "web", "--workspace", str(workspace)],
        body,
        {"DSH_KNOWLEDGE_SESSION_ID": "mcp-session-7", "DSH_DEBUG": "1"},
        errlog=stderr,
    )
    assert seen == {"done": True}
    # The refused secret is nowhere: not stored, not in the server's log.
    if backend == "sqlite":
        for stored in Path(db).parent.glob(Path(db).name + "*"):  # with -wal, -shm
            assert TOKEN not in stored.read_bytes().decode("latin-1")
    else:
        with KnowledgeStore(db) as store:
            rows = store.connection.execute(
                "SELECT count(*) FROM knowledge WHERE strpos(content, ?) > 0", (TOKEN,)
            ).fetchone()
            assert rows[0] == 0
    assert TOKEN not in stderr.read_text()


def test_discovery_from_environment_and_cwd(backend: str, db: str) -> None:

    async def body(client: ClientSession) -> None:
        result = await client.call_tool("knowledge_add", {"type": "lesson", "content": "Env."})
        item = result.structured_content["item"]  # type: ignore[index]
        assert item["project"] == "from-env"
        # No --workspace: the server's working directory (the test's cwd) is the workspace.
        assert item["workspace"] == os.getcwd()

    session([], body, {"DSH_KNOWLEDGE_DB": db, "DSH_KNOWLEDGE_PROJECT": "from-env"})
    with KnowledgeStore(db) as store:  # the store the environment named, nothing else
        assert [row[0] for row in store.connection.execute("SELECT content FROM knowledge")] == [
            "Env."
        ]


def test_unopenable_store_keeps_tools_listed_but_unavailable(
    tmp_path: Path, backend: str, db: str
) -> None:
    if backend == "sqlite":
        broken = tmp_path / "broken.sqlite"
        broken.write_bytes(b"not a database" * 200)
    else:  # a database the server does not have
        broken = db.replace("/dsh_", "/missing_dsh_", 1)
        assert broken != db

    async def body(client: ClientSession) -> None:
        assert len((await client.list_tools()).tools) == 7
        result = await client.call_tool("knowledge_list", {})
        assert result.is_error is True
        assert result.content[0].text == "Knowledge storage is unavailable."  # type: ignore[union-attr]

    session(["--db", str(broken), "--workspace", str(tmp_path)], body, {})


def test_bad_options_are_a_json_error() -> None:
    result = subprocess.run(
        [command(), "mcp", "--colour", "red"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 1 and result.stdout == ""
    assert json.loads(result.stderr)["error"]["code"] == "invalid-input"


LESSON = "数据库连接池耗尽导致请求超时：给每个服务的连接池设置上限。"
QUESTION = "requests time out because the database connection pool is exhausted"


def test_the_mcp_server_ranks_by_its_variable_or_the_calls_argument(
    db: str, semantic_home: Path
) -> None:
    # DSH_RANKING=hybrid (as setup --ranking hybrid writes it) and the call's own argument.
    import jsonschema

    with KnowledgeStore(db) as store:
        KnowledgeRepository(store).create(type="lesson", content=LESSON, scope={"workspace": "/w"})
    answers: dict[str, Any] = {}

    async def body(client: Any) -> None:
        for name, arguments in (
            ("default", {"query": QUESTION}),
            ("lexical", {"query": QUESTION, "ranking": "lexical"}),
            ("again", {"query": QUESTION}),
        ):
            result = await client.call_tool("knowledge_search", arguments)
            assert result.is_error is False, result.content
            answers[name] = result.structured_content

    env = {"DSH_RANKING": "hybrid", "DSH_HOME": str(semantic_home)}
    session(["--db", db, "--workspace", "/w"], body, env)
    for answer in answers.values():
        jsonschema.Draft202012Validator(OUTPUT_SCHEMAS["knowledge_search"]).validate(answer)
    assert answers["default"]["ranking"] == "hybrid"
    assert answers["default"]["items"][0]["content"] == LESSON
    assert answers["default"]["items"][0]["hybrid"]["channels"] == ["semantic"]
    assert answers["again"] == answers["default"]  # the index kept in memory answers the same
    assert answers["lexical"] == {"items": [], "total": 0, "truncated": False}
