"""dsh-knowledge's command-line conventions, run in process: canonical workspace scopes and
their defaults, positional or --query, total/truncated, update, add --jsonl, health --all,
a private database file, and messages that speak the command line's language."""

from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
from dsh_test_support import gitcmd, in_process

dsh_knowledge = in_process.runner("dsh-knowledge")


def run(
    *args: str, db: str | Path, cwd: Path | None = None, data: str | None = None
) -> subprocess.CompletedProcess[str]:
    return dsh_knowledge(*args, "--db", str(db), cwd=cwd, input=data)  # --db after


def ok(*args: str, db: str | Path, cwd: Path | None = None, data: str | None = None) -> Any:
    done = run(*args, db=db, cwd=cwd, data=data)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def error(*args: str, db: str | Path, cwd: Path | None = None) -> dict[str, str]:
    done = run(*args, db=db, cwd=cwd)
    assert done.returncode == 1, done.stdout
    assert done.stdout == ""
    return dict(json.loads(done.stderr)["error"])


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    gitcmd.init(root)
    gitcmd.commit_file(root, "app.py", "PORT = 8080\n", "init")
    return root


def test_workspace_dot_is_stored_canonical_and_matched_any_spelling(
    db: Path, project: Path
) -> None:
    item = ok(
        "add",
        "--workspace",
        ".",
        "--type",
        "fact",
        "--content",
        "port is 8080",
        db=db,
        cwd=project / "src",
    )
    assert item["scope"]["workspace"] == str((project / "src").resolve())
    for spelling in (str(project / "src") + "/", str(project / "src" / ".." / "src")):
        found = ok("retrieve", "port", "--workspace", spelling, db=db)
        assert [r["knowledge"]["id"] for r in found["results"]] == [item["id"]], spelling
    listed = ok("list", "--workspace", str(project / "src") + "/", db=db)
    assert [i["id"] for i in listed["items"]] == [item["id"]]
    # A scope that is not a directory is kept as written.
    named = ok("add", "--workspace", "acme-monorepo", "--type", "fact", "--content", "x", db=db)
    assert named["scope"]["workspace"] == "acme-monorepo"


def test_workspace_and_repo_default_to_the_git_top_level(db: str, project: Path) -> None:
    evidence = json.dumps({"type": "file", "source": "app.py"})
    item = ok(
        "add",
        "--type",
        "fact",
        "--content",
        "the port is 8080",
        "--evidence",
        evidence,
        db=db,
        cwd=project / "src",
    )
    assert item["scope"]["workspace"] == str(project.resolve())
    # --repo defaulted to the workspace: provenance was captured from HEAD.
    assert item["evidence"][0]["gitProvenance"]["path"] == "app.py"
    assert item["provenanceCapture"]["captured"] == 1
    found = ok("retrieve", "port", db=db, cwd=project / "src")
    assert [r["knowledge"]["id"] for r in found["results"]] == [item["id"]]
    fresh = ok("freshness", item["id"], db=db, cwd=project / "src")
    assert fresh["status"] == "current"
    health = ok("health", item["id"], db=db, cwd=project)
    assert health["results"][0]["knowledgeId"] == item["id"]


def test_retrieve_warns_when_the_knowledge_is_stored_higher_up(db: str, project: Path) -> None:
    ok("add", "--workspace", str(project), "--type", "fact", "--content", "port 8080", db=db)
    found = ok("retrieve", "port", "--workspace", str(project / "src"), db=db)
    assert found["results"] == []
    assert found["warnings"] == [
        f"no knowledge is stored for the workspace {(project / 'src').resolve()}, but "
        f"{project.resolve()} has some: pass --workspace {project.resolve()}"
    ]


def test_query_spellings_total_and_truncated(db: str, project: Path) -> None:
    for n in range(3):
        ok("add", "--workspace", str(project), "--type", "fact", "--content", f"port {n}", db=db)
    searched = ok("search", "--query", "port", "--limit", "2", db=db)
    assert len(searched["items"]) == 2
    assert (searched["total"], searched["truncated"]) == (3, True)
    assert ok("search", "port", db=db)["truncated"] is False
    got = ok("retrieve", "--query", "port", "--workspace", str(project), "--limit", "2", db=db)
    assert len(got["results"]) == 2 and got["truncated"] is True
    assert got["total"] == 3
    got = ok("retrieve", "port", "--workspace", str(project), "--limit", "3", db=db)
    assert len(got["results"]) == 3 and got["truncated"] is False
    assert got["total"] == 3
    none = ok("retrieve", "kubernetes", "--workspace", str(project), db=db)
    assert (none["results"], none["total"], none["truncated"]) == ([], 0, False)
    both = error("search", "a", "--query", "b", db=db)
    assert both["code"] == "invalid-arguments"


