"""Ids, digests and timestamps must match their format in full: a trailing newline (which a
``$``-anchored pattern lets through) or fullwidth digits are refused on the way in and make
a record malformed on the way out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from dsh_test_support import in_process
from dsh_test_support.commands import error, ok

from dsh_compound import check, inspect
from dsh_compound.errors import CompoundError

from .conftest import STAMP, plant_record, source

run = in_process.runner("dsh-compound")


def test_capture_refuses_an_id_with_a_trailing_newline(
    workspace: Path, write_json: Any, make_draft: Any
) -> None:
    draft_path = write_json(workspace / "draft.json", make_draft(id="evil\n"))
    result = run("capture", "--workspace", str(workspace), "--input", str(draft_path))
    assert error(result)["code"] == "invalid-id"
    assert not (workspace / "docs").exists()


def test_inspect_refuses_an_id_with_a_trailing_newline(workspace: Path) -> None:
    result = run("inspect", "--workspace", str(workspace), "--id", "evil\n")
    assert error(result)["code"] == "invalid-id"


def test_replace_refuses_a_digest_with_a_trailing_newline(
    workspace: Path, write_json: Any, make_draft: Any
) -> None:
    draft_path = write_json(workspace / "draft.json", make_draft())
    args = ["capture", "--workspace", str(workspace), "--input", str(draft_path)]
    digest = ok(run(*args))["digest"]
    assert error(run(*args, "--replace", digest + "\n"))["code"] == "invalid-digest"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("createdAt", STAMP + "\n"),
        ("updatedAt", STAMP + "\n"),
        ("createdAt", "２０２６-01-02T03:04:05.006Z"),  # fullwidth digits are not ISO 8601
        ("sha256", "0" * 64 + "\n"),
    ],
)
def test_record_with_a_trailing_newline_in_a_stamp_or_digest_is_malformed(
    workspace: Path, field: str, value: str
) -> None:
    plain = source(workspace, "src/login.js")
    location = plant_record(workspace, "stamped", [plain])
    text = location.read_text()
    if field == "sha256":
        text = text.replace(json.dumps(plain[1]), json.dumps(value), 1)
    else:
        text = text.replace(f'"{field}":"{STAMP}"', f'"{field}":{json.dumps(value)}', 1)
    location.write_text(text)
    checked = check(workspace)
    assert checked["scanned"] == 1
    assert checked["unchangedConsistent"]["count"] == 0
    assert checked["needsReview"] == []
    assert checked["warnings"][0].startswith("skipped stamped.md: malformed record")
    with pytest.raises(CompoundError) as caught:
        inspect(workspace, "stamped")
    assert caught.value.code == "malformed-record"
