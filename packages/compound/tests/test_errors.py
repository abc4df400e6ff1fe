"""The error codes are unique, kebab-case, and exactly the reference page's table."""

from __future__ import annotations

import re
from pathlib import Path

from dsh_common.errors import DshError
from dsh_compound.errors import CLI_ONLY_CODES, CompoundError, all_error_classes

# The documentation site's reference page for dsh-compound (docs/compound/reference.md).
REFERENCE = Path(__file__).parents[3] / "docs" / "compound" / "reference.md"


def test_every_leaf_has_a_unique_kebab_case_code() -> None:
    codes = [cls.code for cls in all_error_classes()]
    assert len(codes) == len(set(codes))
    assert all(re.fullmatch(r"[a-z]+(-[a-z]+)*", code) for code in codes)


def test_every_leaf_is_a_compound_error_and_a_dsh_error() -> None:
    for cls in all_error_classes():
        assert issubclass(cls, CompoundError)
        assert issubclass(cls, DshError)


def test_reference_error_table_lists_exactly_the_codes() -> None:
    text = REFERENCE.read_text(encoding="utf-8")
    section = text.split("## Error codes", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `([a-z-]+)` \|", section, flags=re.MULTILINE))
    assert documented == {cls.code for cls in all_error_classes()} | set(CLI_ONLY_CODES)
