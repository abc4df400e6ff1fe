"""The PostgreSQL backend's own promises: schema, encoding, Chinese through the index, bounds.

Versioned migrations recorded in ``dshpy_schema_migrations``; a newer schema refused; a
database that is not UTF-8 refused with the reason; a hook that never creates a schema; the
trigram index answering Chinese queries (it needs a UTF-8 character type - under ``C`` the
results stay the same, only the index cannot help); the prompt hook's bookkeeping skipped,
not waited for, when its rows are locked; a clear message when ``pg_trgm`` cannot be made.
"""

from __future__ import annotations

import json
import subprocess
import threading
import uuid
from urllib.parse import urlsplit, urlunsplit

import pytest

from dsh_knowledge.context_block import build_context
from dsh_knowledge.errors import MigrationError, SchemaTooNewError, StorageError
from dsh_knowledge.injections import INJECTION_TABLE, injected_ids, record_injection
from dsh_knowledge.repository import KnowledgeRepository
from dsh_knowledge.retrieval import retrieve_relevant_knowledge
from dsh_knowledge.store import KnowledgeStore

from .agent_helpers import command
from .backend_helpers import external_write
from .pg_server import DatabaseFactory

pytest.importorskip("psycopg", reason="the PostgreSQL tier needs dsh-knowledge[postgres]")

WS = "/w"


@pytest.fixture
def pg(postgres_databases: DatabaseFactory) -> str:
    return postgres_databases.create()


def _database(factory: DatabaseFactory, options: str) -> str:
    name = f"{factory.prefix}_{uuid.uuid4().hex[:8]}"
    factory.admin.execute(f'CREATE DATABASE "{name}" TEMPLATE template0 {options}')
    factory.created.append(name)
    return str(factory.url_for(name))


def test_the_schema_is_versioned_and_a_newer_one_is_refused(pg: str) -> None:
    with KnowledgeStore(pg) as store:
        assert store.kind == "postgresql" and "***" not in store.path
        rows = store.connection.execute(
            "SELECT version FROM dshpy_schema_migrations ORDER BY version"
        ).fetchall()
        assert [row[0] for row in rows] == [1, 2, 3, 4]
    KnowledgeStore(pg).close()  # a second open changes nothing
    external_write(
        pg,
        ("INSERT INTO dshpy_schema_migrations VALUES (5, 'from-the-future', 'x')", ()),
    )
    with pytest.raises(SchemaTooNewError, match="version 5 is newer than supported version 4"):
        KnowledgeStore(pg)


def test_a_database_that_is_not_utf8_is_refused_with_the_reason(
    postgres_databases: DatabaseFactory,
) -> None:
    url = _database(postgres_databases, "ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C'")
    with pytest.raises(
        StorageError, match="uses the encoding SQL_ASCII; dsh-knowledge needs a UTF8"
    ):
        KnowledgeStore(url)


