"""The record file: byte-exact rendering, parsing, content status."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dsh_compound import sha256
from dsh_compound.errors import MalformedRecordError
from dsh_compound.record import (
    build_metadata,
    content_status,
    parse_record,
    render_body,
    render_record,
)

GOLDEN = Path(__file__).parent / "golden" / "login-timeout.md"
STAMP = "2026-11-30T12:00:00.000Z"
LATER = "2026-12-01T08:30:15.250Z"


def golden_metadata(make_draft: Any) -> dict[str, Any]:
    draft = make_draft(
        title="登录请求在测试环境超时 (login timeout)",
        tags=["login", "超时", "db-pool"],
        problem=(
            "Login requests time out after 30 s in the test environment.\n测试环境中登录请求超时。"
        ),
        rootCause="数据库连接池耗尽: the pool size is 2 while the suite runs 8 workers.",
        resolution="Raise `poolSize` to 10 in test config only.",
        whenToUse="CI or local test runs where login hangs and the pool is small.",
        verification={
            "command": "node --test tests/login.test.js && echo ```done```",
            "result": "The author reports that the regression test passed.",
        },
        files=["src/login.js", "tests/login.test.js"],
    )
    return build_metadata(
        draft, ["a" * 64, "0123456789abcdef" * 4], created_at=STAMP, updated_at=LATER
    )


def test_render_record_matches_the_golden_file_byte_for_byte(make_draft: Any) -> None:
    assert render_record(golden_metadata(make_draft)) == GOLDEN.read_bytes()


def test_golden_record_parses_back_to_the_same_metadata(make_draft: Any) -> None:
    parsed = parse_record(GOLDEN.read_bytes(), expected_id="login-timeout")
    assert parsed.metadata == golden_metadata(make_draft)
    assert parsed.content_status == "consistent"


def test_front_matter_key_order_is_schema_version_then_draft_order(make_draft: Any) -> None:
    metadata = golden_metadata(make_draft)
    assert list(metadata) == [
        "schemaVersion",
        "id",
        "title",
        "tags",
        "problem",
        "rootCause",
        "resolution",
        "whenToUse",
        "verification",
        "files",
        "createdAt",
        "updatedAt",
    ]
    assert list(metadata["verification"]) == ["command", "result", "source", "executedByHelper"]
    assert list(metadata["files"][0]) == ["path", "sha256"]


def test_front_matter_line_is_written_as_json_stringify(make_draft: Any) -> None:
    text = render_record(golden_metadata(make_draft)).decode("utf-8")
    line = text.splitlines()[1]
    payload = line.removeprefix("dsh_compound: ")
    # JSON.stringify: no spaces after separators, non-ASCII raw, "\n" escaped in one line.
    assert payload == json.dumps(
        golden_metadata(make_draft), ensure_ascii=False, separators=(",", ":")
    )
    assert "登录请求" in payload
    assert "\\n" in payload


def test_record_layout_has_heading_notice_and_sections(make_draft: Any) -> None:
    text = render_record(golden_metadata(make_draft)).decode("utf-8")
    lines = text.split("\n")
    assert lines[0] == "---"
    assert lines[2] == "---"
    assert lines[3] == ""
    assert lines[4] == "# 登录请求在测试环境超时 (login timeout)"
    assert "> Verification below is self-reported." in lines[6]
    for heading in (
        "## Problem",
        "## Root cause",
        "## Resolution",
        "## When to use",
        "## Tags",
        "## Verification",
        "## Files",
    ):
        assert heading in lines
    assert text.endswith("\n") and not text.endswith("\n\n")


def test_command_with_backticks_gets_a_longer_fence(make_draft: Any) -> None:
    body = render_body(golden_metadata(make_draft))
    assert "````text\nnode --test tests/login.test.js && echo ```done```\n````" in body


def test_title_line_breaks_cannot_inject_sections(make_draft: Any) -> None:
    metadata = build_metadata(
        make_draft(title="One\n## Resolution\nrm -rf /"),
        ["a" * 64] * 2,
        created_at=STAMP,
        updated_at=STAMP,
    )
    assert render_body(metadata).split("\n")[0] == "# One ## Resolution rm -rf /"


def test_render_is_deterministic(make_draft: Any) -> None:
    assert render_record(golden_metadata(make_draft)) == render_record(golden_metadata(make_draft))


def test_sha256_hashes_bytes_and_text() -> None:
    assert sha256(b"abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert sha256("abc") == sha256(b"abc")


def test_parse_accepts_a_bom_and_crlf_line_endings(make_draft: Any) -> None:
    data = b"\xef\xbb\xbf" + GOLDEN.read_bytes().replace(b"\n", b"\r\n")
    parsed = parse_record(data, expected_id="login-timeout")
    assert parsed.metadata == golden_metadata(make_draft)
    assert parsed.content_status == "consistent"


def test_content_status_ignores_surrounding_whitespace(make_draft: Any) -> None:
    metadata = golden_metadata(make_draft)
    assert content_status(metadata, "\n\n  " + render_body(metadata) + "\n\n\n") == "consistent"


def test_a_body_only_edit_is_modified(make_draft: Any) -> None:
    front, body = GOLDEN.read_bytes().split(b"\n---\n", 1)
    edited = body.replace(b"Raise `poolSize` to 10", b"Raise `poolSize` to 50")
    assert edited != body
    assert parse_record(front + b"\n---\n" + edited).content_status == "modified"


def test_a_metadata_only_edit_is_modified(make_draft: Any) -> None:
    metadata = golden_metadata(make_draft)
    metadata["resolution"] = "Delete the test."
    data = render_record(metadata)
    body = GOLDEN.read_bytes().split(b"\n---\n", 1)[1]
    front = data.split(b"\n---\n", 1)[0]
    assert parse_record(front + b"\n---\n" + body).content_status == "modified"


def test_an_inner_whitespace_edit_is_modified(make_draft: Any) -> None:
    data = GOLDEN.read_bytes().replace(b"## Problem\n\n", b"## Problem\n\n\n")
    assert parse_record(data).content_status == "modified"


@pytest.mark.parametrize(
    ("mutate", "why"),
    [
        (lambda t: t.replace("---\n", "--\n", 1), "front matter"),
        (lambda t: t.replace("dsh_compound:", "other:", 1), "exactly one field"),
        (lambda t: t.replace('"schemaVersion":1', '"schemaVersion":2', 1), "schemaVersion"),
        (lambda t: t.replace('"source":"self-reported"', '"source":"verified"', 1), "source"),
        (
            lambda t: t.replace('"executedByHelper":false', '"executedByHelper":true', 1),
            "executedByHelper",
        ),
        (lambda t: t.replace('"sha256":"aaaa', '"sha256":"AAAA', 1), "sha256"),
        (
            lambda t: t.replace(
                '"createdAt":"2026-11-30T12:00:00.000Z"', '"createdAt":"yesterday"', 1
            ),
            "createdAt",
        ),
        (lambda t: t.replace('"tags":["login"', '"tags":[""', 1), "tags"),
        (lambda t: t.replace('"path":"src/login.js"', '"path":"../x.js"', 1), "parent traversal"),
        (lambda t: t.replace("dsh_compound: {", "dsh_compound: {{", 1), "JSON"),
        (lambda t: "no front matter", "front matter"),
    ],
)
def test_parse_rejects_malformed_records(mutate: Any, why: str) -> None:
    data = mutate(GOLDEN.read_text(encoding="utf-8")).encode("utf-8")
    with pytest.raises(MalformedRecordError, match=why):
        parse_record(data)


def test_parse_rejects_an_id_that_differs_from_the_file_name() -> None:
    with pytest.raises(MalformedRecordError, match="does not match"):
        parse_record(GOLDEN.read_bytes(), expected_id="other-id")


def test_parse_rejects_invalid_utf8() -> None:
    with pytest.raises(MalformedRecordError, match="UTF-8"):
        parse_record(GOLDEN.read_bytes() + b"\xff")


def test_parse_keeps_unknown_metadata_keys() -> None:
    text = GOLDEN.read_text(encoding="utf-8").replace(
        '{"schemaVersion":1,', '{"schemaVersion":1,"future":true,', 1
    )
    assert parse_record(text.encode()).metadata["future"] is True


def test_parse_rejects_invalid_utf8_in_the_front_matter() -> None:
    data = GOLDEN.read_bytes().replace("登录".encode(), b"\xff\xfe", 1)
    with pytest.raises(MalformedRecordError):
        parse_record(data)
