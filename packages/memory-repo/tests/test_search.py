"""memory.search: scoring, Chinese tokenisation, exclusions, scopes, request validation."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from dsh_memory.errors import SearchInvalidRequestError
from dsh_memory.search.search import query_terms, search
from dsh_memory.store.frontmatter import legacy_id


def record(
    root: Path,
    path: str,
    body: str,
    *,
    record_id: str,
    record_type: str = "observation",
    extra: str = "",
) -> None:
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(
        f"---\nschema_version: 1\nid: {record_id}\ntype: {record_type}\n"
        f"updated_at: 2026-08-10\n{extra}---\n{body}",
        encoding="utf-8",
    )


@pytest.fixture
def root(tmp_path: Path) -> Path:
    memory = tmp_path / "memory"
    (memory / ".sync").mkdir(parents=True)
    (memory / "summary.md").write_text("codegen 缓存 navigation\n", encoding="utf-8")
    return memory


def paths(value: dict[str, object]) -> list[str]:
    results = value["results"]
    assert isinstance(results, list)
    return [result["path"] for result in results]


def test_spec_example_scores_five_with_snippet_and_citation(root: Path) -> None:
    record(
        root,
        "handbook/project.md",
        "We chose TypeScript for the codegen pipeline.\n",
        record_id="project/codegen",
        record_type="decision",
        extra="source_rollouts:\n  - rollouts/2026-08-10-session.md\n",
    )
    value = search(root, "codegen")
    assert value["count"] == 1
    (result,) = value["results"]
    components = result["score_components"]
    assert set(components) == {"phrase", "id", "bm25", "coverage"}
    assert components["phrase"] == 1.0  # the query is a word of the body
    assert components["id"] == 1.0  # ... and of the id
    assert components["coverage"] == 1.0
    assert result["score"] == round(sum(components.values()), 6)
    assert result["id"] == "project/codegen"
    assert result["type"] == "decision"
    assert result["updated_at"] == "2026-08-10"
    assert result["snippet"] == "We chose TypeScript for the codegen pipeline."
    assert result["citation"] == "[source: handbook/project.md · id: project/codegen]"
    assert result["source_rollouts"] == ["rollouts/2026-08-10-session.md"]
    assert result["content_hash"].startswith("sha256:")
    assert result["generation"] == 1


def test_type_equal_to_a_word_finds_the_record(root: Path) -> None:
    record(root, "handbook/a.md", "nothing here\n", record_id="a", record_type="decision")
    record(root, "handbook/b.md", "nothing here\n", record_id="b", record_type="fact")
    assert paths(search(root, "decision")) == ["handbook/a.md"]


def test_repeating_a_query_word_does_not_weigh_it_twice(root: Path) -> None:
    record(root, "handbook/a.md", "cache rules\n", record_id="a")
    (once,) = search(root, "cache")["results"]
    (twice,) = search(root, "cache CACHE")["results"]
    for name in ("bm25", "coverage"):
        assert twice["score_components"][name] == once["score_components"][name]


def test_equal_scores_are_ordered_by_path(root: Path) -> None:
    record(root, "rollouts/b.md", "lock\n", record_id="b")
    record(root, "handbook/z.md", "lock\n", record_id="z")
    record(root, "handbook/lock.md", "lock\n", record_id="infra/lock")
    assert paths(search(root, "lock")) == ["handbook/lock.md", "handbook/z.md", "rollouts/b.md"]


def test_id_match_ranks_above_a_body_match(root: Path) -> None:
    record(root, "handbook/a.md", "redaction of tokens\n", record_id="ops/notes")
    record(root, "handbook/z.md", "tokens\n", record_id="sec/redaction")
    assert paths(search(root, "sec/redaction"))[0] == "handbook/z.md"


def test_exact_phrase_ranks_above_scattered_words(root: Path) -> None:
    record(root, "handbook/a.md", "rank the fusion of reciprocal scores\n", record_id="a")
    record(root, "handbook/z.md", "reciprocal rank fusion merges lists\n", record_id="z")
    value = search(root, "reciprocal rank fusion")
    assert paths(value) == ["handbook/z.md", "handbook/a.md"]
    assert [r["score_components"]["phrase"] for r in value["results"]] == [1.0, 0.0]


def test_partial_match_ranks_below_a_full_match(root: Path) -> None:
    record(root, "handbook/a.md", "cache notes\n", record_id="a")
    record(root, "handbook/b.md", "eviction of the cache\n", record_id="b")
    record(root, "handbook/c.md", "unrelated\n", record_id="c")
    value = search(root, "cache eviction timing")
    assert paths(value) == ["handbook/b.md", "handbook/a.md"]
    first, second = (r["score_components"]["coverage"] for r in value["results"])
    assert 0 < second < first < 1


def test_english_suffixes_are_stripped_and_words_match_by_prefix(root: Path) -> None:
    record(root, "handbook/a.md", "chunked delivery of candidates\n", record_id="a")
    record(root, "handbook/b.md", "a flock of birds\n", record_id="b")
    assert paths(search(root, "chunks")) == ["handbook/a.md"]
    assert paths(search(root, "candidate")) == ["handbook/a.md"]
    assert paths(search(root, "lock")) == []  # a word start, not any substring


def test_rarer_word_weighs_more(root: Path) -> None:
    for index in range(6):
        record(root, f"handbook/common{index}.md", "release notes\n", record_id=f"c{index}")
    record(root, "handbook/x.md", "release zebra\n", record_id="x")
    record(root, "handbook/y.md", "notes zebra\n", record_id="y")
    record(root, "handbook/w.md", "release notes\n", record_id="w")
    # x and y share the rare "zebra"; w only the common words.
    top = paths(search(root, "zebra release notes"))[:3]
    assert set(top[:2]) == {"handbook/x.md", "handbook/y.md"}


def test_chinese_phrase_finds_record_with_a_particle_inside(root: Path) -> None:
    record(root, "handbook/cache.md", "缓存雪崩的预防：随机过期时间。\n", record_id="infra/cache")
    assert paths(search(root, "缓存雪崩预防")) == ["handbook/cache.md"]
    assert paths(search(root, "缓存雪崩")) == ["handbook/cache.md"]


def test_han_token_expands_into_bigrams() -> None:
    # The query's own terms come first; glossary translations (scoring.plan_query) follow.
    assert query_terms("rename 原子替换")[:4] == ["rename", "原子", "子替", "替换"]
    assert query_terms("锁") == ["锁", "lock"]
    assert query_terms("Scheduling v2")[:2] == ["schedul", "v2"]


def test_exact_chinese_phrase_outranks_scattered_bigrams(root: Path) -> None:
    record(root, "handbook/a.md", "目录很大，锁住了。\n", record_id="a")
    record(root, "handbook/b.md", "使用目录锁回收。\n", record_id="b")
    assert paths(search(root, "目录锁"))[0] == "handbook/b.md"


def test_mixed_query_ranks_record_matching_both_languages_first(root: Path) -> None:
    record(root, "handbook/a.md", "先写临时文件，再 rename 原子替换。\n", record_id="a")
    record(root, "handbook/b.md", "rename the branch\n", record_id="b")
    record(root, "handbook/c.md", "原子操作\n", record_id="c")
    assert paths(search(root, "rename 原子替换"))[0] == "handbook/a.md"


def test_expired_record_is_excluded_on_its_expiry_day(root: Path) -> None:
    record(root, "handbook/a.md", "alpha\n", record_id="a", extra="expires_at: 2026-08-20\n")
    now = dt.datetime(2026, 8, 20, 0, 0, tzinfo=dt.UTC)
    assert search(root, "alpha", now=now)["count"] == 0
    earlier = dt.datetime(2026, 8, 19, 23, 59, tzinfo=dt.UTC)
    assert search(root, "alpha", now=earlier)["count"] == 1


def test_invalid_metadata_record_is_excluded(root: Path) -> None:
    (root / "handbook").mkdir()
    (root / "handbook/bad.md").write_text("---\nschema_version: 2\nid: a\n---\nalpha\n")
    record(root, "handbook/good.md", "alpha\n", record_id="good")
    assert paths(search(root, "alpha")) == ["handbook/good.md"]


def test_summary_is_never_a_result(root: Path) -> None:
    assert search(root, "navigation")["count"] == 0


def test_legacy_record_is_found_under_its_legacy_id(root: Path) -> None:
    (root / "handbook").mkdir()
    (root / "handbook/old.md").write_text("old codegen notes\n", encoding="utf-8")
    (result,) = search(root, "codegen")["results"]
    assert result["id"] == legacy_id("handbook/old.md")
    assert result["type"] is None
    assert result["citation"] == f"[source: handbook/old.md · id: {legacy_id('handbook/old.md')}]"


def test_legacy_synthetic_id_is_not_matched(root: Path) -> None:
    (root / "handbook").mkdir()
    (root / "handbook/old.md").write_text("nothing\n", encoding="utf-8")
    assert search(root, "legacy")["count"] == 0


@pytest.mark.parametrize(
    ("scope", "expected"),
    [
        ("active", ["handbook/a.md", "rollouts/b.md"]),
        ("archive", ["archive/c.md"]),
        ("all", ["archive/c.md", "handbook/a.md", "rollouts/b.md"]),
    ],
)
def test_scope_selects_folders(root: Path, scope: str, expected: list[str]) -> None:
    record(root, "handbook/a.md", "alpha\n", record_id="a")
    record(root, "rollouts/b.md", "alpha\n", record_id="b")
    record(root, "archive/c.md", "alpha\n", record_id="c")
    assert paths(search(root, "alpha", 20, scope)) == expected


def test_count_is_all_matches_and_limit_cuts_results(root: Path) -> None:
    for index in range(5):
        record(root, f"handbook/n{index}.md", "alpha\n", record_id=f"n{index}")
    value = search(root, "alpha", "2")
    assert value["count"] == 5
    assert len(value["results"]) == 2


def test_snippet_starts_forty_characters_before_the_hit(root: Path) -> None:
    body = "x" * 100 + " needle " + "y" * 200 + "\n"
    record(root, "handbook/a.md", body, record_id="a")
    snippet = search(root, "needle")["results"][0]["snippet"]
    assert snippet.startswith("x" * 39 + " needle")
    assert len(snippet) == 160


@pytest.mark.parametrize("query", ["", "   ", "!!! ---", "x" * 1001, None, 42])
def test_bad_query_is_an_invalid_request(root: Path, query: object) -> None:
    with pytest.raises(SearchInvalidRequestError) as caught:
        search(root, query)
    assert caught.value.code == "search-invalid-request"


@pytest.mark.parametrize("limit", ["21", "0", "-1", "abc", "", 0, 21, True, 2.5])
def test_bad_limit_is_an_invalid_request(root: Path, limit: object) -> None:
    with pytest.raises(SearchInvalidRequestError):
        search(root, "alpha", limit)


def test_bad_scope_is_an_invalid_request(root: Path) -> None:
    with pytest.raises(SearchInvalidRequestError):
        search(root, "alpha", 20, "everything")


def test_invalid_request_writes_nothing(root: Path) -> None:
    with pytest.raises(SearchInvalidRequestError):
        search(root, "alpha", "99")
    assert list((root / ".sync").iterdir()) == []


def test_symlinked_record_is_never_followed(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "secret.md"
    outside.write_text("---\nschema_version: 1\nid: secret\n---\nalpha secret\n")
    (root / "handbook").mkdir()
    (root / "handbook/link.md").symlink_to(outside)
    assert search(root, "secret", use_index=False)["count"] == 0
    assert search(root, "secret")["count"] == 0


def test_search_writes_nothing_but_its_index(root: Path) -> None:
    record(root, "handbook/a.md", "alpha\n", record_id="a")
    search(root, "alpha")
    assert sorted(path.name for path in (root / ".sync").iterdir()) == ["search-index.sqlite"]


def test_oversized_record_is_skipped(root: Path) -> None:
    record(root, "handbook/big.md", "alpha " * 200_000, record_id="big")
    record(root, "handbook/a.md", "alpha\n", record_id="a")
    assert paths(search(root, "alpha")) == ["handbook/a.md"]
