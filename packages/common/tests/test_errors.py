"""What a message echoes of a value: bounded, and still saying what the value was."""

from __future__ import annotations

from dsh_common.errors import MAX_SHOWN_CHARS, shown, truncate


def test_truncate_cuts_with_an_ellipsis_only_when_needed() -> None:
    assert truncate("short", 10) == "short"
    assert truncate("a" * 11, 10) == "a" * 9 + "…"
    assert truncate("word " * 5, 10) == "word word…"  # no space before the ellipsis


def test_shown_is_a_bounded_repr() -> None:
    assert shown("fact") == "'fact'"
    assert shown(12) == "12" and shown(None) == "None"
    long = shown("9" * 4301)
    assert long.startswith("'999") and long.endswith("…'")
    assert len(long) == MAX_SHOWN_CHARS + 2  # the value's characters, and its quotes
    assert len(shown(["x" * 500])) == MAX_SHOWN_CHARS
    # Python refuses to spell out an int of more than 4,300 digits: no ValueError here.
    assert shown(10**5000) == "<an integer of more than 4300 digits>"
