"""Requests larger than the store's own limits are answered: a search of more than 50,000
characters, a limit larger than SQLite can bind."""

from __future__ import annotations

from .command_helpers import add, fails, ok


def test_search_of_more_than_50000_characters_is_answered(seeded_store: str) -> None:
    long_text = "Ab" * 30_000
    item = add(seeded_store, f"prefix {long_text} suffix")
    found = ok("--db", str(seeded_store), "search", long_text)["items"]
    assert [i["id"] for i in found] == [item["id"]]
    # Still literal and ASCII-case-insensitive, as the LIKE search is for short queries.
    assert [
        i["id"] for i in ok("--db", str(seeded_store), "search", long_text.upper())["items"]
    ] == [item["id"]]
    assert ok("--db", str(seeded_store), "search", "%" * 50_001)["items"] == []


def test_a_limit_larger_than_sqlite_can_bind_lists_everything(seeded_store: str) -> None:
    add(seeded_store, "Second item.")
    assert len(ok("--db", str(seeded_store), "list", "--limit", str(10**23))["items"]) == 2
    assert (
        len(ok("--db", str(seeded_store), "search", "item", "--limit", str(10**23))["items"]) == 2
    )
    assert (
        fails("--db", str(seeded_store), "list", "--limit", "1e23")["code"] == "invalid-arguments"
    )
