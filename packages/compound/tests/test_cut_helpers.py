"""The text-cutting helpers against one-line reference implementations, on any text.

Each helper is fuzzed with text mixing ASCII, CJK, astral characters (emoji, Extension B
ideographs: two UTF-16 units each) and lone surrogates, and every limit around its length.
A helper that loops over its own cut (re-measuring a shrinking text) would hang here.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_common.agent_hooks import one_line
from dsh_common.errors import truncate
from dsh_compound.limits import exceeds_js_length, js_length, js_prefix

#: Characters from every width class, weighted towards the ones that cost two units.
CHARS = st.one_of(
    st.sampled_from("aZ 0\n<&>…"),
    st.sampled_from("超时数据库"),
    st.sampled_from(["😀", "𠀀", "🧪", "\U0010ffff"]),
    st.sampled_from(["\ud800", "\udfff"]),  # lone surrogates (from JSON escapes)
    st.characters(),
)
TEXTS = st.lists(CHARS, max_size=1200).map("".join)
LIMITS = st.integers(min_value=0, max_value=1300)


def reference_units(text: str) -> int:
    return sum(2 if ord(char) > 0xFFFF else 1 for char in text)


def reference_prefix(text: str, limit: int) -> str:
    out = ""
    for char in text:
        if reference_units(out + char) > limit:
            break
        out += char
    return out


@settings(max_examples=300, deadline=None)
@given(TEXTS, LIMITS)
def test_js_length_and_exceeds_match_the_reference(text: str, limit: int) -> None:
    assert js_length(text) == reference_units(text)
    assert exceeds_js_length(text, limit) == (reference_units(text) > limit)


@settings(max_examples=300, deadline=None)
@given(TEXTS, LIMITS)
def test_js_prefix_is_the_longest_prefix_within_the_limit(text: str, limit: int) -> None:
    cut = js_prefix(text, limit)
    assert cut == reference_prefix(text, limit)
    assert text.startswith(cut)
    assert reference_units(cut) <= limit


@settings(max_examples=200, deadline=None)
@given(TEXTS, st.integers(min_value=1, max_value=1300))
def test_truncate_keeps_a_prefix_within_the_limit(text: str, limit: int) -> None:
    cut = truncate(text, limit)
    assert len(cut) <= limit
    if len(text) <= limit:
        assert cut == text
    else:
        assert cut.endswith("…")
        assert text.startswith(cut[:-1])


@settings(max_examples=200, deadline=None)
@given(TEXTS, st.integers(min_value=1, max_value=400))
def test_one_line_is_one_escaped_line_within_the_limit(text: str, limit: int) -> None:
    line = one_line(text, limit)
    assert len(line) <= limit
    assert not any(char in line for char in "<>\n")


def test_the_query_cut_of_an_emoji_prompt_is_immediate() -> None:
    # 180-499 emoji are 360-998 UTF-16 units: a cut to 500 units must still end at once.
    for count in (180, 250, 300, 499, 500, 2000):
        cut = js_prefix("😀" * count, 500)
        assert cut == "😀" * min(count, 250)
