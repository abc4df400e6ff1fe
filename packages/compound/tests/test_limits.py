"""The exported limits are the contract's (docs/compatibility/compound.md, Limits) and cannot
change at run time."""

from __future__ import annotations

import pytest

from dsh_compound import CORPUS_DIRECTORY, LIMITS
from dsh_compound.limits import exceeds_js_length, js_length


def test_limits_are_the_spec_values() -> None:
    spec = {
        "id_length": 100,
        "title_length": 160,
        "tag_length": 64,
        "tags_max": 12,
        "problem_length": 4000,
        "when_to_use_length": 2000,
        "verification_field_length": 2000,
        "files_max": 32,
        "draft_bytes": 32 * 1024,
        "record_bytes": 64 * 1024,
        "source_bytes": 8 * 1024 * 1024,
        "query_length": 500,
        "query_terms": 999,
        "default_limit": 5,
        "max_limit": 10,
        "scan_names": 500,
        "scan_bytes": 4 * 1024 * 1024,
        "warnings": 20,
    }
    assert {key: LIMITS.as_dict()[key] for key in spec} == spec
    assert CORPUS_DIRECTORY == "docs/solutions/dsh-compound"


def test_limits_are_read_only() -> None:
    with pytest.raises(AttributeError):
        LIMITS.record_bytes = 1  # type: ignore[misc]


@pytest.mark.parametrize(
    ("text", "units"), [("", 0), ("abc", 3), ("超时", 2), ("😀", 2), ("𠀀a", 3), ("é", 1)]
)
def test_lengths_are_utf16_code_units(text: str, units: int) -> None:
    assert js_length(text) == units
    assert exceeds_js_length(text, units) is False
    assert exceeds_js_length(text, units - 1) is True
