"""A commit id or a timestamp is valid only if the whole value is: a trailing newline or
digits that are not ASCII make it invalid input, refused with its code, the store unchanged
(``re.match`` with ``$`` and ``\\d`` once let both through)."""

from __future__ import annotations

import json

import pytest

from .command_helpers import fails, ok


def test_commit_of_39_hex_and_a_newline_is_invalid_provenance(seeded_store: str) -> None:
    evidence = {"type": "file", "source": "a.py", "gitProvenance": {"commit": "a" * 39 + "\n"}}
    evidence["gitProvenance"]["path"] = "a.py"
    error = fails(
        "--db",
        str(seeded_store),
        "add",
        "--workspace",
        "/w",
        "--type",
        "fact",
        "--content",
        "x",
        "--evidence",
        json.dumps(evidence),
    )
    assert error["code"] == "invalid-git-provenance"
    assert len(ok("--db", str(seeded_store), "list")["items"]) == 1


@pytest.mark.parametrize(
    "timestamp", ["2026-11-30T12:00:00.000Z\n", "\uff12\uff10\uff12\uff16-11-30T12:00:00.000Z"]
)
def test_timestamp_with_trailing_newline_or_non_ascii_digits_is_invalid(
    seeded_store: str, timestamp: str
) -> None:
    evidence = json.dumps({"type": "session", "source": "s-1", "timestamp": timestamp})
    error = fails(
        "--db",
        str(seeded_store),
        "add",
        "--workspace",
        "/w",
        "--type",
        "fact",
        "--content",
        "x",
        "--evidence",
        evidence,
    )
    assert error["code"] == "invalid-input"
    assert len(ok("--db", str(seeded_store), "list")["items"]) == 1
