"""The agent tools return JSON strings: values on success, {"error": code} on failure."""

from __future__ import annotations

import json
from pathlib import Path

from dsh_memory.service import MemoryService
from dsh_memory.tools import TOOL_DEFINITIONS, UNTRUSTED_NOTICE, call_tool


def add_record(root: Path) -> None:
    target = root / "handbook/cache.md"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(
        "---\nschema_version: 1\nid: infra/cache\ntype: decision\n---\n缓存雪崩的预防。\n",
        encoding="utf-8",
    )


def test_memory_search_returns_snippets_citations_and_the_untrusted_notice(
    memory_root: Path,
) -> None:
    add_record(memory_root)
    result = json.loads(
        call_tool(MemoryService(memory_root), "memory_search", {"query": "缓存雪崩"})
    )
    assert result["count"] == 1
    assert result["results"][0]["citation"] == "[source: handbook/cache.md · id: infra/cache]"
    assert result["notice"] == UNTRUSTED_NOTICE
    assert "retrieval" not in result
    assert str(memory_root) not in json.dumps(result)


def test_memory_context_returns_bounded_records(memory_root: Path) -> None:
    add_record(memory_root)
    result = json.loads(call_tool(MemoryService(memory_root), "memory_context", {"limit": 5}))
    assert [record["path"] for record in result["records"]] == ["handbook/cache.md"]
    assert result["records"][0]["usage_count"] == 1


def test_tool_failure_is_an_error_code_string(memory_root: Path) -> None:
    output = call_tool(MemoryService(memory_root), "memory_search", {"query": "  "})
    assert json.loads(output) == {"error": "search-invalid-request"}


def test_unknown_tool_is_reported(memory_root: Path) -> None:
    assert json.loads(call_tool(MemoryService(memory_root), "memory_delete", {})) == {
        "error": "unknown-tool"
    }


def test_tool_definitions_name_both_tools() -> None:
    assert [tool["name"] for tool in TOOL_DEFINITIONS] == ["memory_search", "memory_context"]
