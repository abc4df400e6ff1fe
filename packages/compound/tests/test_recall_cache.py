"""The recall cache gives what the cold scan gives, whatever happens to the corpus or the cache.

Every test of this package also ends with the parity check of ``conftest.py`` on the corpora
it built; here the cache is driven through edits (same size, same second), renames,
deletions, broken and unusual notes, the scan's bounds, random corpora and operations, and
damaged, foreign or unsafe cache files.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_common.paths import resolve_workspace
from dsh_compound import corpus_index, recall_cache
from dsh_compound.limits import CORPUS_DIRECTORY
from dsh_compound.record import build_metadata, render_record
from dsh_compound.retrieval import recall

WORDS = ["login", "timeout", "cache", "redis", "deploy", "登录", "超时", "缓存", "数据库", "pool"]


def cold_recall(root: Path, query: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    original = corpus_index.read_corpus
    with monkeypatch.context() as patch:
        patch.setattr("dsh_compound.retrieval.read_corpus", lambda w: original(w, cached=False))
        return recall(root, query, 10)


def settle(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every file count as settled (as it is seconds after it was written)."""
    monkeypatch.setattr(corpus_index, "SETTLED_NS", -(10**12))


def header(root: Path) -> dict[str, Any]:
    workspace = resolve_workspace(root)
    loaded = recall_cache.load(
        recall_cache.cache_path(workspace.canonical),
        str(workspace.canonical),
        recall_cache.compatibility_key(),
    )
    assert loaded is not None
    return loaded.header


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


