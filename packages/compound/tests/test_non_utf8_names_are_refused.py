"""Arguments, paths and text that are not UTF-8 are refused, and shown with their bytes
escaped, before anything changes.

The command line refuses such an argument as ``invalid-arguments`` (through the console
script, so the bytes reach it as a shell passes them); the library refuses such a
workspace, draft path, source path, draft text or query with its own code.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from dsh_test_support import commands
from dsh_test_support.commands import error

from dsh_compound import capture, check, inspect, read_draft_input, recall
from dsh_compound.errors import CompoundError

run = commands.runner("dsh-compound")


def test_non_utf8_workspace_argument_is_invalid_arguments_and_escaped(tmp_path: Path) -> None:
    target = os.fsencode(tmp_path) + b"/\xffnope"
    result = run("capture", "--workspace", target, "--input", "x")
    failure = error(result)
    assert failure == {
        "code": "invalid-arguments",
        "message": f"the value of --workspace is not valid UTF-8: '{tmp_path}/\\xffnope'",
    }
    assert not os.path.lexists(target)


@pytest.mark.parametrize("command", ["recall", "inspect", "check"])
def test_every_command_refuses_non_utf8_arguments(workspace: Path, command: str) -> None:
    extra = {"recall": ["--query", b"caf\xe9"], "inspect": ["--id", b"\xff"], "check": []}
    bad_workspace = os.fsencode(workspace) + b"\xff"
    arguments: list[str | bytes] = ["--workspace", str(workspace), *extra[command]]
    if command == "check":
        arguments[1] = bad_workspace
    assert error(run(command, *arguments))["code"] == "invalid-arguments"


def test_non_utf8_workspace_in_the_library_is_invalid_path(tmp_path: Path, draft: Any) -> None:
    raw = os.fsencode(tmp_path) + b"/ws\xff"
    os.mkdir(raw)  # it really exists: the refusal is about the name, not a missing folder
    workspace = os.fsdecode(raw)
    for call in (
        lambda: capture(workspace, draft),
        lambda: recall(workspace, "login"),
        lambda: inspect(workspace, "login-timeout"),
        lambda: check(workspace),
        lambda: read_draft_input(workspace, workspace + "/draft.json"),
    ):
        with pytest.raises(CompoundError) as caught:
            call()
        assert caught.value.code == "invalid-path"
        assert caught.value.message == (
            f"the workspace path is not valid UTF-8: '{tmp_path}/ws\\xff'"
        )
    assert os.listdir(raw) == []


def test_non_utf8_draft_input_path_is_invalid_path(workspace: Path) -> None:
    with pytest.raises(CompoundError) as caught:
        read_draft_input(workspace, os.fsdecode(os.fsencode(workspace) + b"/d\xff.json"))
    assert caught.value.code == "invalid-path"
    assert "d\\xff.json" in caught.value.message


def test_non_utf8_source_path_in_a_draft_is_invalid_path(workspace: Path, make_draft: Any) -> None:
    raw = os.fsencode(workspace) + b"/src/caf\xe9.js"
    with open(raw, "wb") as handle:
        handle.write(b"x")
    with pytest.raises(CompoundError) as caught:
        capture(workspace, make_draft(files=[os.fsdecode(b"src/caf\xe9.js")]))
    assert caught.value.code == "invalid-path"
    assert "caf\\xe9.js" in caught.value.message
    assert not (workspace / "docs").exists()


def test_non_utf8_draft_text_is_invalid_draft(workspace: Path, make_draft: Any) -> None:
    bad = os.fsdecode(b"caf\xe9")
    for overrides in ({"title": bad}, {"tags": [bad]}, {"verification": {"command": bad}}):
        with pytest.raises(CompoundError) as caught:
            capture(workspace, make_draft(**overrides))
        assert caught.value.code == "invalid-draft"
        assert "not valid UTF-8" in caught.value.message
    assert not (workspace / "docs").exists()


def test_non_utf8_query_in_the_library_is_invalid_query(workspace: Path) -> None:
    with pytest.raises(CompoundError) as caught:
        recall(workspace, os.fsdecode(b"caf\xe9"))
    assert caught.value.code == "invalid-query"


def test_workspace_whose_canonical_path_is_not_utf8_is_invalid_path(
    tmp_path: Path, draft: Any
) -> None:
    real = os.fsencode(tmp_path) + b"/real\xff"
    os.mkdir(real)
    os.symlink(real, tmp_path / "alias")  # a symlinked ancestor is allowed, its target not
    (tmp_path / "alias" / "ws").mkdir()
    with pytest.raises(CompoundError) as caught:
        check(tmp_path / "alias" / "ws")
    assert caught.value.code == "invalid-path"
    assert "real\\xff/ws" in caught.value.message
