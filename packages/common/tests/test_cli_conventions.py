"""The conventions run_app gives every product, through a real Typer app in a real process."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dsh_common.cli import list_counts
from dsh_common.cli_args import (
    expand_flag_values,
    hoist_global_options,
    sink_command_options,
    take_format,
)
from dsh_common.summary import render_summary

APP = textwrap.dedent(
    '''
    import sys
    from typing import Annotated
    import typer
    from dsh_common.cli import emit_json, run_app

    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False,
                      rich_markup_mode=None, help="A demo tool.")
    state = {}

    @app.callback()
    def options(root: Annotated[str | None, typer.Option("--root")] = None) -> None:
        state["root"] = root

    @app.command()
    def status(limit: Annotated[int, typer.Option("--limit")] = 2) -> None:
        """Show the state."""
        items = [{"id": f"r{i}", "title": f"record {i}"} for i in range(5)]
        emit_json({"root": state["root"], "items": items[:limit], "total": 5, "ok": True})

    @app.command()
    def migrate(dry_run: Annotated[str | None, typer.Option("--dry-run")] = None) -> None:
        """Take --dry-run true|false as a word."""
        emit_json({"dryRun": dry_run, "root": state["root"]})

    @app.command()
    def other(dry_run: Annotated[bool, typer.Option("--dry-run")] = False) -> None:
        """A real boolean flag of the same name, left alone."""
        emit_json({"dryRun": dry_run})

    if __name__ == "__main__":
        sys.exit(run_app(app, prog_name="demo", global_options=("--root",), version="1.2.3",
                         flag_values={"migrate": {"--dry-run": "--apply"}}))
    '''
)


@pytest.fixture
def app_script(tmp_path: Path) -> Path:
    script = tmp_path / "app.py"
    script.write_text(APP)
    return script


def _run(script: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
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
def test_global_option_before_or_after_the_subcommand(
    app_script: Path, args: tuple[str, ...]
) -> None:
    done = _run(app_script, *args)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["root"] == "/r"


def test_version(app_script: Path) -> None:
    done = _run(app_script, "--version")
    assert done.returncode == 0
    assert json.loads(done.stdout) == {"name": "demo", "version": "1.2.3"}


@pytest.mark.parametrize("args", [(), ("--root", "/r")])
def test_bare_command_prints_help_exit_0(app_script: Path, args: tuple[str, ...]) -> None:
    done = _run(app_script, *args)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Usage: demo")
    assert "A demo tool." in done.stdout
    assert "--format text" in done.stdout and "--root before or after" in done.stdout


def test_json_compact_when_piped_indented_on_a_terminal(app_script: Path) -> None:
    piped = _run(app_script, "status")
    assert piped.stdout.startswith('{"root":null,"items":[{"id":"r0"')
    assert piped.stdout.count("\n") == 1
    forced = _run(app_script, "status", DSH_JSON_INDENT="1")
    assert forced.stdout.startswith('{\n  "root": null,')
    # A real terminal: the child's stdout is a pseudo-terminal.
    leader, follower = pty.openpty()
    try:
        subprocess.run(
            [sys.executable, str(app_script), "status"],
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


def test_format_text_anywhere(app_script: Path) -> None:
    for args in (("--format", "text", "status"), ("status", "--format=text", "--limit", "1")):
        done = _run(app_script, *args)
        assert done.returncode == 0, done.stderr
        assert "root: -" in done.stdout
        assert "  - id=r0 title=record 0" in done.stdout
        assert "total: 5" in done.stdout
    errored = _run(app_script, "status", "--limit", "x", "--format", "text")
    assert errored.returncode == 1
    assert errored.stderr.startswith("error invalid-arguments: ")
    assert errored.stdout == ""


def test_flag_spellings_of_a_value_option(app_script: Path) -> None:
    expected = {
        ("migrate", "--dry-run"): "true",
        ("migrate", "--dry-run", "true"): "true",
        ("migrate", "--dry-run", "false"): "false",
        ("migrate", "--apply"): "false",
        ("migrate", "--dry-run", "--root", "/r"): "true",
        ("migrate", "--dry-run", "maybe"): "maybe",  # passed on: the command refuses it
    }
    for args, value in expected.items():
        done = _run(app_script, *args)
        assert done.returncode == 0, (args, done.stderr)
        assert json.loads(done.stdout)["dryRun"] == value, args
    # Another command's real boolean flag is not rewritten.
    done = _run(app_script, "other", "--dry-run")
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
        "--root", "migrate", "migrate", "--apply",
    ]  # fmt: skip
    assert expand_flag_values(
        ["--root", "migrate", "migrate", "--apply"], {"migrate": {"--dry-run": "--apply"}},
        {"--root"},
    ) == ["--root", "migrate", "migrate", "--dry-run", "false"]  # fmt: skip


def test_command_options_before_the_subcommand_move_after_it() -> None:
    sink = sink_command_options
    assert sink(["--workspace", "W", "recall", "q"], {"--workspace"}) == [
        "recall", "--workspace", "W", "q",
    ]  # fmt: skip
    assert sink(["--workspace=W", "recall", "q"], {"--workspace"}) == [
        "recall",
        "--workspace=W",
        "q",
    ]
    # Global options stay in front and their values are never taken for the subcommand.
    assert sink(["--db", "recall", "--project", "p", "search", "x"], {"--project"}, {"--db"}) == [
        "--db", "recall", "search", "--project", "p", "x",
    ]  # fmt: skip
    assert sink(["--project", "a", "--project", "b", "list"], {"--project"}) == [
        "list", "--project", "a", "--project", "b",
    ]  # fmt: skip
    # Nothing to move, no subcommand, or data after "--": left as written.
    for args in (["recall", "--workspace", "W"], ["--workspace", "W"], ["--", "--workspace", "W"],
                 ["--workspace"], []):  # fmt: skip
        assert sink(args, {"--workspace"}) == args


def test_summary_of_envelopes_lists_and_errors() -> None:
    text = render_summary(
        {"ok": True, "value": {"count": 4, "results": [{"score": 1, "id": "a"}] * 5, "x": None}}
    )
    assert text.splitlines() == [
        "count: 4", "results: 5", "  - id=a score=1", "  - id=a score=1", "  - id=a score=1",
        "  … 2 more", "x: -",
    ]  # fmt: skip
    assert render_summary({"ok": False, "error": {"code": "c", "message": "m"}}) == "error c: m\n"
    assert render_summary([1, 2]) == "items: 2\n  - 1\n  - 2\n"
    wrapped = render_summary({"results": [{"knowledge": {"id": "k1", "content": "c"}, "score": 3}]})
    assert wrapped == "results: 1\n  - score=3 knowledge.id=k1 knowledge.content=c\n"
    long = render_summary({"content": "word " * 200})
    assert len(long) <= 2 * 100 + len("content: ") + 1 and long.endswith("…\n")


def test_list_counts() -> None:
    assert list_counts(2, 5) == {"total": 5, "truncated": True}
    assert list_counts(5, 5) == {"total": 5, "truncated": False}
