"""The conventions run_app gives every product, through a real Typer app: in this process
for what it prints, as a real process on a real terminal."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from dsh_test_support import in_process

from dsh_common.cli import list_counts
from dsh_common.cli_args import (
    expand_flag_values,
    hoist_global_options,
    sink_command_options,
    take_format,
)
from dsh_common.summary import render_summary

from . import conventions_app

CONVENTIONS_APP = Path(__file__).with_name("conventions_app.py")


def _run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The demo app's command line in this process, ``env`` added to the environment."""
    return in_process.run_main(
        conventions_app.main, "demo", *args, env={**os.environ, **env} if env else None
    )


@pytest.mark.parametrize(
    "args",
    [
        ("--root", "/r", "status"),
        ("status", "--root", "/r"),
        ("status", "--root=/r"),
        ("--root=/x", "status", "--root", "/r"),  # the last one wins, as in Click
    ],
)
def test_global_option_before_or_after_the_subcommand(args: tuple[str, ...]) -> None:
    done = _run(*args)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["root"] == "/r"


def test_version() -> None:
    done = _run("--version")
    assert done.returncode == 0
    assert json.loads(done.stdout) == {"name": "demo", "version": "1.2.3"}


@pytest.mark.parametrize("args", [(), ("--root", "/r")])
def test_bare_command_prints_help_exit_0(args: tuple[str, ...]) -> None:
    done = _run(*args)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Usage: demo")
    assert "A demo tool." in done.stdout
    assert "--format text" in done.stdout and "--root before or after" in done.stdout


def test_json_compact_when_piped_indented_on_a_terminal() -> None:
    piped = _run("status")
    assert piped.stdout.startswith('{"root":null,"items":[{"id":"r0"')
    assert piped.stdout.count("\n") == 1
    forced = _run("status", DSH_JSON_INDENT="1")
    assert forced.stdout.startswith('{\n  "root": null,')
    # A real terminal: the child's stdout is a pseudo-terminal.
    leader, follower = pty.openpty()
    try:
        subprocess.run(
            [sys.executable, str(CONVENTIONS_APP), "status"],
            stdout=follower,
            stderr=subprocess.PIPE,
            timeout=60,
            check=True,
        )
        seen = os.read(leader, 65536).decode()
    finally:
        os.close(leader)
        os.close(follower)
    assert seen.replace("\r\n", "\n").startswith('{\n  "root": null,\n  "items": [')


def test_format_text_anywhere() -> None:
    for args in (("--format", "text", "status"), ("status", "--format=text", "--limit", "1")):
        done = _run(*args)
        assert done.returncode == 0, done.stderr
        assert "root: -" in done.stdout
        assert "  - id=r0 title=record 0" in done.stdout
        assert "total: 5" in done.stdout
    errored = _run("status", "--limit", "x", "--format", "text")
    assert errored.returncode == 1
    assert errored.stderr.startswith("error invalid-arguments: ")
    assert errored.stdout == ""


def test_flag_spellings_of_a_value_option() -> None:
    expected = {
        ("migrate", "--dry-run"): "true",
        ("migrate", "--dry-run", "true"): "true",
        ("migrate", "--dry-run", "false"): "false",
        ("migrate", "--apply"): "false",
        ("migrate", "--dry-run", "--root", "/r"): "true",
        ("migrate", "--dry-run", "maybe"): "maybe",  # passed on: the command refuses it
    }
    for args, value in expected.items():
        done = _run(*args)
        assert done.returncode == 0, (args, done.stderr)
        assert json.loads(done.stdout)["dryRun"] == value, args
    # Another command's real boolean flag is not rewritten.
    done = _run("other", "--dry-run")
    assert json.loads(done.stdout) == {"dryRun": True}


def test_a_subcommand_may_keep_its_own_option_of_the_same_name() -> None:
    args = ["--root", "/a", "import", "--root", "/new", "--bundle", "b"]
    kept = hoist_global_options(args, {"--root"}, {"import": ("--root",)})
    assert kept == args
    moved = hoist_global_options(["status", "--root", "/a"], {"--root"}, {"import": ("--root",)})
    assert moved == ["--root", "/a", "status"]


def test_hoisting_leaves_data_after_double_dash_alone() -> None:
    args = ["status", "--limit", "3", "--", "--root", "x"]
    assert hoist_global_options(args, {"--root"}) == args
    assert hoist_global_options(["a", "--root"], {"--root"}) == ["--root", "a"]
    assert take_format(["a", "--format", "yaml"]) == (["a", "--format", "yaml"], None)
    assert expand_flag_values(["--root", "migrate", "migrate", "--apply"], {}) == [
        "--root",
        "migrate",
        "migrate",
        "--apply",
    ]
    assert expand_flag_values(
        ["--root", "migrate", "migrate", "--apply"],
        {"migrate": {"--dry-run": "--apply"}},
        {"--root"},
    ) == ["--root", "migrate", "migrate", "--dry-run", "false"]


def test_command_options_before_the_subcommand_move_after_it() -> None:
    sink = sink_command_options
    assert sink(["--workspace", "W", "recall", "q"], {"--workspace"}) == [
        "recall",
        "--workspace",
        "W",
        "q",
    ]
    assert sink(["--workspace=W", "recall", "q"], {"--workspace"}) == [
        "recall",
        "--workspace=W",
        "q",
    ]
    # Global options stay in front and their values are never taken for the subcommand.
    assert sink(["--db", "recall", "--project", "p", "search", "x"], {"--project"}, {"--db"}) == [
        "--db",
        "recall",
        "search",
        "--project",
        "p",
        "x",
    ]
    assert sink(["--project", "a", "--project", "b", "list"], {"--project"}) == [
        "list",
        "--project",
        "a",
        "--project",
        "b",
    ]
    # Nothing to move, no subcommand, or data after "--": left as written.
    for args in (
        ["recall", "--workspace", "W"],
        ["--workspace", "W"],
        ["--", "--workspace", "W"],
        ["--workspace"],
        [],
    ):
        assert sink(args, {"--workspace"}) == args


def test_summary_of_envelopes_lists_and_errors() -> None:
    text = render_summary(
        {"ok": True, "value": {"count": 4, "results": [{"score": 1, "id": "a"}] * 5, "x": None}}
    )
    assert text.splitlines() == [
        "count: 4",
        "results: 5",
        "  - id=a score=1",
        "  - id=a score=1",
        "  - id=a score=1",
        "  … 2 more",
        "x: -",
    ]
    assert render_summary({"ok": False, "error": {"code": "c", "message": "m"}}) == "error c: m\n"
    assert render_summary([1, 2]) == "items: 2\n  - 1\n  - 2\n"
    wrapped = render_summary({"results": [{"knowledge": {"id": "k1", "content": "c"}, "score": 3}]})
    assert wrapped == "results: 1\n  - score=3 knowledge.id=k1 knowledge.content=c\n"
    long = render_summary({"content": "word " * 200})
    assert len(long) <= 2 * 100 + len("content: ") + 1 and long.endswith("…\n")


def test_list_counts() -> None:
    assert list_counts(2, 5) == {"total": 5, "truncated": True}
    assert list_counts(5, 5) == {"total": 5, "truncated": False}
