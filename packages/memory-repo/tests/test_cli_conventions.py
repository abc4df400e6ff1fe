"""dsh-memory's command-line conventions, shared with every product (run in process): --root
after the subcommand, the init hint, --dry-run/--apply flags, positional queries, option
names in messages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dsh_test_support import in_process
from dsh_test_support.gitcmd import commit_all


def write(root: Path, relative: str, text: str) -> None:
    (root / relative).parent.mkdir(parents=True, exist_ok=True)
    (root / relative).write_text(text, encoding="utf-8")


run = in_process.runner("dsh-memory")


def ok(*args: str) -> Any:
    done = run(*args)
    assert done.returncode == 0, done.stderr
    envelope = json.loads(done.stdout)
    assert envelope["ok"] is True
    return envelope["value"]


def fail(*args: str) -> dict[str, str]:
    done = run(*args)
    assert done.returncode == 1, done.stdout
    assert done.stdout == ""
    envelope = json.loads(done.stderr)
    assert envelope["ok"] is False
    return dict(envelope["error"])


def test_root_before_or_after_the_subcommand(memory_root: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    ok("--root", str(other), "init")
    before = ok("--root", str(other), "status")
    after = ok("status", "--root", str(other))
    assert before == after
    assert ok("status", f"--root={other}") == before


def test_missing_store_says_how_to_create_it(tmp_path: Path) -> None:
    missing = fail("status", "--root", str(tmp_path / "nonexistent"))
    assert missing["code"] == "repo-unavailable"
    assert missing["message"].endswith("run dsh-memory init (with the same --root) to create it")
    (tmp_path / "empty").mkdir()
    empty = fail("--root", str(tmp_path / "empty"), "search", "x")
    assert "run dsh-memory init" in empty["message"]


def test_dry_run_and_apply_flags(memory_root: Path) -> None:
    write(memory_root, "handbook/old.md", "body\n")
    commit_all(memory_root)
    planned = ok("migrate-legacy", "--dry-run")
    assert planned["dryRun"] is True and planned["legacyCount"] == 1
    assert ok("migrate-legacy", "--dry-run", "true")["dryRun"] is True
    assert ok("legacy-records")  # still legacy after both plans
    applied = ok("migrate-legacy", "--apply")
    assert applied["dryRun"] is False and applied["migratedCount"] == 1
    missing = fail("migrate-legacy")
    assert "--dry-run" in missing["message"] and "dryRun" not in missing["message"]


def test_query_positional_or_option(memory_root: Path) -> None:
    write(
        memory_root,
        "handbook/deploy.md",
        "---\nschema_version: 1\nid: project/deploy\ntype: decision\n---\n"
        "the release checklist lives here\n",
    )
    commit_all(memory_root)
    by_position = ok("search", "checklist")
    by_option = ok("search", "--query", "checklist")
    assert by_position["results"] == by_option["results"] != []
    assert ok("context", "checklist")["count"] >= 1
    assert fail("search", "a", "--query", "b")["code"] == "invalid-arguments"


def test_version_bare_help_and_examples() -> None:
    done = run("--version")
    assert json.loads(done.stdout) == {"name": "dsh-memory", "version": "0.1.0"}
    bare = run()
    assert bare.returncode == 0 and bare.stdout.startswith("Usage: dsh-memory")
    for command in ("init", "status", "health", "search", "context", "migrate-legacy", "runs"):
        assert "Example:" in run(command, "--help").stdout, command


def test_set_enabled_as_flags(tmp_path: Path) -> None:
    assert ok("set-enabled", "--disabled")["enabled"] is False
    assert ok("get-settings")["enabled"] is False
    assert ok("set-enabled", "--enabled")["enabled"] is True
    assert ok("set-enabled", "--enabled", "false")["enabled"] is False


def test_messages_name_the_options_not_the_api_fields(memory_root: Path) -> None:
    # Through the fast path (context, search) and the parser (the rest) alike.
    fails = {
        ("context", "--limit", "0"): "--limit must be an integer from 1 to 20",
        ("runs", "--limit", "0"): "--limit must be an integer from 1 to 1000",
        ("search",): "the query (QUERY or --query) must be a non-blank string",
        ("set-enabled", "--enabled", "maybe"): "--enabled must be true or false",
        ("clear", "--confirmation", "yes"): "clear needs --confirmation DELETE_MEMORY",
        ("rollback", "--run-id", "x"): "rollback needs --confirmation ROLLBACK_MEMORY",
        ("discard-preview", "--preview-id", "x"): (
            "--preview-id must be YYYYMMDDTHHMMSSZ-<8 hex digits>"
        ),
    }
    for args, message in fails.items():
        assert fail(*args)["message"] == message, args
