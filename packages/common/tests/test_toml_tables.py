"""Editing one TOML table as text: everything else byte for byte, always re-parsed."""

from __future__ import annotations

import tomllib

import pytest

from dsh_common.errors import DshError
from dsh_common.toml_tables import render_table, set_table

PATH = ["mcp_servers", "dsh-x"]
VALUES = {"command": 'C:\\tools\\dsh "x"', "args": ["mcp"], "required": True, "env": {"A": "1"}}


@pytest.mark.parametrize(
    "original",
    [
        "",
        'model = "m"\n',
        'model = "m"',  # no final newline
        '[a]\nb = 1\n\n# about c\n[c]\nd = "e"\n',
        "# only a comment\n",
    ],
)
def test_add_then_remove_gives_the_original_back(original: str) -> None:
    added = set_table(original, PATH, VALUES, "cfg")
    assert tomllib.loads(added)["mcp_servers"]["dsh-x"] == VALUES
    assert set_table(added, PATH, VALUES, "cfg") == added
    removed = set_table(added, PATH, None, "cfg")
    assert removed == (original if original.endswith("\n") or not original else original + "\n")


def test_replace_in_place_keeps_what_follows_and_drops_our_sub_tables() -> None:
    text = (
        '[mcp_servers."dsh-x"]\ncommand = "old"\n\n[mcp_servers.dsh-x.env]\nA = "0"\n\n'
        "# next\n[tail]\nk = 1\n"
    )
    replaced = set_table(text, PATH, VALUES, "cfg")
    assert replaced.endswith("\n# next\n[tail]\nk = 1\n")
    parsed = tomllib.loads(replaced)
    assert parsed["mcp_servers"]["dsh-x"] == VALUES and parsed["tail"] == {"k": 1}


@pytest.mark.parametrize(
    "text",
    ['mcp_servers.dsh-x.command = "x"\n', '[mcp_servers]\n"dsh-x" = { command = "x" }\n'],
)
def test_our_table_in_another_form_is_a_conflict(text: str) -> None:
    with pytest.raises(DshError) as caught:
        set_table(text, PATH, VALUES, "cfg")
    assert caught.value.code == "config-conflict"


def test_invalid_toml_is_refused() -> None:
    with pytest.raises(DshError) as caught:
        set_table("[unterminated\n", PATH, VALUES, "cfg")
    assert caught.value.code == "config-invalid"


def test_rendered_strings_are_valid_toml_for_any_text() -> None:
    hostile = {"command": 'a"b\\c\nd\u0001\u00e9\U0001f600', "args": []}
    assert tomllib.loads(render_table(PATH, hostile))["mcp_servers"]["dsh-x"] == hostile
