"""Every command's stdout JSON, stderr JSON errors and exit codes, run in process (what the
``dsh-knowledge`` process prints: dsh_test_support.in_process)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from dsh_test_support import gitcmd, in_process

from .backend_helpers import external_write


def run(*args: str, db: str | Path | None = None) -> subprocess.CompletedProcess[str]:
    options = ["--db", str(db)] if db is not None else []
    return in_process.run("dsh-knowledge", *options, *args)


def ok(*args: str, db: str | Path | None = None) -> Any:
    result = run(*args, db=db)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def error(*args: str, db: str | Path | None = None) -> dict[str, str]:
    result = run(*args, db=db)
    assert result.returncode == 1
    assert result.stdout == ""
    return dict(json.loads(result.stderr)["error"])


def add(db: str, content: str, *extra: str) -> dict[str, Any]:
    return dict(
        ok("add", "--workspace", "/w", "--type", "fact", "--content", content, *extra, db=db)
    )


def test_add_prints_the_created_item_with_default_evidence_timestamp(db: str) -> None:
    evidence = '{"type": "file", "source": "src/router.ts", "locator": "L10"}'
    item = add(db, "Use ResponseRouter", "--project", "api", "--evidence", evidence)
    assert item["scope"] == {"workspace": "/w", "project": "api"}
    assert item["status"] == "candidate"
    assert item["evidence"][0]["source"] == "src/router.ts"
    assert item["evidence"][0]["timestamp"].endswith("Z")


def test_add_without_db_uses_dsh_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "dsh-home"))  # not HOME's default .dsh
    ok("add", "--workspace", "/w", "--type", "fact", "--content", "home default")
    assert (tmp_path / "dsh-home" / "knowledge" / "knowledge.sqlite").is_file()


def test_blank_dsh_home_falls_back_to_home_dot_dsh(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DSH_HOME", "  ")
    ok("add", "--workspace", "/w", "--type", "fact", "--content", "home fallback")
    assert (isolated_home / ".dsh" / "knowledge" / "knowledge.sqlite").is_file()


def test_add_rejects_bad_evidence_json(db: str) -> None:
    assert (
        error(
            "add",
            "--workspace",
            "/w",
            "--type",
            "fact",
            "--content",
            "x",
            "--evidence",
            "{nope",
            db=db,
        )["code"]
        == "invalid-json"
    )
    assert (
        error(
            "add",
            "--workspace",
            "/w",
            "--type",
            "fact",
            "--content",
            "x",
            "--evidence",
            "[1]",
            db=db,
        )["code"]
        == "invalid-input"
    )


def test_add_rejects_an_invalid_type_without_writing(db: str) -> None:
    assert (
        error("add", "--workspace", "/w", "--type", "opinion", "--content", "x", db=db)["code"]
        == "invalid-input"
    )
    assert ok("list", db=db)["items"] == []


def test_get_verify_archive(db: str) -> None:
    item = add(db, "lifecycle")
    assert ok("get", item["id"], db=db) == item
    assert ok("verify", item["id"], db=db)["status"] == "verified"
    assert ok("archive", item["id"], db=db)["status"] == "archived"


@pytest.mark.parametrize("command", ["get", "verify", "archive"])
def test_unknown_id_is_not_found(db: str, command: str) -> None:
    assert error(command, "missing-id", db=db) == {
        "code": "not-found",
        "message": "Knowledge item not found: missing-id",
    }


def test_supersede(db: str) -> None:
    old, new = add(db, "old rule"), add(db, "new rule")
    ok("verify", old["id"], db=db)
    ok("verify", new["id"], db=db)
    result = ok("supersede", old["id"], "--by", new["id"], db=db)
    assert result["status"] == "superseded"
    assert result["replacementId"] == new["id"]


def test_supersede_of_a_candidate_is_an_invalid_transition(db: str) -> None:
    old, new = add(db, "old rule"), add(db, "new rule")
    assert error("supersede", old["id"], "--by", new["id"], db=db)["code"] == "invalid-transition"


def test_list_filters(db: str) -> None:
    wide = add(db, "wide")
    scoped = add(db, "scoped", "--project", "api")
    assert [i["id"] for i in ok("list", "--workspace-wide", db=db)["items"]] == [wide["id"]]
    assert [i["id"] for i in ok("list", "--project", "api", db=db)["items"]] == [scoped["id"]]
    assert len(ok("list", "--workspace", "/w", "--limit", "1", db=db)["items"]) == 1
    assert ok("list", "--origin", "automatic", db=db)["items"] == []
    assert ok("list", "--status", "verified", "--type", "fact", db=db)["items"] == []


def test_list_project_and_workspace_wide_conflict(db: str) -> None:
    assert error("list", "--project", "a", "--workspace-wide", db=db)["code"] == "invalid-input"


def test_list_bad_limit_is_an_error(db: str) -> None:
    assert error("list", "--limit", "0", db=db)["code"] == "invalid-input"
    assert error("list", "--limit", "many", db=db)["code"] == "invalid-arguments"


def test_search_is_literal(db: str) -> None:
    hit = add(db, "coverage 100% on main")
    add(db, "coverage 1000 on main")
    assert [i["id"] for i in ok("search", "100%", "--workspace", "/w", db=db)["items"]] == [
        hit["id"]
    ]


def test_retrieve_ranks_with_explanations(db: str) -> None:
    item = add(db, "连接池耗尽导致超时")
    add(db, "unrelated text")
    ok("verify", item["id"], db=db)
    result = ok(
        "retrieve",
        "数据库连接池",
        "--workspace",
        "/w",
        "--prefer",
        "fact",
        "--status",
        "verified",
        "--limit",
        "5",
        db=db,
    )
    [ranked] = result["results"]
    assert ranked["knowledge"]["id"] == item["id"]
    assert ranked["explanation"]["matchedTokens"] == ["连接", "接池"]
    assert ranked["explanation"]["contributions"]["type"] == 10


def test_retrieve_requires_a_query(db: str) -> None:
    # The workspace defaults to the current directory's (see test_cli_defaults.py).
    assert error("retrieve", db=db)["code"] == "invalid-arguments"


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str]:
    repo = gitcmd.init(tmp_path / "repo")
    return repo, gitcmd.commit_file(repo, "app.py", "print('hi')\n", "init")


def _provenanced(db: str, head: str) -> dict[str, Any]:
    evidence = json.dumps(
        {"type": "file", "source": "app.py", "gitProvenance": {"commit": head, "path": "app.py"}}
    )
    return add(db, "app prints hi", "--evidence", evidence)


def test_freshness_reports_current_then_stale(db: str, repo: tuple[Path, str]) -> None:
    directory, head = repo
    item = _provenanced(db, head)
    report = ok("freshness", item["id"], "--repo", str(directory), db=db)
    assert report["knowledgeId"] == item["id"]
    assert report["status"] == "current"
    (directory / "app.py").write_text("print('bye')\n")
    assert ok("freshness", item["id"], "--repo", str(directory), db=db)["status"] == (
        "potentially_stale"
    )


def test_add_with_repo_captures_provenance_for_clean_committed_files(
    db: Path, repo: tuple[Path, str]
) -> None:
    directory, head = repo
    (directory / "draft.py").write_text("not committed\n")
    item = add(
        db,
        "app prints hi",
        "--evidence",
        json.dumps({"type": "file", "source": "app.py"}),
        "--evidence",
        json.dumps({"type": "file", "source": "draft.py"}),
        "--repo",
        str(directory),
    )
    assert item["evidence"][0]["gitProvenance"] == {"commit": head, "path": "app.py"}
    assert "gitProvenance" not in item["evidence"][1]
    assert item["provenanceCapture"]["captured"] == 1
    assert item["provenanceCapture"]["warnings"][0]["evidenceIndex"] == 1
    stored = ok("get", item["id"], db=db)
    assert stored["evidence"][0]["gitProvenance"]["commit"] == head
    assert "provenanceCapture" not in stored


def test_freshness_unknown_id_is_not_found(db: str, repo: tuple[Path, str]) -> None:
    assert error("freshness", "nope", "--repo", str(repo[0]), db=db)["code"] == "not-found"


def test_health_with_guidance(db: str, repo: tuple[Path, str]) -> None:
    directory, head = repo
    first = _provenanced(db, head)
    second = add(db, "no evidence at all")
    result = ok("health", first["id"], second["id"], "--repo", str(directory), "--guidance", db=db)
    statuses = [(r["knowledgeId"], r["status"]) for r in result["results"]]
    assert statuses == [(first["id"], "current"), (second["id"], "unverifiable")]
    assert all("guidance" in r for r in result["results"])


def test_health_without_guidance_has_no_guidance(db: str, repo: tuple[Path, str]) -> None:
    directory, head = repo
    item = _provenanced(db, head)
    [result] = ok("health", item["id"], "--repo", str(directory), db=db)["results"]
    assert "guidance" not in result


def test_health_needs_at_least_one_id(db: str, repo: tuple[Path, str]) -> None:
    assert error("health", "--repo", str(repo[0]), db=db)["code"] == "invalid-arguments"


def test_newer_database_is_refused_by_every_command(db: str, backend: str) -> None:
    add(db, "exists")
    if backend == "sqlite":
        external_write(db, ("PRAGMA user_version = 9", ()))
    else:
        external_write(
            db,
            (
                "INSERT INTO dshpy_schema_migrations (version, name, applied_at) "
                "VALUES (9, 'from-the-future', '2030-01-01T00:00:00.000Z')",
                (),
            ),
        )
    assert error("list", db=db)["code"] == "schema-too-new"


@pytest.mark.parametrize(
    "command",
    [
        "add",
        "get",
        "verify",
        "archive",
        "supersede",
        "list",
        "search",
        "retrieve",
        "freshness",
        "health",
    ],
)
def test_every_command_has_help(command: str) -> None:
    result = run(command, "--help")
    assert result.returncode == 0
    assert "Usage" in result.stdout
