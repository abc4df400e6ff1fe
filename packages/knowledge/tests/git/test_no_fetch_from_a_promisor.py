"""No dsh-knowledge command fetches a missing object from a partial clone's promisor remote.

Looking up an object the repository lacks makes plain git lazily fetch it from the promisor
remote, here ``ext::<command>``, i.e. run the command. Every dsh-knowledge command that
looks objects up (freshness and health on a commit we do not have, a HEAD naming a missing
commit, provenance capture) runs as the installed console script - a fresh process each,
nothing remembered from an earlier lookup - against a repository with such a remote as
real config; the command's marker must never appear.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from dsh_test_support import commands
from dsh_test_support.gitcmd import git

if TYPE_CHECKING:
    from .conftest import Repo

UNKNOWN = "0123456789abcdef0123456789abcdef01234567"


def plant(repo: Repo, marker: Path) -> None:
    repo.git("config", "extensions.partialClone", "origin")
    repo.git("config", "remote.origin.promisor", "true")
    repo.git("config", "remote.origin.url", f"ext::sh -c touch% {marker}")
    repo.git("config", "protocol.ext.allow", "always")


def cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return commands.run("dsh-knowledge", "--db", str(db), *args)


def add_item(db: Path, repo: Repo, commit: str, path: str = "src/app.py") -> str:
    evidence = {"type": "file", "source": path, "gitProvenance": {"commit": commit, "path": path}}
    added = cli(
        db,
        "add",
        "--workspace",
        str(repo.path),
        "--type",
        "fact",
        "--content",
        "The app prints hello.",
        "--evidence",
        json.dumps(evidence),
    )
    assert added.returncode == 0, added.stderr
    return str(json.loads(added.stdout)["id"])


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "MARKER"


def test_the_planted_promisor_command_runs_under_plain_git(repo: Repo, marker: Path) -> None:
    # Proves the fixture: the same lookup our commands make runs the command under plain git.
    plant(repo, marker)
    git(repo.path, "cat-file", "--batch-check", input=f"{UNKNOWN}^{{commit}}\n", check=False)
    assert marker.exists()


def test_freshness_of_an_unknown_commit_runs_nothing(
    repo: Repo, marker: Path, tmp_path: Path
) -> None:
    db = tmp_path / "kb.sqlite"
    item = add_item(db, repo, UNKNOWN)
    plant(repo, marker)
    fresh = cli(db, "freshness", item, "--repo", str(repo.path))
    assert fresh.returncode == 0, fresh.stderr
    report = json.loads(fresh.stdout)
    assert report["status"] == "unverifiable"
    assert report["evidence"][0]["reason"] == "missing_commit"
    assert not marker.exists()


def test_health_of_an_unknown_commit_runs_nothing(repo: Repo, marker: Path, tmp_path: Path) -> None:
    db = tmp_path / "kb.sqlite"
    unknown = add_item(db, repo, UNKNOWN)
    known = add_item(db, repo, repo.head())
    plant(repo, marker)
    health = cli(db, "health", unknown, known, "--repo", str(repo.path), "--guidance")
    assert health.returncode == 0, health.stderr
    first, second = json.loads(health.stdout)["results"]
    assert first["reasons"] == ["missing_commit"]
    assert second["status"] == "current"
    assert not marker.exists()


def test_head_naming_a_missing_commit_runs_nothing(
    repo: Repo, marker: Path, tmp_path: Path
) -> None:
    # HEAD itself is looked up first: a branch ref pointing at an object we lack.
    db = tmp_path / "kb.sqlite"
    item = add_item(db, repo, repo.head())
    plant(repo, marker)
    (repo.path / ".git" / "refs" / "heads" / "main").write_text(UNKNOWN + "\n")
    for args in (("freshness", item), ("health", item)):
        done = cli(db, *args, "--repo", str(repo.path))
        assert done.returncode == 0, done.stderr
        assert "missing_head" in done.stdout
    added = cli(
        db,
        "add",
        "--workspace",
        str(repo.path),
        "--type",
        "fact",
        "--content",
        "x y z",
        "--evidence",
        '{"type":"file","source":"src/app.py"}',
        "--repo",
        str(repo.path),
    )
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout)["provenanceCapture"]["captured"] == 0
    assert not marker.exists()


def test_provenance_capture_in_the_planted_repository_runs_nothing(
    repo: Repo, marker: Path, tmp_path: Path
) -> None:
    db = tmp_path / "kb.sqlite"
    plant(repo, marker)
    added = cli(
        db,
        "add",
        "--workspace",
        str(repo.path),
        "--type",
        "fact",
        "--content",
        "x y z",
        "--evidence",
        '{"type":"file","source":"src/app.py"}',
        "--repo",
        str(repo.path),
    )
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout)["provenanceCapture"]["captured"] == 1
    assert not marker.exists()


def test_index_attributes_blob_missing_runs_nothing_on_ordinary_evidence(
    repo: Repo, marker: Path, tmp_path: Path
) -> None:
    # The evidence is fine; the index names a .gitattributes blob the repository lacks, so
    # the attribute lookup every check makes would fetch it from the promisor.
    db = tmp_path / "kb.sqlite"
    item = add_item(db, repo, repo.head())
    plant(repo, marker)
    repo.git("update-index", "--add", "--cacheinfo", f"100644,{UNKNOWN},.gitattributes")
    git(repo.path, "check-attr", "-a", "src/app.py", check=False)
    assert marker.exists()  # plain git runs it
    marker.unlink()
    for args in (("freshness", item), ("health", item)):
        done = cli(db, *args, "--repo", str(repo.path))
        assert done.returncode == 0, done.stderr
        assert '"unverifiable"' in done.stdout or '"current"' in done.stdout
    added = cli(
        db,
        "add",
        "--workspace",
        str(repo.path),
        "--type",
        "fact",
        "--content",
        "x y z",
        "--evidence",
        '{"type":"file","source":"src/app.py"}',
        "--repo",
        str(repo.path),
    )
    assert added.returncode == 0, added.stderr
    assert not marker.exists()
