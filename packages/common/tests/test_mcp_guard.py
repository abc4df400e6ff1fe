"""The nesting clip of MCP input lines, against a recursive reference on any JSON."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_common.mcp_guard import TOO_DEEP, argument_problem, clip_nesting

# Strings full of what the scanner must not take for structure: brackets, quotes, escapes.
TEXT = st.text(alphabet=st.sampled_from('[]{}"\\ab,:\u00e9😀\n'), max_size=12)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=40,
)


def depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    return 0


def reference(value: Any, limit: int, level: int = 0) -> Any:
    """``value`` with every container that would be level ``limit + 1`` replaced."""
    if isinstance(value, (list, dict)) and level == limit:
        return TOO_DEEP
    if isinstance(value, list):
        return [reference(v, limit, level + 1) for v in value]
    if isinstance(value, dict):
        return {k: reference(v, limit, level + 1) for k, v in value.items()}
    return value


@settings(max_examples=400, deadline=None)
@given(JSON, st.integers(min_value=0, max_value=6), st.booleans())
def test_clipping_matches_the_reference(value: Any, limit: int, ascii_only: bool) -> None:
    line = json.dumps(value, ensure_ascii=ascii_only)
    clipped = clip_nesting(line, limit)
    assert json.loads(clipped) == reference(value, limit)
    if depth(value) <= limit:
        assert clipped == line


def test_a_request_nested_100000_deep_keeps_its_envelope() -> None:
    line = (
        '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t","arguments":'
        '{"q":' + "[" * 100_000 + "]" * 100_000 + ',"s":"[\\"{"}}}'
    )
    message = json.loads(clip_nesting(line, 64))
    assert message["id"] == 7 and message["params"]["name"] == "t"
    arguments = message["params"]["arguments"]
    assert arguments["s"] == '["{'
    assert argument_problem(arguments) is not None
    assert argument_problem({"q": [[["fine"]]], "n": 2**70}) is None


def test_text_that_is_not_json_is_left_to_the_parser() -> None:
    broken = '{"a": "unterminated' + "[" * 100
    assert clip_nesting(broken, 3) == broken
