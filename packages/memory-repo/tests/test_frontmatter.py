"""Front matter schema v0.4: parsing, validation, canonical rendering, expiry, conflicts."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_memory.errors import (
    FlowStyleMetadataError,
    InvalidIdError,
    InvalidMetadataError,
    InvalidSchemaVersionError,
)
from dsh_memory.store import frontmatter

CANONICAL = (
    "---\n"
    "schema_version: 1\n"
    "id: project/codegen\n"
    "type: decision\n"
    "status: active\n"
    "confidence: high\n"
    "created_at: 2026-08-01\n"
    "updated_at: 2026-08-10\n"
    "source_hash: abc123\n"
    "created_by: agent\n"
    "review_after: 2026-09-01\n"
    "expires_at: 2027-01-01\n"
    "tags:\n"
    "  - codegen\n"
    "  - 代码生成\n"
    "source_rollouts:\n"
    "  - rollouts/2026-08-10-session.md\n"
    "---\n"
)


def test_parse_reads_every_canonical_field() -> None:
    metadata = frontmatter.parse(CANONICAL + "body\n")
    assert metadata is not None
    assert metadata["id"] == "project/codegen"
    assert metadata["tags"] == ["codegen", "代码生成"]
    assert metadata["source_rollouts"] == ["rollouts/2026-08-10-session.md"]
    assert metadata["expires_at"] == "2027-01-01"
    assert metadata["content_hash"] is None


def test_render_of_parsed_canonical_text_is_byte_identical() -> None:
    metadata = frontmatter.parse(CANONICAL)
    assert metadata is not None
    assert frontmatter.render(metadata) == CANONICAL


def test_parse_completes_documented_defaults() -> None:
    metadata = frontmatter.parse("---\nschema_version: 1\nid: note\n---\n", today="2026-05-05")
    assert metadata is not None
    assert metadata["type"] == "observation"
    assert metadata["status"] == "active"
    assert metadata["confidence"] == "unknown"
    assert metadata["created_at"] == metadata["updated_at"] == "2026-05-05"
    assert metadata["tags"] == []
    assert metadata["supersedes"] is None


def test_parse_without_date_completion_leaves_missing_dates_null() -> None:
    metadata = frontmatter.parse("---\nschema_version: 1\nid: note\n---\n", complete_dates=False)
    assert metadata is not None
    assert metadata["updated_at"] is None


def test_parse_accepts_crlf_line_endings() -> None:
    metadata = frontmatter.parse(CANONICAL.replace("\n", "\r\n") + "body\r\n")
    assert metadata is not None
    assert metadata["tags"] == ["codegen", "代码生成"]
    assert frontmatter.body_of(CANONICAL.replace("\n", "\r\n") + "body\r\n") == "body\r\n"


def test_bom_prefixed_record_is_legacy_like_the_earlier_tool() -> None:
    assert frontmatter.parse("\ufeff" + CANONICAL) is None


def test_text_without_front_matter_is_legacy() -> None:
    assert frontmatter.parse("# just notes\n") is None


def test_block_scalar_is_rejected() -> None:
    with pytest.raises(InvalidMetadataError) as caught:
        frontmatter.parse("---\nschema_version: 1\nid: a\nsource_hash: |\n  x\n---\n")
    assert caught.value.code == "invalid-metadata"


def test_flow_style_list_is_rejected() -> None:
    with pytest.raises(FlowStyleMetadataError):
        frontmatter.parse("---\nschema_version: 1\nid: a\ntags: [a, b]\n---\n")


def test_empty_flow_list_is_accepted() -> None:
    metadata = frontmatter.parse("---\nschema_version: 1\nid: a\ntags: []\n---\n")
    assert metadata is not None
    assert metadata["tags"] == []


def test_unindented_block_list_is_accepted() -> None:
    metadata = frontmatter.parse("---\nschema_version: 1\nid: a\ntags:\n- x\n- y\n---\n")
    assert metadata is not None
    assert metadata["tags"] == ["x", "y"]


@pytest.mark.parametrize("record_id", ["user/preferences", "project/codegen-style", "plain-id"])
def test_namespaced_and_plain_ids_are_valid(record_id: str) -> None:
    metadata = frontmatter.parse(f"---\nschema_version: 1\nid: {record_id}\n---\n")
    assert metadata is not None
    assert metadata["id"] == record_id


@pytest.mark.parametrize("record_id", ["a/b/c", "Upper", "-lead", "a/", "/a", "123"])
def test_malformed_ids_are_rejected(record_id: str) -> None:
    with pytest.raises(InvalidIdError):
        frontmatter.parse(f"---\nschema_version: 1\nid: {record_id}\n---\n")


@pytest.mark.parametrize("version", ["2", '"1"', "", "null"])
def test_schema_version_other_than_integer_one_is_rejected(version: str) -> None:
    with pytest.raises(InvalidSchemaVersionError):
        frontmatter.parse(f"---\nschema_version: {version}\nid: a\n---\n")


@pytest.mark.parametrize(
    "line",
    [
        "type: opinion",
        "status: deleted",
        "confidence: certain",
        "created_at: 2026-13-01",
        "expires_at: tomorrow",
        "review_after: null",
        "source_hash: " + "x" * 129,
        "created_by: null",
    ],
)
def test_invalid_field_values_are_rejected(line: str) -> None:
    with pytest.raises(InvalidMetadataError):
        frontmatter.parse(f"---\nschema_version: 1\nid: a\n{line}\n---\n")


@pytest.mark.parametrize(
    "item", ["handbook/x.md", "rollouts/../secret.md", "rollouts/x.txt", "123"]
)
def test_out_of_tree_source_rollouts_are_rejected(item: str) -> None:
    with pytest.raises(InvalidMetadataError):
        frontmatter.parse(f"---\nschema_version: 1\nid: a\nsource_rollouts:\n  - {item}\n---\n")


def test_numeric_tag_is_rejected_like_the_earlier_tool() -> None:
    with pytest.raises(InvalidMetadataError):
        frontmatter.parse("---\nschema_version: 1\nid: a\ntags:\n  - 2024\n---\n")


def test_full_width_digits_are_text_as_in_the_earlier_tool() -> None:
    # JavaScript's \d is ASCII only: "２０２４" is a string tag there, never the number 2024.
    parsed = frontmatter.parse("---\nschema_version: 1\nid: a\ntags:\n  - ２０２４\n---\n")
    assert parsed is not None and parsed["tags"] == ["２０２４"]
    with pytest.raises(InvalidMetadataError):
        frontmatter.parse("---\nschema_version: 1\nid: a\ncreated_at: ２０２６-01-02\n---\n")


def test_render_quotes_a_value_that_would_not_read_back() -> None:
    metadata = {"schema_version": 1, "id": "a", "tags": ["2024", " padded"]}
    rendered = frontmatter.render(metadata)
    assert '  - "2024"\n' in rendered
    parsed = frontmatter.parse(rendered)
    assert parsed is not None
    assert parsed["tags"] == ["2024", " padded"]


def test_render_refuses_invalid_metadata() -> None:
    with pytest.raises(InvalidIdError):
        frontmatter.render({"schema_version": 1, "id": "Bad Id"})


_tag = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=64
).filter(lambda tag: "\n" not in tag and "\r" not in tag and "\x85" not in tag)


@settings(max_examples=60, deadline=None)
@given(
    tags=st.lists(_tag, max_size=4),
    record_type=st.sampled_from(frontmatter.TYPES),
    status=st.sampled_from(frontmatter.STATUSES),
    source_hash=st.one_of(st.none(), _tag),
)
def test_render_then_parse_round_trips(
    tags: list[str], record_type: str, status: str, source_hash: str | None
) -> None:
    metadata = {
        "schema_version": 1,
        "id": "ns/record",
        "type": record_type,
        "status": status,
        "created_at": "2026-01-01",
        "updated_at": "2026-01-02",
        "tags": tags,
        "source_hash": source_hash,
    }
    parsed = frontmatter.parse(frontmatter.render(metadata))
    assert parsed is not None
    assert parsed["tags"] == tags
    assert parsed["source_hash"] == source_hash
    assert (parsed["type"], parsed["status"]) == (record_type, status)


def test_legacy_id_is_sixteen_hex_of_the_path_digest() -> None:
    record_id = frontmatter.legacy_id("handbook/old-note.md")
    assert record_id.startswith("legacy-")
    assert len(record_id) == len("legacy-") + 16
    assert frontmatter.legacy_id("handbook/old-note.md") == record_id


def test_legacy_front_matter_is_the_earlier_tools_bytes() -> None:
    text = frontmatter.legacy_front_matter("handbook/a.md", "2026-08-20")
    assert text == (
        f"---\nschema_version: 1\nid: {frontmatter.legacy_id('handbook/a.md')}\n"
        "created_at: 2026-08-20\nupdated_at: 2026-08-20\n---\n"
    )
    assert frontmatter.parse(text) is not None


NOON = dt.datetime(2026, 8, 20, 12, 0, tzinfo=dt.UTC)


def test_record_expires_on_its_expiry_day() -> None:
    assert frontmatter.is_expired({"expires_at": "2026-08-20"}, NOON)


def test_record_is_live_the_day_before_expiry() -> None:
    assert not frontmatter.is_expired({"expires_at": "2026-08-21"}, NOON)


def test_record_without_expiry_never_expires() -> None:
    assert not frontmatter.is_expired({"expires_at": None}, NOON)


@pytest.mark.parametrize(
    ("metadata", "key"),
    [
        ({"type": "decision", "id": "project/codegen"}, "decision:project"),
        ({"type": "preference", "id": "dark-mode"}, "preference:"),
        ({"id": "user/x"}, "observation:user"),
    ],
)
def test_topic_key_is_type_and_namespace(metadata: dict[str, str], key: str) -> None:
    assert frontmatter.topic_key(metadata) == key


def _record(
    record_id: str, status: str, updated: str, expires: str | None = None
) -> dict[str, object]:
    return {"id": record_id, "status": status, "updated_at": updated, "expires_at": expires}


def test_winner_prefers_status_precedence_over_date() -> None:
    records = [_record("a", "candidate", "2026-08-10"), _record("b", "active", "2026-01-01")]
    winner = frontmatter.resolve_topic_conflict(records, NOON)
    assert winner is not None
    assert winner["id"] == "b"


def test_winner_prefers_newest_updated_at_within_a_status() -> None:
    records = [_record("a", "active", "2026-01-01"), _record("b", "active", "2026-08-01")]
    winner = frontmatter.resolve_topic_conflict(records, NOON)
    assert winner is not None
    assert winner["id"] == "b"


def test_winner_tie_goes_to_smallest_id() -> None:
    records = [_record("b", "active", "2026-08-01"), _record("a", "active", "2026-08-01")]
    winner = frontmatter.resolve_topic_conflict(records, NOON)
    assert winner is not None
    assert winner["id"] == "a"


def test_expired_record_never_wins() -> None:
    records = [
        _record("a", "active", "2026-08-01", expires="2026-08-20"),
        _record("b", "archived", "2020-01-01"),
    ]
    winner = frontmatter.resolve_topic_conflict(records, NOON)
    assert winner is not None
    assert winner["id"] == "b"


def test_all_expired_means_no_winner() -> None:
    records = [_record("a", "active", "2026-08-01", expires="2026-01-01")]
    assert frontmatter.resolve_topic_conflict(records, NOON) is None


@settings(max_examples=200, deadline=None)
@given(block=st.text(max_size=200))
def test_parser_only_ever_fails_with_a_metadata_error(block: str) -> None:
    try:
        frontmatter.parse(f"---\nschema_version: 1\nid: a\n{block}\n---\nbody")
    except InvalidMetadataError as exc:
        assert exc.code in {
            "invalid-metadata",
            "invalid-schema-version",
            "invalid-id",
            "flow-style-metadata",
        }
