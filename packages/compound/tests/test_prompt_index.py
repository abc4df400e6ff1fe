"""The prompt hook's cached ranking is recall's ranking, whatever happened to the corpus."""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from pathlib import Path

import pytest

from dsh_common.paths import resolve_workspace
from dsh_compound.prompt_index import cache_path, ranked
from dsh_compound.retrieval import recall

WORDS = ["login", "timeout", "cache", "redis", "deploy", "登录", "超时", "缓存", "数据库", "pool"]
QUERIES = [
    "login timeout",
    "Why does the redis cache time out?",
    "登录超时怎么办",
    "数据库连接池 pool",
    "deploy",
    "nothing matches zebra",
]


def expected(root: Path, query: str) -> list[tuple[int, str]]:
    return [(hit["score"], hit["id"]) for hit in recall(root, query, 10)["results"]]


def check_parity(root: Path) -> None:
    workspace = resolve_workspace(root)
    for query in QUERIES:
        assert ranked(workspace, query, 10) == expected(root, query), query


@pytest.fixture
def corpus(workspace: Path, write_record: Callable[..., Path]) -> Path:
    rng = random.Random(5)
    for index in range(40):
        words = rng.sample(WORDS, 4)
        write_record(
            workspace,
            id=f"lesson-{index:02d}",
            title=" ".join(words[:2]),
            tags=words[1:3],
            whenToUse=" ".join(words),
            problem=" ".join(rng.sample(WORDS, 3)),
        )
    return workspace


def test_first_and_cached_rankings_equal_recall(corpus: Path) -> None:
    check_parity(corpus)  # builds the cache
    cache = cache_path(resolve_workspace(corpus))
    assert cache.is_file() and cache.stat().st_mode & 0o077 == 0
    check_parity(corpus)  # from the cache


def test_rankings_follow_edits_deletions_and_broken_notes(
    corpus: Path, write_record: Callable[..., Path], corpus_of: Callable[[Path], Path]
) -> None:
    check_parity(corpus)
    directory = corpus_of(corpus)
    write_record(corpus, id="lesson-03", title="zebra login zebra", tags=["zebra"])
    (directory / "lesson-05.md").unlink()
    with (directory / "lesson-07.md").open("ab") as handle:
        handle.write(b"\nhand edit\n")  # body drifts: still scored, as recall does
    (directory / "lesson-08.md").write_bytes(b"---\nnot a record\n")  # malformed: skipped
    (directory / "big.md").write_bytes(b"x" * (64 * 1024 + 1))  # oversized: skipped
    (directory / "link.md").symlink_to(directory / "lesson-01.md")  # a link: skipped
    (directory / "Bad_Name.md").write_bytes((directory / "lesson-02.md").read_bytes())
    QUERIES.append("zebra")
    try:
        check_parity(corpus)
        check_parity(corpus)
    finally:
        QUERIES.pop()


def test_a_broken_cache_is_rebuilt(corpus: Path) -> None:
    check_parity(corpus)
    cache = cache_path(resolve_workspace(corpus))
    cache.write_bytes(b"{not json")
    check_parity(corpus)
    cache.write_bytes(b'{"version": 1, "workspace": "elsewhere", "records": {}}')
    check_parity(corpus)


def test_more_names_than_the_scan_reads_falls_back_to_recall(
    workspace: Path, write_record: Callable[..., Path], corpus_of: Callable[[Path], Path]
) -> None:
    write_record(workspace)
    directory = corpus_of(workspace)
    for index in range(501):
        os.link(directory / "login-timeout.md", directory / f"copy-{index:03d}.md")
    assert ranked(resolve_workspace(workspace), "login", 3) is None


def test_the_4_mib_bound_stops_both_at_the_same_record(
    workspace: Path, write_record: Callable[..., Path]
) -> None:
    rng = random.Random(9)
    for index in range(180):
        text = " ".join(rng.choice([*WORDS[:5], "alpha", "beta", "gamma"]) for _ in range(700))
        write_record(
            workspace,
            id=f"big-{index:03d}",
            problem=text[:4000],
            rootCause=text[:4000],
            resolution=text[:4000],
            whenToUse=text[:2000],
        )
    assert recall(workspace, "login", 10)["truncated"] is True
    check_parity(workspace)
    check_parity(workspace)


def test_indexed_records_give_check_s_stale_lessons(
    corpus: Path, write_record: Callable[..., Path], corpus_of: Callable[[Path], Path]
) -> None:
    from dsh_compound.evidence import evidence_report
    from dsh_compound.prompt_index import indexed_records
    from dsh_compound.review import check

    (corpus / "src" / "login.js").write_text("changed\n")
    write_record(corpus, id="only-tests", files=["tests/login.test.js"])
    (corpus_of(corpus) / "lesson-09.md").write_bytes(b"---\nbroken\n")
    for _ in range(2):  # cold, then from the cache
        workspace = resolve_workspace(corpus)
        records = indexed_records(workspace)
        assert records is not None
        stale = [r.id for r in records if evidence_report(workspace, r.files)["changedFiles"]]
        assert stale == [i["id"] for i in check(corpus)["needsReview"] if i["changedFiles"]]
        assert "only-tests" not in stale and "lesson-09" not in stale and len(stale) == 39
