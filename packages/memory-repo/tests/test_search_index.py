"""The FTS5 search index: owner-only, git-excluded, refreshed on change, never changes results."""

from __future__ import annotations

import importlib.util
import os
import random
import stat
from pathlib import Path
from typing import Any

import pytest
from dsh_test_support.gitcmd import commit_all, git
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_memory.search import scoring, search_index
from dsh_memory.search.search import query_terms, search


def _bench_corpus() -> Any:
    """memory's bench/corpus.py under a name of its own (another package's bench corpus
    may already be the module ``corpus`` in this test process)."""
    path = Path(__file__).resolve().parents[1] / "bench" / "corpus.py"
    spec = importlib.util.spec_from_file_location("dsh_memory_bench_corpus", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


record_text = _bench_corpus().record_text


def write(root: Path, relative: str, text: str) -> None:
    target = root / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


def note(record_id: str, body: str, extra: str = "") -> str:
    return f"---\nschema_version: 1\nid: {record_id}\ntype: fact\n{extra}---\n{body}"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    memory = tmp_path / "memory"
    (memory / ".sync").mkdir(parents=True)
    write(memory, "handbook/cache.md", note("infra/cache", "缓存雪崩的预防 cache policy\n"))
    write(memory, "rollouts/lock.md", note("infra/lock", "目录锁 directory lock\n"))
    write(memory, "archive/old.md", note("old/lock", "flock lock\n"))
    return memory


def without_retrieval(value: dict[str, object]) -> dict[str, object]:
    return {key: item for key, item in value.items() if key != "retrieval"}


def test_first_search_builds_an_owner_only_index(root: Path) -> None:
    value = search(root, "cache")
    assert value["retrieval"] == {"mode": "index", "indexState": "rebuilt"}
    index = search_index.index_path(root)
    assert stat.S_IMODE(index.stat().st_mode) == 0o600


def test_second_search_uses_the_fresh_index(root: Path) -> None:
    search(root, "cache")
    assert search(root, "cache")["retrieval"] == {"mode": "index", "indexState": "fresh"}


def test_changed_record_is_reindexed_before_searching(root: Path) -> None:
    search(root, "cache")
    write(root, "handbook/cache.md", note("infra/cache", "完全不同的内容 zebra\n"))
    value = search(root, "zebra")
    assert value["retrieval"]["indexState"] == "rebuilt"
    assert [result["path"] for result in value["results"]] == ["handbook/cache.md"]
    assert search(root, "policy")["count"] == 0


def test_deleted_record_leaves_the_index(root: Path) -> None:
    search(root, "lock", 20, "all")
    (root / "archive/old.md").unlink()
    value = search(root, "lock", 20, "all")
    assert [result["path"] for result in value["results"]] == ["rollouts/lock.md"]


def test_corrupt_index_gives_scan_results_and_is_repaired(root: Path) -> None:
    search(root, "lock")
    index = search_index.index_path(root)
    index.write_bytes(b"this is not a database" * 100)
    expected = without_retrieval(search(root, "lock", 20, "all", use_index=False))
    value = search(root, "lock", 20, "all")
    assert without_retrieval(value) == expected
    assert search(root, "lock", 20, "all")["retrieval"] == {"mode": "index", "indexState": "fresh"}


def test_symlink_in_place_of_the_index_is_replaced_not_followed(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.sqlite"
    outside.write_bytes(b"keep me")
    search_index.index_path(root).symlink_to(outside)
    assert search(root, "lock")["count"] == 1
    assert outside.read_bytes() == b"keep me"
    assert not search_index.index_path(root).is_symlink()


def test_missing_sync_directory_degrades_to_a_scan_with_same_results(root: Path) -> None:
    os.rmdir(root / ".sync")
    value = search(root, "lock", 20, "all")
    assert value["retrieval"] == {"mode": "scan", "indexState": "unavailable"}
    expected = without_retrieval(search(root, "lock", 20, "all", use_index=False))
    assert without_retrieval(value) == expected


def test_index_write_leaves_no_temporary_files(root: Path) -> None:
    search(root, "lock")
    write(root, "handbook/new.md", note("new", "lock again\n"))
    search(root, "lock")
    names = sorted(path.name for path in (root / ".sync").iterdir())
    assert names == ["search-index.sqlite"]


def test_index_is_ignored_by_git_in_an_initialised_repository(memory_root: Path) -> None:
    write(memory_root, "handbook/a.md", note("a", "alpha\n"))
    commit_all(memory_root, "a")
    assert search(memory_root, "alpha")["retrieval"]["mode"] == "index"
    status = git(memory_root, "status", "--porcelain", "--ignored=no")
    assert status == ""
    exclude = (memory_root / ".git/info/exclude").read_text()
    assert ".sync/search-index.sqlite" in exclude.splitlines()


def test_document_tokens_are_words_han_bigrams_run_ends_and_the_folder() -> None:
    from dsh_memory.search.scoring import record_text
    from dsh_memory.store.records import Record

    record = Record(path="handbook/a.md", signature="s", valid=True, id="a", body="缓存 cache 锁")
    tokens = search_index.document_tokens("handbook", record_text(record)).split()
    assert tokens[0] == search_index.FOLDER_MARK + "handbook"
    # 缓 is found as the start of 缓存; 存 and 锁 end their runs.
    assert set(tokens[1:]) == {"a", "存", "缓存", "锁", "cache"}


_WORDS = ["cache", "lock", "rename", "v2", "a", "缓存", "雪崩", "目录锁", "原子替换", "的", "锁"]


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    seed=st.integers(min_value=0, max_value=10_000),
    size=st.integers(min_value=1, max_value=25),
    query=st.lists(st.sampled_from(_WORDS), min_size=1, max_size=3).map(" ".join),
    scope=st.sampled_from(["active", "archive", "all"]),
)
def test_indexed_and_scanned_results_are_identical(
    tmp_path_factory: pytest.TempPathFactory,
    *,
    seed: int,
    size: int,
    query: str,
    scope: str,
) -> None:
    memory = tmp_path_factory.mktemp("corpus")
    (memory / ".sync").mkdir()
    rng = random.Random(seed)
    for index in range(size):
        path, text = record_text(rng, index)
        if rng.random() < 0.3:
            text += " ".join(rng.sample(_WORDS, 3)) + "\n"
        write(memory, path, text)
    scanned = search(memory, query, 20, scope, use_index=False)
    indexed = search(memory, query, 20, scope)
    assert indexed["retrieval"]["mode"] == "index"
    assert without_retrieval(indexed) == without_retrieval(scanned)
    # After an edit the refreshed index still agrees with a scan.
    path, text = record_text(rng, 0)
    write(memory, path, text + rng.choice(_WORDS) + "\n")
    assert without_retrieval(search(memory, query, 20, scope)) == without_retrieval(
        search(memory, query, 20, scope, use_index=False)
    )


def test_long_query_uses_its_first_terms_only_and_matches_a_scan(root: Path) -> None:
    query = " ".join(f"word{index}" for index in range(70)) + " 缓存雪崩的预防 lock"
    assert len(query_terms(query)) == scoring.MAX_QUERY_TERMS
    indexed = search(root, query, 20, "all")
    assert indexed["retrieval"]["mode"] == "index"
    assert without_retrieval(indexed) == without_retrieval(
        search(root, query, 20, "all", use_index=False)
    )
    # The terms after the first 32 (here every record's words) are not searched.
    assert indexed["count"] == 0
    assert search(root, "缓存雪崩的预防 lock", 20, "all")["count"] == 3


def test_index_stays_consistent_across_edits_of_an_empty_legacy_record(root: Path) -> None:
    import sqlite3

    (root / "handbook/empty.md").write_text("")
    search(root, "cache")
    (root / "handbook/empty.md").write_text("now about kiwi\n")
    assert [result["path"] for result in search(root, "kiwi")["results"]] == ["handbook/empty.md"]
    write(root, "rollouts/lock.md", note("infra/lock", "changed again\n"))
    search(root, "kiwi")
    connection = sqlite3.connect(search_index.index_path(root))
    try:
        connection.execute("INSERT INTO terms(terms) VALUES ('integrity-check')")
    finally:
        connection.close()


@pytest.mark.parametrize("name", ["mem#ory", "mem?ory", "mem?mode=rwc#x", "mem%23ory", "m em"])
def test_root_with_uri_characters_uses_its_index_and_creates_nothing_outside(
    tmp_path: Path, name: str
) -> None:
    parent = tmp_path / "parent"
    memory = parent / name
    (memory / ".sync").mkdir(parents=True)
    write(memory, "handbook/lock.md", note("infra/lock", "directory lock\n"))
    before = sorted(path.name for path in parent.iterdir())
    assert search(memory, "lock")["retrieval"] == {"mode": "index", "indexState": "rebuilt"}
    # The read-only connection finds the index it wrote: the second search is served fresh.
    assert search(memory, "lock")["retrieval"] == {"mode": "index", "indexState": "fresh"}
    assert sorted(path.name for path in parent.iterdir()) == before
    assert sorted(path.name for path in (memory / ".sync").iterdir()) == ["search-index.sqlite"]
    assert not list(tmp_path.glob("**/mem")) and not (parent / "mem").exists()


def test_words_past_the_searchable_body_bound_are_not_found_by_either_path(root: Path) -> None:
    body = "filler " * (scoring.MAX_SEARCHABLE_BODY_CHARS // 7) + "needle\n"
    write(root, "handbook/long.md", note("long", "a long note " + body))
    write(root, "handbook/short.md", note("short", "a needle here\n"))
    for use_index in (True, False):
        value = search(root, "needle", 20, "all", use_index=use_index)
        assert [r["path"] for r in value["results"]] == ["handbook/short.md"]


def test_candidates_are_gathered_rarest_term_first_within_the_bound() -> None:
    plan = scoring.plan_query("alpha beta gamma delta")
    alpha, beta, gamma, delta = plan.terms
    bound = scoring.MAX_CANDIDATES
    df = {alpha: bound, beta: 3, gamma: bound - 3, delta: 0}
    # beta (3) first, then gamma (3 + bound - 3 fits), alpha would pass the bound; delta
    # matches nothing.
    assert scoring.gathering_terms(plan, df) == [beta, gamma]
    # The rarest term is gathered even when it alone passes the bound.
    assert scoring.gathering_terms(plan, {alpha: bound + 1, beta: bound + 2}) == [alpha]


_ALPHABET = st.sampled_from(
    list("abcAB z9_-/.,'\"*()")
    + list("缓存雪崩的锁目录")
    + ["İ", "ß", "é", "\u0301", "Ａ", "ｶ", "😀", "§", "，"]
)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    bodies=st.lists(st.text(_ALPHABET, min_size=0, max_size=40), min_size=1, max_size=8),
    query=st.text(_ALPHABET, min_size=1, max_size=12).filter(
        lambda q: scoring.normalize(q).strip()
    ),
    scope=st.sampled_from(["active", "archive", "all"]),
)
def test_arbitrary_unicode_gives_identical_indexed_and_scanned_results(
    tmp_path_factory: pytest.TempPathFactory,
    *,
    bodies: list[str],
    query: str,
    scope: str,
) -> None:
    memory = tmp_path_factory.mktemp("unicode")
    (memory / ".sync").mkdir()
    folders = ["handbook", "rollouts", "archive"]
    for index, body in enumerate(bodies):
        write(memory, f"{folders[index % 3]}/n{index}.md", note(f"n{index}", body + "\n"))
    indexed = search(memory, query, 20, scope)
    assert indexed["retrieval"]["mode"] == "index"
    assert without_retrieval(indexed) == without_retrieval(
        search(memory, query, 20, scope, use_index=False)
    )


def test_index_stays_consistent_when_a_record_turns_invalid_and_back(root: Path) -> None:
    import sqlite3

    search(root, "cache")
    write(root, "handbook/cache.md", "---\nschema_version: 2\nid: infra/cache\n---\ncache\n")
    assert search(root, "cache")["count"] == 0
    write(root, "handbook/cache.md", note("infra/cache", "cache again 缓存\n"))
    assert [r["path"] for r in search(root, "缓存 cache")["results"]] == ["handbook/cache.md"]
    connection = sqlite3.connect(search_index.index_path(root))
    try:
        connection.execute("INSERT INTO terms(terms) VALUES ('integrity-check')")
    finally:
        connection.close()