def test_the_hook_never_creates_a_schema(pg: str) -> None:
    payload = json.dumps({"session_id": "s", "cwd": WS, "prompt": "anything at all"})
    done = subprocess.run(
        [command(), "hook", "user-prompt-submit", "--db", pg],
        input=payload,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    with pytest.raises(StorageError, match="has no knowledge schema yet"):
        KnowledgeStore(pg, create=False)
    import psycopg

    with psycopg.connect(pg) as raw:
        assert raw.execute("SELECT to_regclass('knowledge')").fetchone() == (None,)


CHINESE = [
    "数据库连接池耗尽导致超时，通过限制重试次数解决。",
    "支付服务依赖配置中心，部署在 kubernetes 上。",
    "消息队列重复消费，原因是 kafka 配置不当。",
]


def _chinese_store(url: str) -> KnowledgeRepository:
    store = KnowledgeStore(url)
    repository = KnowledgeRepository(store)
    repository.create_many(
        [{"type": "fact", "content": text, "scope": {"workspace": WS}} for text in CHINESE]
        + [
            {"type": "fact", "content": f"filler note {n}", "scope": {"workspace": WS}}
            for n in range(300)
        ]
    )
    return repository


def test_chinese_queries_go_through_the_trigram_index(pg: str) -> None:
    repository = _chinese_store(pg)
    try:
        found = retrieve_relevant_knowledge(repository, "连接池超时", workspace=WS)
        assert [r["knowledge"]["content"] for r in found] == [CHINESE[0]]
        assert found[0]["explanation"]["matchedTokens"] == ["连接", "接池", "超时"]
        db = repository.store.connection
        db.execute("SET enable_seqscan = off")  # small table: make the planner show its index
        plan = "\n".join(
            row[0]
            for row in db.execute(
                "EXPLAIN SELECT id FROM knowledge_search_doc d WHERE d.toks LIKE ANY(?)",
                (["% 连接 %", "% 超时 %"],),
            )
        )
        assert "knowledge_search_doc_toks" in plan
        # The index really narrows: a Han bigram yields trigrams under a UTF-8 ctype.
        row = db.execute("SELECT show_trgm(' 连接 ')").fetchone()
        assert len(row[0]) >= 3
    finally:
        repository.store.close()


def test_under_a_c_character_type_chinese_results_stay_the_same(
    postgres_databases: DatabaseFactory, pg: str
) -> None:
    # LC_CTYPE 'C': pg_trgm sees no alphanumeric Han characters and the index cannot help -
    # the answers must not change, only the speed.
    plain = _database(postgres_databases, "ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'")
    results = []
    for url in (pg, plain):
        repository = _chinese_store(url)
        try:
            trigrams = repository.store.connection.execute("SELECT show_trgm(' 连接 ')")
            assert (trigrams.fetchone()[0] == []) is (url == plain)
            results.append(
                [
                    [
                        r["knowledge"]["content"]
                        for r in retrieve_relevant_knowledge(repository, query, workspace=WS)
                    ]
                    for query in ("连接池超时", "支付服务", "kafka 消息", "数据库 kubernetes")
                ]
            )
        finally:
            repository.store.close()
    assert results[0] == results[1]
    assert results[0][0] == [CHINESE[0]]
    # ...and health says why such a database is slow for Chinese, while a UTF-8 one is quiet.
    reports = {}
    for url in (pg, plain):
        item = json.loads(
            subprocess.run(
                [
                    command(),
                    "--db",
                    url,
                    "add",
                    "--workspace",
                    WS,
                    "--type",
                    "fact",
                    "--content",
                    "x",
                ],
                capture_output=True,
                text=True,
                check=True,
                timeout=120,
            ).stdout
        )
        for args in ([item["id"]], ["--all", "--workspace", WS]):
            done = subprocess.run(
                [command(), "--db", url, "health", *args],
                capture_output=True,
                text=True,
                check=True,
                timeout=120,
            )
            reports[(url, args[0])] = json.loads(done.stdout)
    assert [report.get("warnings") for (url, _), report in reports.items() if url == pg] == [
        None,
        None,
    ]
    for (url, _), report in reports.items():
        if url == plain:
            assert len(report["warnings"]) == 1
            assert "LC_CTYPE" in report["warnings"][0] and "C.UTF-8" in report["warnings"][0]


def test_the_hooks_bookkeeping_is_skipped_not_waited_for_when_locked(pg: str) -> None:
    import psycopg

    with KnowledgeStore(pg) as store:
        repository = KnowledgeRepository(store)
        item = repository.create(
            type="fact", content="queue workers retry", scope={"workspace": WS}
        )
        record_injection(store, "s1", ["other-id"])
        blocker = psycopg.connect(pg)
        # Writers wait; readers do not (EXCLUSIVE mode), held until the blocker rolls back.
        blocker.execute(f"LOCK TABLE {INJECTION_TABLE} IN EXCLUSIVE MODE")
        try:
            done = threading.Event()
            outcome: list[object] = []

            def build() -> None:
                outcome.append(
                    build_context(
                        "queue workers", repository=repository, workspace=WS, session_id="s1"
                    )
                )
                done.set()

            thread = threading.Thread(target=build)
            thread.start()
            assert done.wait(30), "the hook waited for the lock instead of skipping"
            block, ids = outcome[0]  # type: ignore[misc]
            assert ids == [item["id"]] and block is not None  # shown, just not recorded
        finally:
            blocker.rollback()
            blocker.close()
        assert injected_ids(store, "s1") == {"other-id"}


def test_missing_pg_trgm_rights_explain_what_to_run(postgres_databases: DatabaseFactory) -> None:
    role = f"dsh_plain_{uuid.uuid4().hex[:8]}"
    name = f"{postgres_databases.prefix}_{uuid.uuid4().hex[:8]}"
    admin = postgres_databases.admin
    admin.execute(f'CREATE ROLE "{role}" LOGIN')
    admin.execute(
        f"CREATE DATABASE \"{name}\" TEMPLATE template0 ENCODING 'UTF8'" + postgres_databases.locale
    )
    postgres_databases.created.append(name)
    # The role may use the public schema but not create extensions in this database.
    admin_url = postgres_databases.url_for(name)
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as owner:
        owner.execute(f'GRANT CREATE, USAGE ON SCHEMA public TO "{role}"')
        owner.execute(f'REVOKE CREATE ON DATABASE "{name}" FROM PUBLIC')
    parts = urlsplit(admin_url)
    plain = urlunsplit(parts._replace(netloc=f"{role}@{parts.netloc.rpartition('@')[2]}"))
    with pytest.raises(MigrationError) as caught:
        KnowledgeStore(plain)
    assert caught.value.code == "migration-failed"
    assert "Migration 2 (search-index-trigram) failed and was rolled back" in caught.value.message
    assert "CREATE EXTENSION pg_trgm" in caught.value.message
    assert "is still at version 1" in caught.value.message
