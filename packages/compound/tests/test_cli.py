"""Every command's JSON out, JSON errors and exit codes, run in process (what a process
prints); the installed console script, and what starting a command imports, as processes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from dsh_test_support import commands, in_process
from dsh_test_support.commands import error, ok

run_cli = in_process.runner("dsh-compound")


def test_capture_recall_inspect_check_through_the_cli(
    workspace: Path, write_json: Any, make_draft: Any
) -> None:
    draft_path = write_json(workspace / "draft.json", make_draft(rootCause="数据库连接池耗尽"))
    captured = ok(run_cli("capture", "--workspace", str(workspace), "--input", str(draft_path)))
    assert captured["contentStatus"] == "consistent"
    recalled = ok(run_cli("recall", "--workspace", str(workspace), "--query", "连接池 timeout"))
    assert recalled["results"][0]["digest"] == captured["digest"]
    inspected = ok(run_cli("inspect", "--workspace", str(workspace), "--id", "login-timeout"))
    assert inspected["metadata"] == captured["metadata"]
    checked = ok(run_cli("check", "--workspace", str(workspace)))
    assert checked["unchangedConsistent"]["ids"] == ["login-timeout"]


def test_capture_replace_through_the_cli(workspace: Path, write_json: Any, make_draft: Any) -> None:
    draft_path = write_json(workspace / "draft.json", make_draft())
    first = ok(run_cli("capture", "--workspace", str(workspace), "--input", str(draft_path)))
    again = error(run_cli("capture", "--workspace", str(workspace), "--input", str(draft_path)))
    assert again["code"] == "record-exists"
    write_json(draft_path, make_draft(title="Updated"))
    args = ["--workspace", str(workspace), "--input", str(draft_path)]
    second = ok(run_cli("capture", *args, "--replace", first["digest"]))
    assert second["metadata"]["title"] == "Updated"
    stale = error(run_cli("capture", *args, "--replace", first["digest"]))
    assert stale["code"] == "digest-mismatch"


def test_relative_input_is_resolved_from_the_current_directory(
    workspace: Path, write_json: Any, make_draft: Any
) -> None:
    write_json(workspace / "draft.json", make_draft())
    result = run_cli("capture", "--workspace", ".", "--input", "draft.json", cwd=workspace)
    assert ok(result)["id"] == "login-timeout"


@pytest.mark.parametrize("limit", ["11", "0", "abc"])
def test_recall_limit_out_of_range_is_a_json_error(workspace: Path, limit: str) -> None:
    result = run_cli("recall", "--workspace", str(workspace), "--query", "x", "--limit", limit)
    assert error(result)["code"] == "invalid-limit"


@pytest.mark.parametrize(
    "args",
    [
        ["recall", "--workspace", "."],
        ["recall", "a", "--query", "b"],
        ["capture", "--workspace", "."],
        ["recall", "--workspace", ".", "--query", "x", "--bogus"],
        ["nonexistent-command"],
    ],
)
def test_argument_errors_are_json_with_exit_1(args: list[str]) -> None:
    assert error(run_cli(*args))["code"] == "invalid-arguments"


def test_library_errors_keep_their_codes(workspace: Path) -> None:
    assert error(run_cli("inspect", "--workspace", str(workspace), "--id", "Nope"))["code"] == (
        "invalid-id"
    )
    assert error(run_cli("inspect", "--workspace", str(workspace), "--id", "nope"))["code"] == (
        "record-not-found"
    )
    missing = str(workspace / "absent")
    assert error(run_cli("check", "--workspace", missing))["code"] == "invalid-workspace"
    query = "q" * 501
    assert error(run_cli("recall", "--workspace", str(workspace), "--query", query))["code"] == (
        "invalid-query"
    )


def test_bad_draft_through_the_cli_changes_nothing(
    workspace: Path, write_json: Any, make_draft: Any
) -> None:
    draft_path = write_json(workspace / "draft.json", make_draft(files=["../x"]))
    result = run_cli("capture", "--workspace", str(workspace), "--input", str(draft_path))
    assert error(result)["code"] == "invalid-path"
    assert not (workspace / "docs").exists()


@pytest.mark.parametrize("command", [[], ["capture"], ["recall"], ["inspect"], ["check"]])
def test_help_is_printed_for_every_command(command: list[str]) -> None:
    result = run_cli(*command, "--help")
    assert result.returncode == 0
    assert "--workspace" in result.stdout or "capture" in result.stdout
    assert "Usage" in result.stdout


def test_console_script_is_installed(workspace: Path) -> None:
    result = commands.run("dsh-compound", "recall", "--workspace", str(workspace), "--query", "x")
    assert json.loads(result.stdout)["results"] == []


def test_cli_start_up_does_not_load_icu_or_the_library() -> None:
    probe = (
        "import sys, dsh_compound.cli; "
        "print(sorted(m for m in ('icu', 'dsh_compound.retrieval', 'dsh_compound.writing') "
        "if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_inspect_and_check_do_not_load_icu(workspace: Path, write_record: Any) -> None:
    write_record(workspace)
    probe = (
        "import sys; from dsh_compound import inspect, check; "
        f"inspect({str(workspace)!r}, 'login-timeout'); check({str(workspace)!r}); "
        "print('icu' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"
