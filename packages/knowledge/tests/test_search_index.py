"""The search index (SQLite FTS5, PostgreSQL pg_trgm) narrows candidates but never changes
retrieval results."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_knowledge.repository import KnowledgeRepository
from dsh_knowledge.retrieval import retrieve_relevant_knowledge
from dsh_knowledge.search_index import match_expression
from dsh_knowledge.store import KnowledgeStore

from .backend_helpers import external_write

WS = "/w"
# Words chosen to collide: shared prefixes/infixes (partial matches both ways), 2- and
# 3-letter tokens, stopwords, contrast words, Chinese with shared bigrams, full-width forms.
WORDS = [
    "route",
    "router",
    "routing",
    "rout",
    "reroute",
    "db",
    "dbs",
    "ui",
    "api",
    "apis",
    "cache",
    "caches",
    "cached",
    "the",
    "and",
    "not",
    "never",
    "must",
    "pool",
    "pooling",
    "连接池",
    "数据库",
    "连接",
    "池",
    "耗尽",
    "超时",
    "数据库连接池",
    "api接口",
    "ＤＢ",
    "Ｒｏｕｔｅ",
    "timeout",
    "timeouts",
    "out",
    "backoff",
    "back",
    "off",
    "x",
    "v2",
    "café",
    "cafe",
    "verylongtokenwithmanycharactersinsideitforfallback",
    "inside",
]
PUNCT = [" ", " ", " ", ", ", ". ", "-", "_", "/", "::", "!"]


@st.composite
def _texts(draw: st.DrawFn, max_words: int = 12) -> str:
    words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=max_words))
    glue = draw(st.lists(st.sampled_from(PUNCT), min_size=len(words), max_size=len(words)))
    return "".join(w + g for w, g in zip(words, glue, strict=True))


_items = st.lists(
    st.tuples(
        _texts(),
        st.sampled_from([None, "p", "q"]),
        st.sampled_from(["fact", "decision", "lesson"]),
        st.sampled_from(["candidate", "verified", "archived"]),
        st.sampled_from(["explicit", "automatic"]),
        st.integers(min_value=0, max_value=400),  # age in days
        st.integers(min_value=0, max_value=4),  # evidence count
    ),
    min_size=1,
    max_size=25,
)


def _corpus(store: KnowledgeStore, items: list[tuple[Any, ...]], legacy_stamps: bool) -> None:
    repository = KnowledgeRepository(store)
    evidence = {"type": "session", "source": "s", "timestamp": "2025-01-01T00:00:00.000Z"}
    ids = repository.create_many(
        [
            {
                "type": kind,
                "content": content,
                "scope": {"workspace": WS, "project": project},
                "evidence": [evidence] * count,
                "creationOrigin": origin,
            }
            for content, project, kind, _, origin, _, count in items
        ]
    )
    for item_id, (_, _, _, status, _, age, _) in zip(ids, items, strict=True):
        stamp = f"2025-{1 + age % 12:02d}-{1 + age % 28:02d}T00:00:{age % 60:02d}.000Z"
        if not legacy_stamps:
            pass  # only toISOString values: SQLite orders the hits (the fast path)
        elif age % 7 == 3:  # legacy / hand-written forms: offsets and date-only values
            stamp = f"2025-{1 + age % 12:02d}-{1 + age % 28:02d}T0{age % 10}:00:00+05:00"
        elif age % 7 == 5:
            stamp = f"2025-{1 + age % 12:02d}-{1 + age % 28:02d}"
        store.connection.execute(
            "UPDATE knowledge SET status = ?, updated_at = ?, created_at = ? WHERE id = ?",
            (status, stamp, stamp, item_id),
        )


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    items=_items,
    query=_texts(max_words=5),
    project=st.sampled_from([None, "p"]),
    limit=st.sampled_from([None, 1, 3, 100]),
    status=st.sampled_from([None, "candidate", "verified"]),
    preferred=st.sampled_from([None, ["lesson"], ["decision", "fact"]]),
    legacy_stamps=st.booleans(),
)
def test_indexed_retrieval_equals_full_scan(  # noqa: PLR0917 - one parameter per strategy
    items: list[tuple[Any, ...]],
    query: str,
    project: str | None,
    limit: int | None,
    status: str | None,
    preferred: list[str] | None,
    legacy_stamps: bool,
) -> None:
    with KnowledgeStore(":memory:") as store:
        _corpus(store, items, legacy_stamps)
        repository = KnowledgeRepository(store)
        options: dict[str, Any] = {
            "workspace": WS,
            "project": project,
            "limit": limit,
            "status": status,
            "preferred_types": preferred,
        }
        indexed_counts: dict[str, int] = {}
        scanned_counts: dict[str, int] = {}
        indexed = retrieve_relevant_knowledge(repository, query, counts=indexed_counts, **options)
        scanned = retrieve_relevant_knowledge(
            repository, query, use_index=False, counts=scanned_counts, **options
        )
        assert indexed == scanned
        # The match total is the same both ways, and never below what was returned.
        assert indexed_counts == scanned_counts
        assert indexed_counts["total"] >= len(indexed)


def test_rows_written_by_another_tool_are_indexed_before_retrieval(
    repository: KnowledgeRepository, db: str
) -> None:
    # Exactly what the Node tool (or psql) does: plain INSERTs through its own connection.
    external_write(
        db,
        (
            "INSERT INTO knowledge (id, type, content, workspace, project, status, created_at,"
            " updated_at) VALUES ('node-1', 'fact', 'Written by Node: rate limiter', ?, NULL,"
            " 'candidate', '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z')",
            (WS,),
        ),
    )
    results = retrieve_relevant_knowledge(repository, "rate limiter", workspace=WS)
    assert [r["knowledge"]["id"] for r in results] == ["node-1"]


def test_content_changed_by_another_tool_is_reindexed(
    repository: KnowledgeRepository, db: str
) -> None:
    item = repository.create(type="fact", content="old wording", scope={"workspace": WS})
    external_write(
        db, ("UPDATE knowledge SET content = 'fresh wording' WHERE id = ?", (item["id"],))
    )
    assert retrieve_relevant_knowledge(repository, "old", workspace=WS) == []
    assert len(retrieve_relevant_knowledge(repository, "fresh", workspace=WS)) == 1


def test_content_update_through_the_repository_is_reindexed(
    repository: KnowledgeRepository,
) -> None:
    item = repository.create(type="fact", content="original wording", scope={"workspace": WS})
    repository.update(item["id"], content="revised wording")
    assert retrieve_relevant_knowledge(repository, "original", workspace=WS) == []
    assert len(retrieve_relevant_knowledge(repository, "revised", workspace=WS)) == 1


def test_a_drifted_index_is_rebuilt_on_open(db_path: Path) -> None:
    with KnowledgeStore(db_path) as store:
        KnowledgeRepository(store).create(
            type="fact", content="survives drift", scope={"workspace": WS}
        )
        store.connection.execute("DROP TRIGGER knowledge_search_after_insert")
        store.connection.execute("DELETE FROM knowledge_search_doc")
    with KnowledgeStore(db_path) as store:
        results = retrieve_relevant_knowledge(KnowledgeRepository(store), "drift", workspace=WS)
        assert len(results) == 1


def test_index_objects_are_created_for_a_migrated_database(
    tmp_path: Path, node_database: Any
) -> None:
    path = tmp_path / "node.sqlite"
    node_database(path, 3)
    with KnowledgeStore(path) as store:
        names = {row[0] for row in store.connection.execute("SELECT name FROM sqlite_master")}
        assert {"knowledge_fts", "knowledge_search_doc", "knowledge_search_pending"} <= names
        assert store.user_version == 3


def test_match_expression_lists_the_token_and_its_whole_token_substrings() -> None:
    assert match_expression("db") is None  # exact only below 4 characters
    assert match_expression("route") == 'toks : ("route" OR " rout " OR " oute ")'
    assert match_expression("x" * 33) is None  # too long: the full scan answers


def test_indexed_retrieval_equals_full_scan_with_thousands_of_hits(
    repository: KnowledgeRepository,
) -> None:
    # Enough hits to take the "walk newest-first" branch for the freshness anchor.
    specs = [
        {
            "type": "fact",
            "content": f"cache layer note {n} router{n % 7}",
            "scope": {"workspace": WS, "project": "p" if n % 2 else None},
        }
        for n in range(2600)
    ]
    repository.create_many(specs)
    for query in ("cache router3", "cache", "note 17", "layer routers"):
        for project in (None, "p"):
            options: dict[str, Any] = {"workspace": WS, "project": project, "limit": 30}
            indexed_counts: dict[str, int] = {}
            scanned_counts: dict[str, int] = {}
            indexed = retrieve_relevant_knowledge(
                repository, query, counts=indexed_counts, **options
            )
            scanned = retrieve_relevant_knowledge(
                repository, query, use_index=False, counts=scanned_counts, **options
            )
            assert indexed == scanned
            assert indexed
            assert indexed_counts == scanned_counts
            assert indexed_counts["total"] > 30  # thousands matched; 30 were asked for


def test_evidence_and_status_written_by_another_tool_reach_the_ranking(
    repository: KnowledgeRepository, db: str
) -> None:
    item = repository.create(type="fact", content="ranking metadata copy", scope={"workspace": WS})
    external_write(
        db,
        ("UPDATE knowledge SET status = 'verified' WHERE id = ?", (item["id"],)),
        (
            "INSERT INTO knowledge_evidence (knowledge_id, ordinal, type, source, timestamp)"
            " VALUES (?, 0, 'session', 's', '2025-01-01T00:00:00.000Z')",
            (item["id"],),
        ),
    )
    indexed = retrieve_relevant_knowledge(repository, "metadata", workspace=WS)
    scanned = retrieve_relevant_knowledge(repository, "metadata", workspace=WS, use_index=False)
    assert indexed == scanned
    assert indexed[0]["explanation"]["contributions"]["status"] == 100
    assert indexed[0]["explanation"]["contributions"]["evidence"] == 1


def test_rows_deleted_by_another_tool_leave_the_index(
    repository: KnowledgeRepository, db: str
) -> None:
    item = repository.create(type="fact", content="soon deleted", scope={"workspace": WS})
    external_write(db, ("DELETE FROM knowledge WHERE id = ?", (item["id"],)))
    assert retrieve_relevant_knowledge(repository, "deleted", workspace=WS) == []
    count = repository.store.connection.execute(
        "SELECT count(*) FROM knowledge_search_doc"
    ).fetchone()[0]
    assert count == 0


_ALPHABET = st.sampled_from(
    list("abcdeorstu")
    + list(" .,-_'\"()*:^")
    + list("连接池数据库")
    + ["é", "É", "ß", "ǅ", "Ⅻ", "①", "ｆ", "\u0301", "𠀀"]
)


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    contents=st.lists(st.text(_ALPHABET, min_size=1, max_size=40), min_size=1, max_size=12),
    query=st.text(_ALPHABET, max_size=30),
)
def test_arbitrary_unicode_gives_identical_results(
    contents: list[str], query: str, backend: str, db: str
) -> None:
    # SQLite: a fresh in-memory store per example. PostgreSQL: the test's one database, each
    # example in a workspace of its own (a database per example would cost more than the
    # example; the vocabulary the examples share only widens what the index tries).
    workspace = f"{WS}/{uuid.uuid4().hex}"
    with KnowledgeStore(":memory:" if backend == "sqlite" else db) as store:
        repository = KnowledgeRepository(store)
        specs = [
            {"type": "fact", "content": content, "scope": {"workspace": workspace}}
            for content in contents
            if content.strip()
        ]
        if specs:
            repository.create_many(specs)
        indexed = retrieve_relevant_knowledge(repository, query, workspace=workspace, limit=100)
        scanned = retrieve_relevant_knowledge(
            repository, query, workspace=workspace, limit=100, use_index=False
        )
        assert indexed == scanned
