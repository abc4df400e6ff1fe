"""Issue 8 point 8: one bad record, name or preview never takes a whole command down."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

GOOD = "---\nschema_version: 1\nid: good\ntype: fact\n---\nprefers pnpm\n"
YEAR_ZERO = "---\nschema_version: 1\nid: year-zero\ncreated_at: 0000-01-01\n---\npnpm zero\n"
HUGE_INT = "---\nschema_version: 1\nid: huge\nsource_hash: " + "7" * 5000 + "\n---\npnpm huge\n"
HUGE_TAG = "---\nschema_version: 1\nid: huge-tag\ntags:\n  - " + "9" * 4400 + "\n---\npnpm tag\n"
BAD_EXPIRY = "---\nschema_version: 1\nid: bad-expiry\nexpires_at: 0000-12-31\n---\npnpm x\n"


def cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dsh_memory.cli", "--root", str(root), *args],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def ok(root: Path, *args: str) -> Any:
    result = cli(root, *args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["value"]


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True
    ).stdout


@pytest.fixture
def bad_root(memory_root: Path) -> Path:
    handbook = memory_root / "handbook"
    (handbook / "good.md").write_text(GOOD)
    (handbook / "year-zero.md").write_text(YEAR_ZERO)
    (handbook / "huge.md").write_text(HUGE_INT)
    (handbook / "huge-tag.md").write_text(HUGE_TAG)
    (handbook / "bad-expiry.md").write_text(BAD_EXPIRY)
    (handbook / "legacy.md").write_text("legacy pnpm note\n")
    return memory_root


def bad_name(root: Path) -> bytes:
    name = os.fsencode(root / "handbook") + b"/caf\xe9.md"
    with open(name, "wb") as handle:
        handle.write(b"latin-1 named pnpm note\n")
    return name


def test_invalid_metadata_is_counted_and_skipped(bad_root: Path) -> None:
    status = ok(bad_root, "status")
    assert status["validMetadataCount"] == 1
    invalid = {entry["path"]: entry["code"] for entry in status["invalidMetadata"]}
    assert set(invalid) == {
        "handbook/year-zero.md", "handbook/huge.md", "handbook/huge-tag.md",
        "handbook/bad-expiry.md",
    }  # fmt: skip
    assert set(invalid.values()) == {"invalid-metadata"}
    assert ok(bad_root, "health")["dataFileCount"] == 6
    found = ok(bad_root, "search", "--query", "pnpm")
    assert {r["path"] for r in found["results"]} == {"handbook/good.md", "handbook/legacy.md"}
    assert ok(bad_root, "context", "--query", "pnpm")["count"] == 2
    assert ok(bad_root, "legacy-records")["count"] == 1
    assert ok(bad_root, "migrate-legacy", "--dry-run", "false")["migratedCount"] == 1


def test_a_name_that_is_not_utf8_is_reported_and_skipped(bad_root: Path) -> None:
    name = bad_name(bad_root)
    status = ok(bad_root, "status")
    assert {"path": "handbook/caf\\xe9.md", "code": "invalid-name"} in status["invalidMetadata"]
    assert ok(bad_root, "health")["payloadDirty"] is True
    assert {r["path"] for r in ok(bad_root, "search", "--query", "pnpm")["results"]} == {
        "handbook/good.md", "handbook/legacy.md",
    }  # fmt: skip
    assert ok(bad_root, "context", "--query", "pnpm")["count"] == 2
    legacy = ok(bad_root, "legacy-records")
    assert legacy["count"] == 1
    assert legacy["skippedPaths"] == ["handbook/caf\\xe9.md"]
    migrated = ok(bad_root, "migrate-legacy", "--dry-run", "false")
    assert migrated["migratedCount"] == 1
    assert migrated["skippedPaths"] == ["handbook/caf\\xe9.md"]
    cleared = ok(bad_root, "clear", "--confirmation", "DELETE_MEMORY")
    assert cleared["skippedPaths"] == ["handbook/caf\\xe9.md"]
    assert os.path.exists(name)
    assert not (bad_root / "handbook" / "good.md").exists()


def test_impossible_previews_do_not_break_status_or_health(memory_root: Path) -> None:
    previews = memory_root / ".sync" / "previews"
    previews.mkdir(parents=True, exist_ok=True)
    (previews / "20261399T000000Z-abcdef12").mkdir()  # month 13, day 99
    far = previews / "20260101T000000Z-0123abcd"
    far.mkdir()
    (far / "manifest.json").write_text(json.dumps({"created_at": "9999-12-31T23:59:59Z"}))
    assert ok(memory_root, "status")["pendingPreview"] is None
    health = ok(memory_root, "health")
    assert health["pendingPreviewCount"] == 0
