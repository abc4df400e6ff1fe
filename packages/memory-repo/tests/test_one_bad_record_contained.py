"""One bad record, name or preview never takes a whole command down: status counts it, the
readers skip it with a warning, the writers leave it be; a refusal never echoes a huge value
or argument whole.

Commands that only print run in process; the read commands the console script answers on
its own fast path (status, search, context) run through it as a process."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from dsh_test_support import commands, in_process

GOOD = "---\nschema_version: 1\nid: good\ntype: fact\n---\nprefers pnpm\n"
YEAR_ZERO = "---\nschema_version: 1\nid: year-zero\ncreated_at: 0000-01-01\n---\npnpm zero\n"
HUGE_INT = "---\nschema_version: 1\nid: huge\nsource_hash: " + "7" * 5000 + "\n---\npnpm huge\n"
HUGE_TAG = "---\nschema_version: 1\nid: huge-tag\ntags:\n  - " + "9" * 4400 + "\n---\npnpm tag\n"
BAD_EXPIRY = "---\nschema_version: 1\nid: bad-expiry\nexpires_at: 0000-12-31\n---\npnpm x\n"


dsh_memory = in_process.runner("dsh-memory")


def cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return dsh_memory("--root", str(root), *args)


def ok(root: Path, *args: str) -> Any:
    result = cli(root, *args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["value"]


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
        "handbook/year-zero.md",
        "handbook/huge.md",
        "handbook/huge-tag.md",
        "handbook/bad-expiry.md",
    }
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
        "handbook/good.md",
        "handbook/legacy.md",
    }
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


#: Records every reader must skip, each in another way a file can fail to be one.
UNREADABLE_RECORDS = {
    "handbook/huge-schema.md": "---\nschema_version: " + "1" * 4301 + "\nid: hs\n---\npnpm\n",
    "handbook/huge-id.md": "---\nschema_version: 1\nid: x\nsource_hash: "
    + "9" * 4301
    + "\n---\npnpm\n",
    "rollouts/huge-list.md": "---\nschema_version: 1\nid: hl\nsource_rollouts:\n  - "
    + "9" * 4301
    + "\n---\npnpm\n",
    "handbook/binary.md": "---\nschema_version: 1\nid: binary\n---\npnpm \0 bytes\n",
    "handbook/binary-legacy.md": "a pnpm note with a \0 byte\n",
}


def test_every_record_a_reader_skips_is_counted_by_status(memory_root: Path) -> None:
    # One test for every door (frontmatter.record_text, then the parser): what search and
    # context leave out with a warning is exactly what status counts as invalid.
    (memory_root / "handbook" / "good.md").write_text(GOOD)
    for path, text in UNREADABLE_RECORDS.items():
        (memory_root / path).write_text(text)

    def installed(*args: str) -> Any:
        done = commands.run("dsh-memory", *args)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)["value"]

    status = installed("status")
    counted = {entry["path"] for entry in status["invalidMetadata"]}
    assert counted == set(UNREADABLE_RECORDS)
    assert status["invalidMetadataCount"] == len(UNREADABLE_RECORDS)
    assert status["validMetadataCount"] == 1 and status["legacyFileCount"] == 0
    for command in ("search", "context"):
        found = installed(command, "--query", "pnpm", "--scope", "all")
        listed = found.get("results", found.get("records"))
        assert [r["path"] for r in listed] == ["handbook/good.md"], command
        assert {w["path"] for w in found["warnings"]} == counted, command
    assert installed("legacy-records")["count"] == 0  # a binary file is no legacy record


def test_a_limit_of_4301_digits_is_the_methods_invalid_request(memory_root: Path) -> None:
    huge = "9" * 4301
    for command, code in (
        ("search", "search-invalid-request"),
        ("context", "context-invalid-request"),
        ("runs", "runs-invalid-request"),
    ):
        args = [command, "--limit", huge] + (["--query", "pnpm"] if command != "runs" else [])
        done = commands.run("dsh-memory", *args)
        assert done.returncode == 1
        assert json.loads(done.stderr)["error"]["code"] == code, done.stderr


HUGE = "9" * 4301
#: Front matter whose value (or key, or line) is echoed by the message refusing it.
ECHOED = {
    "confidence": ("invalid-metadata", f"---\nschema_version: 1\nid: e\nconfidence: {HUGE}\n---\n"),
    "type": ("invalid-metadata", f"---\nschema_version: 1\nid: e\ntype: {HUGE}\n---\n"),
    "status": ("invalid-metadata", f"---\nschema_version: 1\nid: e\nstatus: '{HUGE}'\n---\n"),
    "schema_version": ("invalid-schema-version", f"---\nschema_version: {HUGE}\nid: e\n---\n"),
    "unparsable line": ("invalid-metadata", f"---\nschema_version: 1\n{'x' * 100_000}\n---\n"),
    "block scalar key": ("invalid-metadata", f"---\nschema_version: 1\n{'k' * 5000}: |\n---\n"),
    "flow-style key": ("flow-style-metadata", f"---\nschema_version: 1\n{'k' * 5000}: [a]\n---\n"),
}


@pytest.mark.parametrize("case", list(ECHOED))
def test_a_refusal_echoes_a_bounded_part_of_the_value(memory_root: Path, case: str) -> None:
    code, front_matter = ECHOED[case]
    done = dsh_memory("write", "handbook/echo.md", "-", input=front_matter + "body\n")
    assert done.returncode == 1, done.stdout
    error = json.loads(done.stderr)["error"]
    assert error["code"] == code
    assert "…" in error["message"]
    assert len(error["message"]) < 250, error["message"]


def test_no_message_echoes_an_argument_whole(memory_root: Path, tmp_path: Path) -> None:
    long_name = "handbook/" + "长" * 5000 + ".md"
    cases = [
        (["dsh-memory", "write", long_name, "-"], "edit-invalid-request"),
        (["dsh-memory", "remove", long_name], "edit-not-found"),
        (["dsh-memory-sync", "--json", "--agent", "x" * 5000], "sync-invalid-request"),
    ]
    for argv, code in cases:
        done = in_process.run(*argv, input=GOOD)
        assert done.returncode == 1, (argv[:2], done.stdout)
        error = json.loads(done.stderr)["error"]
        assert error["code"] == code, error
        assert len(error["message"]) <= 2000, (argv[:2], len(error["message"]))
