"""Every command's stdout/stderr JSON and exit codes, run in process (what the ``dsh-memory``
process prints: dsh_test_support.in_process)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from dsh_test_support import in_process

dsh_memory = in_process.runner("dsh-memory")


def ok(*args: str) -> Any:
    result = dsh_memory(*args)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    envelope = json.loads(result.stdout)
    assert envelope["ok"] is True
    return envelope["value"]


def fails(code: str, *args: str) -> None:
    result = dsh_memory(*args)
    assert result.returncode == 1
    assert result.stdout == ""
    envelope = json.loads(result.stderr)
    assert envelope["ok"] is False
    assert envelope["error"]["code"] == code
    assert envelope["error"]["message"]


@pytest.fixture
def cli_root(dsh_home: Path) -> Path:
    root = dsh_home / "storages" / "memory"
    ok("init")
    return root


def test_cli_init_creates_default_root_and_is_idempotent(dsh_home: Path) -> None:
    first = ok("init")
    assert first["created"] is True
    assert first["root"] == str(dsh_home / "storages" / "memory")
    assert ok("init")["headCommit"] == first["headCommit"]


def test_cli_root_option_overrides_default(tmp_path: Path) -> None:
    assert ok("--root", str(tmp_path / "other"), "init")["root"] == str(tmp_path / "other")


def test_cli_settings_round_trip() -> None:
    assert ok("get-settings") == {"enabled": True}
    assert ok("set-enabled", "--enabled", "false") == {"enabled": False}
    assert ok("get-settings") == {"enabled": False}


def test_cli_set_enabled_maybe_is_invalid_request_not_usage_error() -> None:
    fails("settings-invalid-request", "set-enabled", "--enabled", "maybe")


def test_cli_status_and_health(cli_root: Path) -> None:
    assert ok("status")["empty"] is True
    assert ok("health")["needsManualRecovery"] is False


def test_cli_status_of_missing_root_fails_on_stderr(tmp_path: Path) -> None:
    fails("repo-unavailable", "--root", str(tmp_path / "missing"), "status")


def test_cli_clear_needs_confirmation(cli_root: Path) -> None:
    fails("clear-failed", "clear")
    fails("clear-failed", "clear", "--confirmation", "yes")


def test_cli_migrate_clear_runs_rollback(cli_root: Path) -> None:
    (cli_root / "handbook" / "old.md").write_text("body\n")
    assert ok("legacy-records")["count"] == 1
    assert ok("migrate-legacy", "--dry-run", "true")["status"] == "pending"
    assert ok("migrate-legacy", "--dry-run", "false")["status"] == "applied"
    cleared = ok("clear", "--confirmation", "DELETE_MEMORY")
    assert cleared["clearedFileCount"] == 1
    runs = ok("runs", "--operation", "clear", "--status", "applied", "--limit", "5")["runs"]
    rolled = ok("rollback", "--run-id", runs[0]["run_id"], "--confirmation", "ROLLBACK_MEMORY")
    assert rolled["status"] == "rolled_back"
    assert (cli_root / "handbook" / "old.md").read_text().endswith("body\n")
    # Three runs now (migrate, clear, rollback), newest first: total and truncated say what
    # the limit hid, with and without the filters.
    newest = ok("runs", "--limit", "1")
    assert [run["operation"] for run in newest["runs"]] == ["rollback"]
    assert (newest["total"], newest["truncated"]) == (3, True)
    every = ok("runs")
    assert (len(every["runs"]), every["total"], every["truncated"]) == (3, 3, False)
    # The limit applies before the filters (the earlier tool's rule): the clear run is
    # second, so a limit of 1 shows none of it, and total counts it.
    hidden = ok("runs", "--limit", "1", "--operation", "clear")
    assert (hidden["runs"], hidden["total"], hidden["truncated"]) == ([], 1, True)


def test_cli_migrate_dry_run_missing_is_invalid_request(cli_root: Path) -> None:
    fails("migration-invalid-request", "migrate-legacy")


def test_cli_runs_bad_limit_is_invalid_request(cli_root: Path) -> None:
    fails("runs-invalid-request", "runs", "--limit", "abc")


def test_cli_rollback_wrong_confirmation(cli_root: Path) -> None:
    fails("rollback-invalid-confirmation", "rollback", "--run-id", "x", "--confirmation", "no")


def test_cli_search_and_context(cli_root: Path) -> None:
    (cli_root / "handbook" / "cache.md").write_text(
        "---\nschema_version: 1\nid: project/cache\ntype: decision\n---\n"
        "缓存雪崩的预防: jitter TTLs.\n"
    )
    found = ok("search", "--query", "缓存雪崩")
    assert found["results"][0]["path"] == "handbook/cache.md"
    records = ok("context", "--query", "jitter", "--limit", "3")["records"]
    assert records[0]["id"] == "project/cache"


def test_cli_search_without_query_is_invalid_request(cli_root: Path) -> None:
    fails("search-invalid-request", "search")


def test_cli_context_limit_21_is_invalid_request(cli_root: Path) -> None:
    fails("context-invalid-request", "context", "--limit", "21")


def test_cli_prompt_section_prints_text(cli_root: Path) -> None:
    (cli_root / "summary.md").write_text("# likes tabs\n")
    result = dsh_memory("prompt-section")
    assert result.returncode == 0
    assert "[DPSK MEMORY: UNTRUSTED CONTEXT]" in result.stdout
    assert "# likes tabs" in result.stdout


def test_cli_prompt_section_prints_nothing_when_disabled(cli_root: Path) -> None:
    ok("set-enabled", "--enabled", "false")
    result = dsh_memory("prompt-section")
    assert (result.returncode, result.stdout) == (0, "")


def test_cli_unknown_option_is_json_usage_error() -> None:
    fails("invalid-arguments", "status", "--bogus")


def test_cli_every_command_has_help() -> None:
    for command in (
        "init",
        "get-settings",
        "set-enabled",
        "status",
        "health",
        "clear",
        "legacy-records",
        "migrate-legacy",
        "runs",
        "rollback",
        "search",
        "context",
        "prompt-section",
    ):
        result = dsh_memory(command, "--help")
        assert result.returncode == 0
        assert "Usage" in result.stdout
