"""dsh_common.jsonlines: no line of a log another program wrote can stop the read."""

from __future__ import annotations

import json
import sys

import pytest

from dsh_common.jsonlines import (
    MAX_DEPTH,
    iter_json_lines,
    nesting_exceeds,
    parse_json_line,
    read_json_lines,
)


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_lines_are_numbered_parsed_or_marked() -> None:
    data = b'{"a": 1}\n\nnot json\n' + nested(MAX_DEPTH + 1).encode() + b"\n[2]\n"
    lines = list(iter_json_lines(data))
    assert [(line.number, line.value, line.problem) for line in lines] == [
        (1, {"a": 1}, None),
        (3, None, "malformed"),
        (4, None, "too-deep"),
        (5, [2], None),
    ]
    read = read_json_lines(data)
    assert read.values == [{"a": 1}, [2]] and read.numbers == [1, 5]
    assert (read.malformed, read.too_deep, read.skipped) == (1, 1, 2)


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 500, 2000, sys.getrecursionlimit() * 5])
def test_any_depth_past_the_limit_is_skipped_without_recursion_error(depth: int) -> None:
    assert parse_json_line(nested(depth)) == (None, "too-deep")
    assert parse_json_line('{"k": ' * depth + "0" + "}" * depth) == (None, "too-deep")


def test_the_limit_itself_is_read() -> None:
    value, problem = parse_json_line(nested(MAX_DEPTH))
    assert problem is None and isinstance(value, list)
    assert not nesting_exceeds(value, MAX_DEPTH) and nesting_exceeds(value, MAX_DEPTH - 1)


def test_brackets_inside_strings_do_not_count() -> None:
    text = json.dumps({"code": "{" * 5000 + "[" * 5000})
    assert parse_json_line(text) == ({"code": "{" * 5000 + "[" * 5000}, None)


def test_lines_split_on_newlines_only() -> None:
    """A JSON string may hold a raw U+2028 or U+0085: str.splitlines would cut it in two."""
    data = '{"t": "a\u2028b\u0085c"}\r\n{"t": 2}\r'.encode()
    assert read_json_lines(data).values == [{"t": "a\u2028b\u0085c"}, {"t": 2}]


def test_bytes_that_are_not_utf8_are_replaced_or_refused() -> None:
    data = b'{"t": "\xff"}\n'
    assert read_json_lines(data).values == [{"t": "\ufffd"}]
    strict = read_json_lines(data, errors="strict")
    assert strict.values == [] and strict.malformed == 1


def test_what_javascript_writes_is_read() -> None:
    """JSON.stringify writes lone surrogates as escapes; a UTF-8 BOM may start a file."""
    data = b'\xef\xbb\xbf{"a": "\\ud83d"}\n'
    assert read_json_lines(data).values == [{"a": "\ud83d"}]


def test_nesting_exceeds_walks_without_recursion() -> None:
    value: object = 0
    for _ in range(sys.getrecursionlimit() * 3):
        value = [value]
    assert nesting_exceeds(value, 10)
    assert not nesting_exceeds({"a": [1, {"b": 2}]}, 3)
    assert nesting_exceeds({"a": [1, {"b": []}]}, 3)
    assert not nesting_exceeds("text", 0)