def test_the_cache_is_private_atomic_and_outside_the_workspace(
    corpus: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settle(monkeypatch)
    recall(corpus, "login", 3)
    path = recall_cache.cache_path(resolve_workspace(corpus).canonical)
    assert path.parent == isolated_home / ".dsh" / "cache" / "compound"
    assert path.is_file() and path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no temp files
    assert not any("cache" in p.name for p in corpus.rglob("*"))
    assert header(corpus)["slots"] == 40


def test_fresh_files_are_read_again_until_they_settle(
    corpus: Path, corpus_of: Callable[[Path], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    recall(corpus, "login", 3)  # just written: nothing is cached yet
    path = recall_cache.cache_path(resolve_workspace(corpus).canonical)
    assert not path.exists()
    record = corpus_of(corpus) / "lesson-03.md"
    data = record.read_bytes()
    # A same-size edit in the same instant: what a cache keyed by size and mtime alone
    # would serve stale. The settling rule keeps such a file out of the cache.
    record.write_bytes(data.replace(b"pool", b"POOL"))
    assert recall(corpus, "POOL", 10) == cold_recall(corpus, "POOL", monkeypatch)


def test_edits_with_the_same_size_and_time_are_seen(
    corpus: Path, corpus_of: Callable[[Path], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    settle(monkeypatch)
    recall(corpus, "login", 3)
    record = corpus_of(corpus) / "lesson-07.md"
    before = record.stat()
    text = record.read_text(encoding="utf-8")
    # Same size, same modification time, same inode: only the change time moves.
    edited = text.replace("Describe the", "Zebra is the", 2)
    assert len(edited.encode()) == len(text.encode())
    with record.open("r+b") as handle:
        handle.write(edited.encode())
    os.utime(record, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert record.stat().st_size == before.st_size and record.stat().st_ino == before.st_ino
    assert recall(corpus, "zebra", 10) == cold_recall(corpus, "zebra", monkeypatch)
    assert recall(corpus, "zebra", 10)["results"][0]["id"] == "lesson-07"


def test_a_record_renamed_over_another_is_seen(
    corpus: Path, corpus_of: Callable[[Path], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    settle(monkeypatch)
    recall(corpus, "login", 3)
    directory = corpus_of(corpus)
    target = directory / "lesson-11.md"
    stamp = target.stat()
    replacement = directory / "incoming.tmp"
    replacement.write_bytes(target.read_bytes().replace(b"Describe the", b"Zebra is the"))
    os.utime(replacement, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    os.replace(replacement, target)
    assert recall(corpus, "zebra", 10)["results"][0]["id"] == "lesson-11"
    assert recall(corpus, "zebra", 10) == cold_recall(corpus, "zebra", monkeypatch)


def test_rankings_follow_edits_deletions_and_broken_notes(
    corpus: Path,
    write_record: Callable[..., Path],
    corpus_of: Callable[[Path], Path],
    check_corpus: Callable[[Path], None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settle(monkeypatch)
    check_corpus(corpus)
    directory = corpus_of(corpus)
    write_record(corpus, id="lesson-03", title="zebra login zebra", tags=["zebra"])
    (directory / "lesson-05.md").unlink()
    with (directory / "lesson-07.md").open("ab") as handle:
        handle.write(b"\nhand edit\n")  # body drifts: still scored, as recall does
    (directory / "lesson-08.md").write_bytes(b"---\nnot a record\n")  # malformed: skipped
    (directory / "big.md").write_bytes(b"x" * (64 * 1024 + 1))  # oversized: skipped
    (directory / "link.md").symlink_to(directory / "lesson-01.md")  # a link: skipped
    (directory / "Bad_Name.md").write_bytes((directory / "lesson-02.md").read_bytes())
    (directory / "folder.md").mkdir()
    os.link(directory / "lesson-09.md", directory / "lesson-99.md")  # a hard link: malformed
    for _ in range(2):
        check_corpus(corpus)
        for query in ("zebra", "login timeout", "缓存"):
            assert recall(corpus, query, 10) == cold_recall(corpus, query, monkeypatch)


def test_changed_records_are_scored_outside_the_index_until_it_is_rebuilt(
    corpus: Path,
    write_record: Callable[..., Path],
    check_corpus: Callable[[Path], None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settle(monkeypatch)
    check_corpus(corpus)
    assert header(corpus)["slots"] == 40
    for index in range(3):
        write_record(corpus, id=f"lesson-{index:02d}", title=f"zebra changed {index}")
    write_record(corpus, id="new-one", title="zebra new")
    check_corpus(corpus)
    rows = {row[0]: row for row in header(corpus)["entries"]}
    assert header(corpus)["slots"] == 40  # the index was kept
    assert [rows[f"lesson-0{i}.md"][7] for i in range(3)] == [-1, -1, -1]
    assert rows["new-one.md"][7] == -1 and rows["lesson-05.md"][7] >= 0
    for index in range(40):
        write_record(corpus, id=f"lesson-{index:02d}", title=f"zebra again {index}")
    check_corpus(corpus)
    assert header(corpus)["slots"] == 41  # more than 32 outside: rebuilt
    assert all(row[7] >= 0 for row in header(corpus)["entries"])


def test_more_names_than_the_scan_reads(
    workspace: Path,
    write_record: Callable[..., Path],
    corpus_of: Callable[[Path], Path],
    check_corpus: Callable[[Path], None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settle(monkeypatch)
    write_record(workspace)
    directory = corpus_of(workspace)
    for index in range(501):
        (directory / f"copy-{index:03d}.md").write_bytes(
            (directory / "login-timeout.md").read_bytes()
        )
    check_corpus(workspace)
    result = recall(workspace, "login", 3)
    assert result["truncated"] is True and result["scanned"] == 500


def test_the_4_mib_bound_stops_both_at_the_same_record(
    workspace: Path,
    write_record: Callable[..., Path],
    check_corpus: Callable[[Path], None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settle(monkeypatch)
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
    check_corpus(workspace)


@pytest.mark.parametrize(
    "damage",
    ["truncate", "garbage", "magic", "header", "offsets", "postings", "compat", "directory"],
)
def test_a_damaged_or_foreign_cache_is_ignored_and_replaced(
    corpus: Path, damage: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    settle(monkeypatch)
    expected = cold_recall(corpus, "login cache 缓存", monkeypatch)
    assert recall(corpus, "login cache 缓存", 10) == expected
    path = recall_cache.cache_path(resolve_workspace(corpus).canonical)
    data = bytearray(path.read_bytes())
    length = int.from_bytes(data[8:12], "little")
    document = json.loads(data[12 : 12 + length])
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "garbage":
        data = bytearray(os.urandom(len(data)))
    elif damage == "magic":
        data[:8] = b"NOTCACHE"
    elif damage == "header":
        data[12:20] = b"{{{{{{{{"
    elif damage == "offsets":
        document["sections"]["postings"][0] = len(data) * 2
    elif damage == "postings":
        # Field ids past every slot: a damaged index must not crash or mislead the ranking.
        offset, count = document["sections"]["postings"]
        data[offset : offset + count * 2] = b"\xff" * (count * 2)
    elif damage == "compat":
        document["compat"] = "written by other code"
    if damage in ("offsets", "compat"):
        encoded = json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode()
        encoded = encoded.ljust(length)
        assert len(encoded) == length
        data[12 : 12 + length] = encoded
    if damage == "directory":
        path.unlink()
        path.mkdir()
    else:
        path.write_bytes(bytes(data))
    corpus_index._MAPPED.clear()
    for _ in range(2):
        assert recall(corpus, "login cache 缓存", 10) == expected


def test_a_cache_someone_else_can_write_is_not_used(
    corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settle(monkeypatch)
    recall(corpus, "login", 3)
    path = recall_cache.cache_path(resolve_workspace(corpus).canonical)
    assert (
        recall_cache.load(
            path, str(resolve_workspace(corpus).canonical), recall_cache.compatibility_key()
        )
        is not None
    )
    canonical = str(resolve_workspace(corpus).canonical)
    compat = recall_cache.compatibility_key()
    path.chmod(0o644)
    assert recall_cache.load(path, canonical, compat) is None
    path.chmod(0o600)
    path.parent.chmod(0o770)
    assert recall_cache.load(path, canonical, compat) is None
    assert recall(corpus, "login", 10) == cold_recall(corpus, "login", monkeypatch)
    path.parent.chmod(0o700)
    target = path.with_name("elsewhere")
    path.rename(target)
    path.symlink_to(target)
    assert recall_cache.load(path, canonical, compat) is None  # a link is never followed
    assert recall(corpus, "login", 10) == cold_recall(corpus, "login", monkeypatch)
    path.unlink()
    target.rename(path)
    assert recall_cache.load(path, canonical, compat) is not None
    cache = path.parent.parent  # $DSH_HOME/cache, moved away and linked back
    cache.rename(cache.with_name("moved"))
    cache.symlink_to(cache.with_name("moved"))
    assert recall_cache.load(path, canonical, compat) is None
    assert recall(corpus, "login", 10) == cold_recall(corpus, "login", monkeypatch)


def test_at_most_max_files_caches_are_kept(
    corpus: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settle(monkeypatch)
    directory = isolated_home / ".dsh" / "cache" / "compound"
    directory.mkdir(parents=True, mode=0o700)
    for index in range(recall_cache.MAX_FILES + 5):
        old = directory / f"{index:032x}.index"
        old.write_bytes(b"old")
        os.utime(old, ns=(10**9 * index, 10**9 * index))
    recall(corpus, "login", 3)
    kept = sorted(p.name for p in directory.glob("*.index"))
    mine = recall_cache.cache_path(resolve_workspace(corpus).canonical).name
    assert len(kept) == recall_cache.MAX_FILES and mine in kept
    assert f"{0:032x}.index" not in kept


def test_a_long_lived_process_maps_the_cache_once(
    corpus: Path, write_record: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    settle(monkeypatch)
    recall(corpus, "login", 3)
    recall(corpus, "login", 3)
    path = str(recall_cache.cache_path(resolve_workspace(corpus).canonical))
    first = corpus_index._MAPPED[path][1]
    recall(corpus, "cache", 3)
    assert corpus_index._MAPPED[path][1] is first
    write_record(corpus, id="lesson-01", title="zebra")
    assert recall(corpus, "zebra", 3)["results"][0]["id"] == "lesson-01"
    recall(corpus, "zebra", 3)
    assert corpus_index._MAPPED[path][1] is not first


# Random corpora, changed by random operations; after each, the cache and the cold scan
# are compared. The settling window is shortened to 50 ms and "wait" lets it pass, so
# both the cached and the read-again paths are exercised, with real file times.
ALPHABET = st.sampled_from(
    [
        *"abcdexyz 0123456789_.:',;-",
        "登录",
        "超时",
        "数据库",
        "连接池",
        "缓存",
        "é",
        "\u0301",
        "😀",
        "\x1e",
        "\x00",
        "ｆｕｌｌ",
        "ß",
        "İ",
        "\u309b",
        "\n",
    ]
)
TEXT = st.lists(ALPHABET, min_size=1, max_size=12).map("".join).filter(lambda t: t.strip())
OPERATION = st.one_of(
    st.tuples(st.just("write"), st.integers(0, 5), TEXT, TEXT),
    st.tuples(st.just("same-size"), st.integers(0, 5)),
    st.tuples(st.just("delete"), st.integers(0, 5)),
    st.tuples(st.just("break"), st.integers(0, 5)),
    st.tuples(st.just("rename"), st.integers(0, 5), st.integers(0, 5)),
    st.tuples(st.just("wait")),
)


def _write(root: Path, index: int, title: str, problem: str) -> None:
    draft = {
        "id": f"r-{index}",
        "title": title,
        "tags": [title[:64], "t"],
        "problem": problem,
        "rootCause": title + problem,
        "resolution": problem,
        "whenToUse": title,
        "verification": {"command": "c", "result": "r"},
        "files": ["src/login.js"],
    }
    stamp = "2026-01-02T03:04:05.006Z"
    digest = "a" * 64
    metadata = build_metadata(draft, [digest], created_at=stamp, updated_at=stamp)
    directory = root.joinpath(*CORPUS_DIRECTORY.split("/"))
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"r-{index}.md").write_bytes(render_record(metadata))


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    seeds=st.lists(st.tuples(TEXT, TEXT), min_size=1, max_size=6),
    operations=st.lists(OPERATION, max_size=10),
    queries=st.lists(TEXT, min_size=1, max_size=3),
)
def test_random_corpora_and_operations(
    tmp_path_factory: pytest.TempPathFactory,
    check_corpus: Callable[[Path], None],
    seeds: list[tuple[str, str]],
    operations: list[tuple[Any, ...]],
    queries: list[str],
) -> None:
    root = tmp_path_factory.mktemp("random")
    (root / "src").mkdir()
    (root / "src" / "login.js").write_text("x\n")
    directory = root.joinpath(*CORPUS_DIRECTORY.split("/"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DSH_HOME", str(root / "home"))
        patch.setattr(corpus_index, "SETTLED_NS", 50_000_000)
        for index, (title, problem) in enumerate(seeds):
            _write(root, index, title, problem)

        def compare() -> None:
            workspace = resolve_workspace(root)
            cold = corpus_index.read_corpus(workspace, cached=False)
            cached = corpus_index.read_corpus(workspace)
            state = [(r.id, r.metadata, r.digest, r.content_status) for r in cold.records]
            assert [(r.id, r.metadata, r.digest, r.content_status) for r in cached.records] == state
            assert cached.scan.warnings.as_list() == cold.scan.warnings.as_list()
            from dsh_compound.scoring import Terms, recall_terms

            for query in queries:
                terms = Terms(recall_terms(query))
                expected = [(s, r.id) for s, r in cold.ranked(terms)]
                assert [(s, r.id) for s, r in cached.ranked(terms)] == expected

        compare()
        for operation in operations:
            kind = operation[0]
            name = directory / f"r-{operation[1]}.md" if len(operation) > 1 else directory
            if kind == "write":
                _write(root, operation[1], operation[2], operation[3])
            elif kind == "same-size" and name.exists():
                data = name.read_bytes()
                name.write_bytes(data.replace(b"a", b"b").replace(b"\xe7\x99\xbb", b"\xe8\xb6\x85"))
            elif kind == "delete" and name.exists():
                name.unlink()
            elif kind == "break" and name.exists():
                name.write_bytes(name.read_bytes()[:-40])
            elif kind == "rename" and name.exists():
                os.replace(name, directory / f"r-{operation[2]}.md")
            elif kind == "wait":
                time.sleep(0.06)
            compare()
        check_corpus(root)
