"""What the command line adds around the library, run in process: defaults (the workspace
from the git top level), drafts on stdin, the template, warnings for discarded fields and
for a corpus higher up, remove by digest, ``--version`` and the bare command."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from dsh_test_support import gitcmd, in_process
from dsh_test_support.commands import error, ok

from .conftest import corpus_of

run_cli = in_process.runner("dsh-compound")


def test_capture_from_stdin_names_discarded_fields(make_draft: Any, workspace: Path) -> None:
    draft = make_draft(extra="x", notes=[1])
    draft["verification"]["by"] = "me"
    result = ok(
        run_cli(
            "capture",
            "--workspace",
            str(workspace),
            "--input",
            "-",
            input=json.dumps(draft),
            cwd=workspace,
        )
    )
    assert result["id"] == "login-timeout"
    assert result["warnings"] == [
        "draft fields not in schema 1 were discarded: 'extra', 'notes', 'verification.by'"
    ]
    assert (corpus_of(workspace) / "login-timeout.md").is_file()
    # Without unknown fields there is no warnings key (the earlier output is unchanged).
    clean = ok(
        run_cli(
            "capture",
            "--workspace",
            str(workspace),
            "--input",
            "-",
            input=json.dumps(make_draft(id="clean")),
            cwd=workspace,
        )
    )
    assert "warnings" not in clean


def test_stdin_draft_errors_change_nothing(make_draft: Any, workspace: Path) -> None:
    assert (
        error(
            run_cli(
                "capture",
                "--workspace",
                str(workspace),
                "--input",
                "-",
                input="{not json",
                cwd=workspace,
            )
        )["code"]
        == "invalid-draft"
    )
    big = json.dumps(make_draft(problem="x" * 40_000))
    assert (
        error(
            run_cli(
                "capture", "--workspace", str(workspace), "--input", "-", input=big, cwd=workspace
            )
        )["code"]
        == "draft-too-large"
    )
    assert not corpus_of(workspace).exists()


def test_template_is_a_valid_draft_once_filled(workspace: Path) -> None:
    template = ok(run_cli("template"))
    assert list(template) == [
        "id",
        "title",
        "tags",
        "problem",
        "rootCause",
        "resolution",
        "whenToUse",
        "verification",
        "files",
    ]
    template.update(id="from-template", files=["src/login.js"])
    result = ok(
        run_cli(
            "capture",
            "--workspace",
            str(workspace),
            "--input",
            "-",
            input=json.dumps(template),
            cwd=workspace,
        )
    )
    assert result["id"] == "from-template"
    assert "template" in run_cli("capture", "--help").stdout


def test_workspace_defaults_to_the_git_top_level(make_draft: Any, workspace: Path) -> None:
    gitcmd.init(workspace)
    ok(run_cli("capture", "--input", "-", input=json.dumps(make_draft()), cwd=workspace / "src"))
    assert (corpus_of(workspace) / "login-timeout.md").is_file()
    found = ok(run_cli("recall", "login timeout", cwd=workspace / "tests"))
    assert [r["id"] for r in found["results"]] == ["login-timeout"]
    assert ok(run_cli("check", cwd=workspace / "src"))["scanned"] == 1


def test_recall_in_a_subdirectory_warns_that_the_corpus_is_higher_up(
    make_draft: Any, workspace: Path
) -> None:
    ok(
        run_cli(
            "capture",
            "--workspace",
            str(workspace),
            "--input",
            "-",
            input=json.dumps(make_draft()),
            cwd=workspace,
        )
    )
    found = ok(run_cli("recall", "--workspace", str(workspace / "src"), "login"))
    assert found["results"] == []
    assert found["warnings"] == [
        f"no docs/solutions/dsh-compound in the workspace {workspace.resolve() / 'src'}, but "
        f"{workspace.resolve()} has one: pass --workspace {workspace.resolve()}"
    ]


def test_query_positional_or_option_but_not_two_different(make_draft: Any, workspace: Path) -> None:
    ok(
        run_cli(
            "capture",
            "--workspace",
            str(workspace),
            "--input",
            "-",
            input=json.dumps(make_draft()),
            cwd=workspace,
        )
    )
    by_position = ok(run_cli("recall", "--workspace", str(workspace), "login"))
    by_option = ok(run_cli("recall", "--workspace", str(workspace), "--query", "login"))
    assert by_position["results"] == by_option["results"] != []
    both = error(run_cli("recall", "--workspace", str(workspace), "a", "--query", "b"))
    assert both["code"] == "invalid-arguments"
    assert "--query" in both["message"]


def test_remove_is_compare_and_swap(make_draft: Any, workspace: Path) -> None:
    captured = ok(
        run_cli(
            "capture",
            "--workspace",
            str(workspace),
            "--input",
            "-",
            input=json.dumps(make_draft()),
            cwd=workspace,
        )
    )
    record = corpus_of(workspace) / "login-timeout.md"
    stale = "0" * 64
    lost = error(
        run_cli("remove", "--workspace", str(workspace), "--id", "login-timeout", "--digest", stale)
    )
    assert lost["code"] == "digest-mismatch"
    assert "inspect it again" in lost["message"]
    assert record.is_file()
    bad = error(
        run_cli(
            "remove", "--workspace", str(workspace), "--id", "login-timeout", "--digest", "nothex"
        )
    )
    assert bad["code"] == "invalid-digest"
    assert record.is_file()
    done = ok(
        run_cli(
            "remove",
            "--workspace",
            str(workspace),
            "--id",
            "login-timeout",
            "--digest",
            captured["digest"],
        )
    )
    assert done == {
        "id": "login-timeout",
        "path": str(record),
        "removed": True,
        "digest": captured["digest"],
    }
    assert not record.exists()
    assert not (corpus_of(workspace) / "login-timeout.lock").exists()
    again = error(
        run_cli(
            "remove",
            "--workspace",
            str(workspace),
            "--id",
            "login-timeout",
            "--digest",
            captured["digest"],
        )
    )
    assert again["code"] == "record-not-found"
    assert "to remove" in again["message"]


def test_remove_refuses_a_hard_linked_record(
    make_draft: Any, workspace: Path, tmp_path: Path
) -> None:
    captured = ok(
        run_cli(
            "capture",
            "--workspace",
            str(workspace),
            "--input",
            "-",
            input=json.dumps(make_draft()),
            cwd=workspace,
        )
    )
    record = corpus_of(workspace) / "login-timeout.md"
    os.link(record, tmp_path / "elsewhere.md")
    refused = error(
        run_cli(
            "remove",
            "--workspace",
            str(workspace),
            "--id",
            "login-timeout",
            "--digest",
            captured["digest"],
        )
    )
    assert refused["code"] == "hard-linked-record"
    assert record.is_file()


def test_version_and_bare_command() -> None:
    assert ok(run_cli("--version")) == {"name": "dsh-compound", "version": "0.1.0"}
    bare = run_cli()
    assert bare.returncode == 0
    assert bare.stdout.startswith("Usage: dsh-compound")
    for command in ("capture", "recall", "inspect", "check", "template", "remove"):
        assert "Example:" in run_cli(command, "--help").stdout, command
