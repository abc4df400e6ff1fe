"""Recall says how many records matched in all and what cut the answer: ``total`` and
``resultsTruncated`` (cut by --limit) beside the contract's ``truncated`` (the scan stopped
at the corpus limit), in JSON and text, through the parser (in process) and the console
script's fast path."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from dsh_test_support import commands, in_process

from dsh_compound.limits import LIMITS

Runner = Callable[..., subprocess.CompletedProcess[str]]
#: The Typer command line in this process, and the console script (its fast path).
PATHS = {"parser": in_process.runner("dsh-compound"), "fast": commands.runner("dsh-compound")}


def recall(workspace: Path, *args: str, run: Runner = PATHS["parser"]) -> Any:
    done = run("recall", "--workspace", str(workspace), *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def three_lessons(workspace: Path, write_record: Any) -> Path:
    for name in ("alpha", "bravo", "charlie"):
        write_record(workspace, id=f"pool-{name}", title=f"Pool timeout {name}")
    write_record(
        workspace,
        id="unrelated",
        title="Zebra",
        tags=["zoo"],
        problem="Stripes.",
        rootCause="Genes.",
        resolution="None.",
        whenToUse="Never.",
    )
    return workspace


@pytest.mark.parametrize("path", sorted(PATHS))
def test_limit_cut_is_reported_apart_from_the_corpus_limit(three_lessons: Path, path: str) -> None:
    cut = json.loads(recall(three_lessons, "pool", "--limit", "2", run=PATHS[path]))
    assert [hit["id"] for hit in cut["results"]] == ["pool-alpha", "pool-bravo"]
    assert cut["total"] == 3
    assert cut["resultsTruncated"] is True
    assert cut["truncated"] is False  # the contract's field: the scan was complete
    assert cut["scanned"] == 4

    whole = json.loads(recall(three_lessons, "pool", "--limit", "5", run=PATHS[path]))
    assert (whole["total"], whole["resultsTruncated"], len(whole["results"])) == (3, False, 3)


def test_no_match_has_a_zero_total(three_lessons: Path) -> None:
    none = json.loads(recall(three_lessons, "--query", "kubernetes"))
    assert (none["total"], none["resultsTruncated"], none["results"]) == (0, False, [])


def test_text_summary_shows_the_total_and_both_cuts(three_lessons: Path) -> None:
    text = recall(three_lessons, "pool", "--limit", "1", "--format", "text")
    lines = text.splitlines()
    assert "total: 3" in lines
    assert "resultsTruncated: yes" in lines
    assert "truncated: no" in lines


def test_total_is_a_lower_bound_when_the_scan_hit_the_corpus_limit(
    workspace: Path, write_record: Any
) -> None:
    # Names sort alphabetically; the ones past the scan limit are never read.
    for index in range(LIMITS.scan_names + 2):
        write_record(workspace, id=f"pool-{index:04d}", title="Pool timeout")
    result = json.loads(recall(workspace, "pool", "--limit", "10"))
    assert result["truncated"] is True
    assert result["scanned"] == LIMITS.scan_names
    assert result["total"] == LIMITS.scan_names
    assert result["resultsTruncated"] is True


def test_a_bad_limit_names_the_option(three_lessons: Path) -> None:
    for run in PATHS.values():
        done = run("recall", "pool", "--workspace", str(three_lessons), "--limit", "11")
        assert done.returncode == 1
        error = json.loads(done.stderr)["error"]
        assert error == {"code": "invalid-limit", "message": "--limit must be from 1 to 10, not 11"}
