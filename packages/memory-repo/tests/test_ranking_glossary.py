"""Cross-language ranking: glossary translations (dsh_memory.search.glossary) in scoring, search."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh_memory.search import glossary, scoring
from dsh_memory.search.search import search


def write(root: Path, relative: str, body: str, record_id: str) -> None:
    target = root / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(
        f"---\nschema_version: 1\nid: {record_id}\ntype: fact\n---\n{body}", encoding="utf-8"
    )


@pytest.fixture
def root(tmp_path: Path) -> Path:
    memory = tmp_path / "memory"
    (memory / ".sync").mkdir(parents=True)
    return memory


def ranked(root: Path, query: str, scope: str = "all") -> list[dict[str, object]]:
    """The results, after checking the index and the scan give exactly the same ones."""
    indexed = search(root, query, 20, scope)
    scanned = search(root, query, 20, scope, use_index=False)
    assert indexed["retrieval"]["mode"] == "index"
    assert indexed["results"] == scanned["results"]
    assert indexed["count"] == scanned["count"]
    results = indexed["results"]
    assert isinstance(results, list)
    return results


def test_english_query_finds_the_chinese_note_below_the_english_one(root: Path) -> None:
    write(root, "handbook/en.md", "cache invalidation rules\n", "a/en")
    write(root, "handbook/zh.md", "缓存失效规则\n", "a/zh")
    write(root, "handbook/other.md", "release checklist\n", "a/other")
    results = ranked(root, "cache invalidation")
    assert [r["path"] for r in results] == ["handbook/en.md", "handbook/zh.md"]
    english, chinese = results
    assert isinstance(english["score"], float) and isinstance(chinese["score"], float)
    assert 0 < chinese["score"] < english["score"]
    parts = chinese["score_components"]
    assert isinstance(parts, dict)
    assert parts["bm25"] > 0 and parts["coverage"] > 0
    assert parts["phrase"] == parts["id"] == 0.0
    assert round(sum(parts.values()), 6) == chinese["score"]


def test_chinese_query_finds_an_english_note(root: Path) -> None:
    write(root, "handbook/release.md", "release checklist: bump versions\n", "ops/release")
    write(root, "handbook/cache.md", "cache notes\n", "ops/cache")
    results = ranked(root, "发布前要做的事")
    assert [r["path"] for r in results] == ["handbook/release.md"]


def test_note_in_the_query_language_outranks_its_translation(root: Path) -> None:
    # Same length, same shape: only the language differs, so only the weight decides.
    write(root, "handbook/a.md", "缓存 设计\n", "x/a")
    write(root, "handbook/b.md", "cache design\n", "x/b")
    assert [r["path"] for r in ranked(root, "cache")] == ["handbook/b.md", "handbook/a.md"]
    assert [r["path"] for r in ranked(root, "缓存")] == ["handbook/a.md", "handbook/b.md"]


def test_having_the_word_and_its_translation_counts_once(root: Path) -> None:
    # Equal lengths (3 words / Han characters in the body): a bilingual note is no better
    # an answer than one that has the query's word, so the two tie and path order decides.
    write(root, "handbook/b-both.md", "cache 缓存\n", "x/b")
    write(root, "handbook/a-word.md", "cache notes here\n", "x/a")
    first, second = ranked(root, "cache")
    assert [first["path"], second["path"]] == ["handbook/a-word.md", "handbook/b-both.md"]
    assert first["score"] == second["score"]
    assert first["score_components"] == second["score_components"]


def test_translations_follow_the_query_terms_and_are_bounded() -> None:
    plan = scoring.plan_query("cache index lock release deploy backup")
    own = [term for term in plan.terms if not term.translation]
    added = [term for term in plan.terms if term.translation]
    assert plan.terms[: len(own)] == tuple(own)
    assert [term.text for term in own] == ["cache", "index", "lock", "release", "deploy", "backup"]
    assert {term.weight for term in own} == {1.0}
    # Four translated words (each weighing EXPANSION_WEIGHT, shared by its bigrams).
    assert [term.text for term in added] == ["缓存", "索引", "锁", "发布"]
    assert {term.weight for term in added} == {scoring.EXPANSION_WEIGHT}
    assert [term.group for term in added] == [0, 1, 2, 3]
    # A four-character translation is three bigram terms sharing one word's weight.
    daemon = [term for term in scoring.plan_query("daemon").terms if term.translation]
    assert [term.text for term in daemon] == ["守护", "护进", "进程"]
    assert {term.weight for term in daemon} == {scoring.EXPANSION_WEIGHT / 3}


def test_translation_gathering_has_its_own_budget() -> None:
    plan = scoring.plan_query("cache")
    word, translation = plan.terms
    assert translation.translation
    budget = scoring.TRANSLATION_CANDIDATES
    assert scoring.gathering_terms(plan, {word: 5, translation: budget}) == [word, translation]
    # A common translation would bring in records sharing none of the query's words.
    assert scoring.gathering_terms(plan, {word: 5, translation: budget + 1}) == [word]
    # When the query's own words match nothing, the translation is all there is.
    assert scoring.gathering_terms(plan, {word: 0, translation: budget * 10}) == [translation]


def test_common_translation_scores_gathered_records_but_gathers_none(root: Path) -> None:
    # More Chinese notes than the translation budget: none of them becomes a candidate, but
    # a note gathered by the English word still gets its translation's score.
    for index in range(scoring.TRANSLATION_CANDIDATES + 1):
        write(root, f"handbook/zh-{index:03}.md", "缓存\n", f"zh/n{index}")
    write(root, "handbook/en.md", "cache design\n", "en/a")
    write(root, "handbook/mixed.md", "缓存 lock\n", "en/b")
    assert [r["path"] for r in ranked(root, "cache")] == ["handbook/en.md"]
    paths = [r["path"] for r in ranked(root, "cache lock")]
    assert paths == ["handbook/mixed.md", "handbook/en.md"]


def test_han_token_is_translated_by_every_glossary_word_it_contains() -> None:
    stem = scoring.stem
    assert glossary.expansions("互斥锁", han=True, stem=stem) == ["mutex", "lock"]
    assert glossary.expansions("数据库索引优化实践", han=True, stem=stem) == [
        "database",
        "index",
        "optimization",
    ]
    assert glossary.expansions("你好", han=True, stem=stem) == []


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("cache", ["缓存"]),
        ("caches", ["缓存"]),
        ("policies", ["策略"]),
        ("deployments", ["部署"]),
        ("scheduling", ["调度"]),
        ("hello", []),
    ],
)
def test_english_word_is_translated_by_its_forms(word: str, expected: list[str]) -> None:
    assert glossary.expansions(word, han=False, stem=scoring.stem) == expected


def test_glossary_entries_are_single_tokens_and_unambiguous() -> None:
    english_stems: dict[str, int] = {}
    chinese: dict[str, int] = {}
    for number, (english_words, chinese_words) in enumerate(glossary.ENTRIES):
        assert english_words and chinese_words
        for word in english_words:
            # Lowercase ASCII words: the query side normalises to exactly this token.
            assert word.isascii() and word.isalpha() and word.islower(), word
            assert english_stems.setdefault(scoring.stem(word), number) == number, word
        for word in chinese_words:
            assert scoring.normalize(word).split() == [word] and scoring.is_han(word), word
            assert chinese.setdefault(word, number) == number, word
            # One Han character is too ambiguous to translate, but for these two.
            assert len(word) > 1 or word in {"锁", "旧"}, word
    assert 150 <= len(glossary.ENTRIES) <= 300
