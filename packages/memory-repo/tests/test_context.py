"""memory.context: selection, usage order, 4 KiB UTF-8-safe bodies, usage feedback."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from dsh_test_support import commands

from dsh_memory.errors import ContextInvalidRequestError, UsageInvalidError
from dsh_memory.search.context import context
from dsh_memory.search.search import search


def record(root: Path, path: str, body: str, record_id: str, extra: str = "") -> None:
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(
        f"---\nschema_version: 1\nid: {record_id}\ntype: fact\n{extra}---\n{body}",
        encoding="utf-8",
    )


@pytest.fixture
def root(tmp_path: Path) -> Path:
    memory = tmp_path / "memory"
    (memory / ".sync").mkdir(parents=True)
    record(memory, "handbook/a.md", "alpha cache\n", "a")
    record(memory, "handbook/b.md", "beta cache\n", "b")
    record(memory, "archive/c.md", "gamma cache\n", "c")
    return memory


def paths(value: dict[str, object]) -> list[str]:
    records = value["records"]
    assert isinstance(records, list)
    return [item["path"] for item in records]


def test_without_query_unused_records_order_by_id(root: Path) -> None:
    value = context(root)
    assert value["query"] is None
    assert paths(value) == ["handbook/a.md", "handbook/b.md"]
    assert "score" not in value["records"][0]


def test_more_used_record_comes_first(root: Path) -> None:
    context(root, "beta")
    context(root, "beta")
    assert paths(context(root))[0] == "handbook/b.md"


def test_usage_is_recorded_and_returned(root: Path) -> None:
    moment = dt.datetime(2026, 8, 21, 2, 0, tzinfo=dt.UTC)
    first = context(root, "alpha", now=moment)["records"][0]
    assert first["usage_count"] == 1
    assert first["last_usage"] == "2026-08-21T02:00:00.000Z"
    sidecar = json.loads((root / ".sync/usage.json").read_text())
    assert sidecar["records"]["handbook/a.md"]["usage_count"] == 1


def test_query_selects_matches_and_keeps_their_score(root: Path) -> None:
    value = context(root, "alpha")
    assert paths(value) == ["handbook/a.md"]
    item = value["records"][0]
    assert item["score"] == search(root, "alpha")["results"][0]["score"]
    assert item["content"] == "alpha cache\n"
    assert item["truncated"] is False
    assert item["citation"] == "[source: handbook/a.md · id: a]"
    assert item["logical_id"] == "a"
    assert item["generation"] == 1
    assert item["content_hash"].startswith("sha256:")


def test_scope_all_includes_archive(root: Path) -> None:
    assert paths(context(root, "gamma", 10, "all")) == ["archive/c.md"]
    assert paths(context(root, "gamma")) == []


def test_expired_record_is_not_returned(root: Path) -> None:
    record(root, "handbook/old.md", "delta\n", "old", extra="expires_at: 2020-01-01\n")
    assert context(root, "delta")["count"] == 0
    assert "handbook/old.md" not in paths(context(root))


def test_body_is_cut_to_four_kib_without_splitting_a_character(root: Path) -> None:
    record(root, "handbook/long.md", "长" * 2500, "long")
    (item,) = context(root, "长")["records"]
    assert item["truncated"] is True
    assert item["content"] == "长" * 1365
    assert len(item["content"].encode("utf-8")) <= 4096


def test_limit_bounds_the_records(root: Path) -> None:
    assert context(root, "cache", "1")["count"] == 1


@pytest.mark.parametrize("limit", [0, 21, "21", "x", True])
def test_limit_outside_one_to_twenty_is_invalid(root: Path, limit: object) -> None:
    with pytest.raises(ContextInvalidRequestError) as caught:
        context(root, None, limit)
    assert caught.value.code == "context-invalid-request"
    assert not (root / ".sync/usage.json").exists()


@pytest.mark.parametrize("query", ["", "  ", 5])
def test_blank_or_non_string_query_is_invalid(root: Path, query: object) -> None:
    with pytest.raises(ContextInvalidRequestError):
        context(root, query)


def test_bad_scope_is_invalid(root: Path) -> None:
    with pytest.raises(ContextInvalidRequestError):
        context(root, None, 10, "elsewhere")


def test_invalid_usage_sidecar_fails_and_is_untouched(root: Path) -> None:
    (root / ".sync/usage.json").write_text("{}")
    with pytest.raises(UsageInvalidError):
        context(root)
    assert (root / ".sync/usage.json").read_text() == "{}"


def test_busy_usage_lock_fails_the_read_with_usage_busy(root: Path) -> None:
    import os

    from dsh_memory.errors import UsageBusyError

    lock = root / ".sync/usage.lock"
    lock.mkdir()
    (lock / "owner.json").write_text(json.dumps({"pid": os.getpid(), "started_at": "x"}))
    with pytest.raises(UsageBusyError):
        context(root, "alpha")
    assert not (root / ".sync/usage.json").exists()


def test_query_selects_the_best_ranked_then_orders_them_by_usage(root: Path) -> None:
    record(root, "handbook/d.md", "cache cache cache eviction notes\n", "d")
    record(root, "handbook/e.md", "unrelated words and one cache\n", "e")
    for _ in range(3):
        context(root, "unrelated", 1)  # e is used often, for another question
    best = search(root, "cache eviction")["results"][0]["path"]
    assert best == "handbook/d.md"
    # With limit 1 the selection is the best match, not the most used partial match.
    assert paths(context(root, "cache eviction", 1)) == ["handbook/d.md"]
    # Among the selected records, usage decides the order (e has 3 uses, d has 1).
    assert paths(context(root, "eviction unrelated", 2)) == ["handbook/e.md", "handbook/d.md"]


@pytest.mark.parametrize("use_index", [True, False])
def test_total_counts_the_matches_before_limit_and_truncated_says_so(
    root: Path, use_index: bool
) -> None:
    for index in range(5):
        record(root, f"handbook/n{index}.md", f"cache note {index}\n", f"n{index}")
    record(root, "handbook/old.md", "cache gone\n", "old", "expires_at: 2020-01-01\n")
    cut = context(root, "cache", limit=2, use_index=use_index, record_use=False)
    # With a query: what the search counts (expired records are not matches).
    assert cut["total"] == search(root, "cache", use_index=use_index)["count"] == 7
    assert (cut["count"], cut["truncated"]) == (2, True)
    whole = context(root, "cache", limit=20, use_index=use_index, record_use=False)
    assert (whole["count"], whole["total"], whole["truncated"]) == (7, 7, False)
    # Without a query: every visible record in the scope.
    unqueried = context(root, limit=3, use_index=use_index, record_use=False)
    assert (unqueried["count"], unqueried["total"], unqueried["truncated"]) == (3, 7, True)
    archive = context(root, scope="archive", use_index=use_index, record_use=False)
    assert (archive["count"], archive["total"], archive["truncated"]) == (1, 1, False)
    assert list(whole)[:4] == ["query", "count", "records", "warnings"]  # the contract's first


def test_the_installed_command_says_how_many_matched_before_its_limit(memory_root: Path) -> None:
    for index in range(3):
        record(memory_root, f"handbook/n{index}.md", f"cache note {index}\n", f"n{index}")
    record(memory_root, "archive/old.md", "cache kept for reference\n", "old")

    def run(*args: str) -> dict[str, object]:
        done = commands.run("dsh-memory", "context", *args)
        assert done.returncode == 0, done.stderr
        envelope = json.loads(done.stdout)
        assert envelope["ok"] is True
        value = envelope["value"]
        assert isinstance(value, dict)
        return value

    for args in (("cache", "--limit", "1"), ("--query", "cache", "--limit", "1"), ("--limit", "1")):
        value = run(*args)
        assert (value["count"], value["total"], value["truncated"]) == (1, 3, True), args
    whole = run("cache", "--limit", "20")
    assert (whole["count"], whole["total"], whole["truncated"]) == (3, 3, False)
    every = run("cache", "--limit", "1", "--scope", "all")
    assert (every["count"], every["total"], every["truncated"]) == (1, 4, True)
