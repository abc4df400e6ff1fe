"""Recall: tokenisation, weights, ordering, limits, bounds and warnings."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_compound import recall
from dsh_compound.errors import InvalidLimitError, InvalidQueryError, SymlinkRejectedError
from dsh_compound.limits import LIMITS
from dsh_compound.scoring import Terms, recall_terms, score_text, searchable_text

NEUTRAL = {
    "title": "Neutral title",
    "tags": ["neutral"],
    "problem": "Neutral problem.",
    "rootCause": "Neutral cause.",
    "resolution": "Neutral resolution.",
    "whenToUse": "Neutral conditions.",
    "files": ["src/login.js"],
}


def neutral(write_record: Any, root: Path, record_id: str, **fields: Any) -> Path:
    return write_record(root, **{**NEUTRAL, "id": record_id, **fields})


@pytest.mark.parametrize(
    ("field", "value", "weight"),
    [
        ("title", "Zebra crossing", 8),
        ("tags", ["zebra"], 10),
        ("whenToUse", "When a zebra appears.", 5),
        ("problem", "A zebra escaped.", 3),
        ("rootCause", "The zebra gate.", 2),
        ("resolution", "Close the zebra gate.", 2),
    ],
)
def test_each_field_scores_its_weight_per_matching_term(
    workspace: Path, write_record: Any, field: str, value: Any, weight: int
) -> None:
    neutral(write_record, workspace, "one", **{field: value})
    result = recall(workspace, "zebra")
    assert [r["score"] for r in result["results"]] == [weight]


def test_paths_score_one_per_matching_term(workspace: Path, write_record: Any) -> None:
    (workspace / "src/zebra.js").write_text("z")
    neutral(write_record, workspace, "one", files=["src/zebra.js"])
    assert recall(workspace, "zebra")["results"][0]["score"] == 1


def test_scores_add_over_terms_and_fields(workspace: Path, write_record: Any) -> None:
    neutral(write_record, workspace, "one", title="Zebra lion", tags=["lion"])
    # zebra: title 8; lion: title 8 + tags 10
    assert recall(workspace, "zebra lion")["results"][0]["score"] == 26


def test_repeated_query_terms_count_once(workspace: Path, write_record: Any) -> None:
    neutral(write_record, workspace, "one", title="Zebra")
    assert recall(workspace, "zebra ZEBRA zebra")["results"][0]["score"] == 8


def test_matching_is_substring_and_case_folded_nfkc(workspace: Path, write_record: Any) -> None:
    neutral(write_record, workspace, "one", title="Connection POOLING exhausted")
    # Full-width letters fold to ASCII under NFKC; "pool" is a substring of "pooling".
    assert recall(workspace, "ｐｏｏｌ")["results"][0]["score"] == 8


def test_ties_sort_by_id(workspace: Path, write_record: Any) -> None:
    for record_id in ("charlie", "alpha", "bravo"):
        neutral(write_record, workspace, record_id, title="Zebra")
    assert [r["id"] for r in recall(workspace, "zebra")["results"]] == ["alpha", "bravo", "charlie"]


def test_higher_scores_come_first(workspace: Path, write_record: Any) -> None:
    neutral(write_record, workspace, "aaa", problem="zebra")
    neutral(write_record, workspace, "zzz", tags=["zebra"])
    assert [r["id"] for r in recall(workspace, "zebra")["results"]] == ["zzz", "aaa"]


def test_records_without_a_match_are_not_returned(workspace: Path, write_record: Any) -> None:
    neutral(write_record, workspace, "one")
    assert recall(workspace, "giraffe")["results"] == []


def test_chinese_query_matches_through_bigrams(workspace: Path, write_record: Any) -> None:
    neutral(write_record, workspace, "pool", rootCause="连接池耗尽导致登录超时")
    result = recall(workspace, "数据库连接池")
    # 连接池 (segment) and the bigrams 连接 and 接池 occur in rootCause (weight 2 each).
    assert result["results"][0]["id"] == "pool"
    assert result["results"][0]["score"] == 2 * sum(
        1 for t in recall_terms("数据库连接池") if t in "连接池耗尽导致登录超时"
    )


def test_mixed_chinese_and_english_query(workspace: Path, write_record: Any) -> None:
    neutral(write_record, workspace, "mixed", title="Login 超时", tags=["timeout"])
    result = recall(workspace, "login 超时 timeout")
    terms = recall_terms("login 超时 timeout")
    han_in_title = [t for t in terms if t in "超时"]  # ICU segments plus the bigram 超时
    assert "超时" in han_in_title
    # login: title 8 + path src/login.js 1; each Han term in the title 8; timeout: tags 10.
    assert result["results"][0]["score"] == 8 + 1 + 8 * len(han_in_title) + 10


def test_query_terms_are_segments_plus_han_bigrams() -> None:
    terms = recall_terms("Login 数据库连接池")
    assert "login" in terms
    assert {"数据", "据库", "库连", "连接", "接池"} <= set(terms)
    assert not any(len(t) == 3 and t not in ("数据库", "连接池") for t in terms if t != "login")


def test_terms_at_the_end_of_a_long_query_still_count(workspace: Path, write_record: Any) -> None:
    neutral(write_record, workspace, "tail", title="熊猫")
    query = "的" * 498 + "熊猫"
    assert len(query) == 500
    assert recall(workspace, query)["results"][0]["id"] == "tail"


def test_query_of_500_characters_is_accepted_and_501_refused(workspace: Path) -> None:
    assert recall(workspace, "a" * 500)["results"] == []
    with pytest.raises(InvalidQueryError):
        recall(workspace, "a" * 501)


def test_query_length_counts_javascript_characters(workspace: Path) -> None:
    with pytest.raises(InvalidQueryError):
        recall(workspace, "😀" * 251)


@pytest.mark.parametrize("bad", ["", "   ", None, 5])
def test_empty_or_non_text_query_is_refused(workspace: Path, bad: Any) -> None:
    with pytest.raises(InvalidQueryError):
        recall(workspace, bad)


def test_default_limit_is_five_and_maximum_ten(workspace: Path, write_record: Any) -> None:
    for index in range(12):
        neutral(write_record, workspace, f"r{index:02d}", title="Zebra")
    assert len(recall(workspace, "zebra")["results"]) == 5
    assert len(recall(workspace, "zebra", 10)["results"]) == 10
    assert len(recall(workspace, "zebra", 1)["results"]) == 1


@pytest.mark.parametrize("bad", [0, 11, -1, "x", "3.5", True, None])
def test_limit_outside_one_to_ten_is_refused(workspace: Path, bad: Any) -> None:
    with pytest.raises(InvalidLimitError):
        recall(workspace, "zebra", bad)


def test_worst_query_has_at_most_999_terms() -> None:
    query = "".join(chr(0x4E00 + i * 7) for i in range(500))
    assert len(recall_terms(query)) <= LIMITS.query_terms


def test_result_has_the_spec_fields(workspace: Path, write_record: Any) -> None:
    neutral(write_record, workspace, "one", title="Zebra", problem="P" * 1000)
    result = recall(workspace, "zebra")
    assert list(result) == [
        "query",
        "results",
        "warnings",
        "retrievalMethod",
        "scanned",
        "truncated",
        # Beyond the contract (docs/compatibility/compound.md, added after its fields): a
        # complete-answer count.
        "total",
        "resultsTruncated",
    ]
    item = result["results"][0]
    assert list(item) == [
        "id",
        "title",
        "tags",
        "path",
        "digest",
        "score",
        "summary",
        "evidence",
        "evidenceStatus",
        "changedFiles",
        "evidenceFiles",
        "contentStatus",
        "warnings",
    ]
    assert os.path.isabs(item["path"])
    assert len(item["summary"]) <= LIMITS.summary_length
    assert item["evidence"]["source"] == "self-reported"
    assert item["evidence"]["executedByHelper"] is False


def test_evidence_strings_are_truncated(workspace: Path, write_record: Any) -> None:
    neutral(
        write_record,
        workspace,
        "one",
        title="Zebra",
        verification={"command": "c" * 2000, "result": "r"},
    )
    evidence = recall(workspace, "zebra")["results"][0]["evidence"]
    assert len(evidence["command"]) == LIMITS.evidence_string_length


def test_missing_corpus_returns_empty_and_creates_nothing(workspace: Path) -> None:
    before = sorted(os.listdir(workspace))
    result = recall(workspace, "anything")
    assert result["results"] == [] and result["scanned"] == 0 and result["truncated"] is False
    assert sorted(os.listdir(workspace)) == before


def test_empty_corpus_returns_empty(workspace: Path, corpus_of: Any) -> None:
    corpus_of(workspace).mkdir(parents=True)
    assert recall(workspace, "anything")["results"] == []


def test_symlinked_corpus_is_refused(workspace: Path, tmp_path: Path) -> None:
    (tmp_path / "other").mkdir()
    (workspace / "docs").symlink_to(tmp_path / "other")
    with pytest.raises(SymlinkRejectedError):
        recall(workspace, "anything")


def test_modified_note_is_reported_in_top_level_warnings(
    workspace: Path, write_record: Any
) -> None:
    location = neutral(write_record, workspace, "edited", title="Zebra")
    location.write_text(location.read_text() + "\nExtra claim added by hand.\n")
    unrelated = recall(workspace, "giraffe")
    assert unrelated["results"] == []
    assert any("'edited'" in w and "modified" in w for w in unrelated["warnings"])
    hit = recall(workspace, "zebra")["results"][0]
    assert hit["contentStatus"] == "modified" and hit["warnings"]


def test_changed_evidence_is_reported_per_result(workspace: Path, write_record: Any) -> None:
    neutral(write_record, workspace, "one", title="Zebra")
    (workspace / "src/login.js").write_text("moved on\n")
    item = recall(workspace, "zebra")["results"][0]
    assert item["evidenceStatus"] == "changed"
    assert item["changedFiles"] == ["src/login.js"]
    assert item["evidenceFiles"] == [{"path": "src/login.js", "status": "changed"}]


def test_malformed_and_oversized_notes_are_skipped_with_warnings(
    workspace: Path, write_record: Any, corpus_of: Any
) -> None:
    neutral(write_record, workspace, "good", title="Zebra")
    corpus = corpus_of(workspace)
    (corpus / "broken.md").write_text("not a record")
    (corpus / "huge.md").write_bytes(b"x" * (LIMITS.record_bytes + 1))
    (corpus / "Bad_Name.md").write_text("x")
    (corpus / "link.md").symlink_to("good.md")
    result = recall(workspace, "zebra")
    assert [r["id"] for r in result["results"]] == ["good"]
    joined = "\n".join(result["warnings"])
    for name in ("broken.md", "huge.md", "Bad_Name.md", "link.md"):
        assert name in joined


def test_record_of_exactly_64_kib_is_accepted(workspace: Path, write_record: Any) -> None:
    location = neutral(write_record, workspace, "big", title="Zebra")
    data = location.read_bytes()
    location.write_bytes(data + b" " * (LIMITS.record_bytes - len(data)))
    result = recall(workspace, "zebra")
    assert [r["id"] for r in result["results"]] == ["big"]
    assert result["results"][0]["contentStatus"] == "consistent"


def test_warnings_are_capped_at_twenty(workspace: Path, corpus_of: Any) -> None:
    corpus = corpus_of(workspace)
    corpus.mkdir(parents=True)
    for index in range(30):
        (corpus / f"bad-{index:02d}.md").write_text("broken")
    warnings = recall(workspace, "zebra")["warnings"]
    assert len(warnings) == LIMITS.warnings
    assert warnings[-1] == "11 more warnings were omitted"


def test_scan_reads_at_most_500_sorted_names(
    workspace: Path, write_record: Any, corpus_of: Any
) -> None:
    location = neutral(write_record, workspace, "r000", title="Zebra")
    template = location.read_text()
    corpus = corpus_of(workspace)
    for index in range(1, 501):
        record_id = f"r{index:03d}"
        (corpus / f"{record_id}.md").write_text(
            template.replace('"id":"r000"', f'"id":"{record_id}"')
        )
    result = recall(workspace, "zebra", 10)
    assert result["scanned"] == 500
    assert result["truncated"] is True
    assert any("501 Markdown names" in w for w in result["warnings"])
    ids = [r["id"] for r in recall(workspace, "zebra", 10)["results"]]
    assert ids[0] == "r000"
    # r500 sorts last and is beyond the bound: it can never be returned.
    neutral(write_record, workspace, "r500", title="Zebra unique-marker")
    assert recall(workspace, "unique-marker")["results"] == []


def test_scan_stops_at_4_mib_of_accepted_record_data(workspace: Path, write_record: Any) -> None:
    # ~61 KiB consistent records: Chinese text is 3 bytes a character in each representation.
    text = "超" * 3300
    size = 0
    count = 0
    while size <= LIMITS.scan_bytes:
        location = neutral(
            write_record,
            workspace,
            f"big-{count:03d}",
            title="Zebra",
            problem=text,
            rootCause=text,
            resolution=text,
        )
        size += location.stat().st_size
        count += 1
    assert location.stat().st_size < LIMITS.record_bytes
    result = recall(workspace, "zebra", 10)
    assert result["truncated"] is True
    assert result["scanned"] == count - 1
    assert any("byte bound" in w for w in result["warnings"])


@settings(max_examples=60, deadline=None)
@given(
    text=st.text(alphabet="数据库连接池超时登录测试环境的了是 abcAB", min_size=0, max_size=40),
    query=st.text(alphabet="数据库连接池超时登录测试环境的了是 abc", min_size=1, max_size=120),
)
def test_gram_index_and_plain_substring_scores_agree(text: str, query: str) -> None:
    metadata = {
        "title": text,
        "tags": [text[:5] or "t"],
        "problem": text[::-1] or "p",
        "rootCause": text,
        "resolution": text[1:] or "r",
        "whenToUse": text,
        "files": [{"path": "src/a.js", "sha256": "a" * 64}],
    }
    terms = Terms(recall_terms(query))
    text = searchable_text(metadata)
    assert score_text(text, terms, use_gram_index=True) == score_text(
        text, terms, use_gram_index=False
    )


def test_gram_index_agrees_when_many_short_han_terms_match_per_field() -> None:
    text = "数据库连接池耗尽导致登录超时测试环境的配置错误缓存失效重试退避死锁事务"
    metadata = {
        "title": text[:20],
        "tags": [text[5:15], "login"],
        "problem": text,
        "rootCause": text[::-1],
        "resolution": text[10:],
        "whenToUse": text[:30],
        "files": [{"path": "src/数据库.js", "sha256": "a" * 64}],
    }
    terms = Terms(recall_terms(text + " login"))
    assert len(terms.short_han) > 24
    searchable = searchable_text(metadata)
    indexed = score_text(searchable, terms, use_gram_index=True)
    assert indexed == score_text(searchable, terms, use_gram_index=False)
    assert indexed > 0


def test_astral_ideographs_score_the_same_both_ways() -> None:
    text = "𠀀𠀁𠀂数据𠀃库"
    metadata = {
        "title": text,
        "tags": ["𠀁𠀂"],
        "problem": text * 3,
        "rootCause": "x",
        "resolution": "y",
        "whenToUse": "𠀂",
        "files": [{"path": "a.js", "sha256": "a" * 64}],
    }
    # Many common characters push the query over the gram-index threshold.
    common = "的是了在有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工"
    query = "𠀀𠀁𠀂数据𠀃库" + common + "𠀄"
    terms = Terms(recall_terms(query))
    searchable = searchable_text(metadata)
    indexed = score_text(searchable, terms, use_gram_index=True)
    assert indexed == score_text(searchable, terms, use_gram_index=False)
    assert indexed > 0


def test_a_field_holding_the_field_separator_is_scored_not_fatal(
    workspace: Path, write_record: Any
) -> None:
    # Text fields accept control characters; U+001E once split a record into eight
    # "fields" and every recall of the corpus failed with internal-error.
    neutral(write_record, workspace, "one", title="zebra\x1eone", tags=["t\x1ezebra"])
    neutral(write_record, workspace, "two", title="Zebra two")
    result = recall(workspace, "zebra one")
    assert [(r["id"], r["score"]) for r in result["results"]] == [("one", 8 + 8 + 10), ("two", 8)]