def test_review_counts_every_candidate_and_takes_workspace_dot(db: str, project: Path) -> None:
    for n in range(3):
        ok("add", "--workspace", str(project), "--type", "fact", "--content", f"port {n}", db=db)
    verified = ok("add", "--workspace", str(project), "--type", "fact", "--content", "x", db=db)
    ok("verify", verified["id"], db=db)
    cut = ok("review", "--workspace", ".", "--limit", "2", db=db, cwd=project)
    assert len(cut["candidates"]) == 2
    assert (cut["total"], cut["truncated"]) == (3, True)  # the verified item is no candidate
    whole = ok("review", "--workspace", str(project) + "/", db=db)
    assert (len(whole["candidates"]), whole["total"], whole["truncated"]) == (3, 3, False)
    assert error("review", "--limit", "0", db=db)["code"] == "invalid-input"


def test_update_content_and_type(db: str, project: Path) -> None:
    item = ok("add", "--workspace", str(project), "--type", "fact", "--content", "old", db=db)
    changed = ok("update", item["id"], "--content", "new text", "--type", "decision", db=db)
    assert (changed["content"], changed["type"]) == ("new text", "decision")
    assert changed["updatedAt"] > item["updatedAt"]
    assert error("update", item["id"], db=db)["code"] == "invalid-arguments"
    assert error("update", item["id"], "--type", "rumour", db=db)["code"] == "invalid-input"
    assert ok("get", item["id"], db=db)["type"] == "decision"


def test_add_jsonl_is_one_transaction(db: str, project: Path, tmp_path: Path) -> None:
    lines = [{"type": "fact", "content": f"fact {n}"} for n in range(50)]
    good = tmp_path / "items.jsonl"
    good.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    report = ok("add", "--workspace", str(project), "--jsonl", str(good), db=db)
    assert report["created"] == 50 and len(set(report["ids"])) == 50
    assert len(ok("list", "--workspace", str(project), db=db)["items"]) == 50
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps({"type": "fact", "content": "fine"})
        + "\n"
        + json.dumps({"type": "rumour", "content": "bad"})
        + "\n"
    )
    assert error("add", "--workspace", str(project), "--jsonl", str(bad), db=db)["code"] == (
        "invalid-input"
    )
    assert len(ok("list", "--workspace", str(project), db=db)["items"]) == 50  # nothing added
    unknown = tmp_path / "unknown.jsonl"
    unknown.write_text(json.dumps({"type": "fact", "content": "x", "tags": []}) + "\n")
    message = error("add", "--workspace", str(project), "--jsonl", str(unknown), db=db)
    assert "line 1" in message["message"] and "tags" in message["message"]
    piped = ok(
        "add",
        "--workspace",
        str(project),
        "--jsonl",
        "-",
        db=db,
        data=json.dumps({"type": "lesson", "content": "from stdin"}),
    )
    assert piped["created"] == 1


def test_health_all_in_batches_with_progress(db: str, project: Path) -> None:
    for n in range(20):
        ok("add", "--workspace", str(project), "--type", "fact", "--content", f"f{n}", db=db)
    done = run("health", "--all", "--workspace", str(project), db=db)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["total"] == 20 and len(report["results"]) == 20
    assert done.stderr.splitlines() == [
        "health: 16/20 items checked",
        "health: 20/20 items checked",
    ]
    assert error("health", db=db)["code"] == "invalid-arguments"


def test_database_is_private(db_path: Path) -> None:
    ok("list", db=db_path)
    assert stat.S_IMODE(db_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(db_path.parent.stat().st_mode) == 0o700


def test_supersede_refusal_speaks_cli(db: str, project: Path) -> None:
    old = ok("add", "--workspace", str(project), "--type", "fact", "--content", "a", db=db)
    new = ok("add", "--workspace", str(project), "--type", "fact", "--content", "b", db=db)
    ok("verify", new["id"], db=db)
    refused = error("supersede", old["id"], "--by", new["id"], db=db)
    assert "supersede(" not in refused["message"]
    assert "dsh-knowledge verify" in refused["message"]


def test_version_bare_and_examples(db_path: Path) -> None:
    db = db_path
    assert ok("--version", db=db) == {"name": "dsh-knowledge", "version": "0.1.0"}
    bare = dsh_knowledge()
    assert bare.returncode == 0 and bare.stdout.startswith("Usage: dsh-knowledge")
    for command in (
        "add",
        "get",
        "verify",
        "archive",
        "supersede",
        "update",
        "list",
        "search",
        "retrieve",
        "freshness",
        "health",
    ):
        helped = dsh_knowledge(command, "--help")
        assert "Example" in helped.stdout, command


def test_list_says_how_many_match_its_filters_in_all(db: str, project: Path) -> None:
    for n in range(3):
        ok("add", "--workspace", str(project), "--type", "fact", "--content", f"port {n}", db=db)
    ok("add", "--workspace", str(project), "--type", "decision", "--content", "use tabs", db=db)
    cut = ok("list", "--type", "fact", "--limit", "2", db=db)
    assert (len(cut["items"]), cut["total"], cut["truncated"]) == (2, 3, True)
    whole = ok("list", "--type", "fact", db=db)
    assert (len(whole["items"]), whole["total"], whole["truncated"]) == (3, 3, False)
    assert [i["id"] for i in cut["items"]] == [i["id"] for i in whole["items"][:2]]
    everything = ok("list", "--limit", "10", db=db)
    assert (everything["total"], everything["truncated"]) == (4, False)
