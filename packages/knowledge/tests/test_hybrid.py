"""Hybrid retrieval: knowledge's ranking fused with the bundled sentence model, on both backends.

The real model ranks (``dsh_common.embedding``, offline). What is held: a lesson written in
Chinese answers an English question (lexical ranking cannot); lexical ranking stays exactly
what it was; a semantic hit never crosses the scope, status, origin and type rules every
retrieval keeps;
results are deterministic and the first ``k`` of a longer answer are the answer for ``k``;
missing vectors are filled on demand, or counted in a warning; a long-lived store object
reloads its vectors only when they changed.
"""

from __future__ import annotations

from typing import Any

import pytest

from dsh_knowledge import semantic_index, vectors
from dsh_knowledge.repository import KnowledgeRepository
from dsh_knowledge.retrieval import retrieve_relevant_knowledge

from .backend_helpers import external_write

WS = "/work/payments"
POOL = "数据库连接池耗尽导致请求超时：给每个服务的连接池设置上限。"
DEADLOCK = "两个事务同时更新同一批订单行时发生死锁，按主键顺序加锁解决。"
PORT = "The public API listens on port 8080 behind the load balancer."
QUESTION = "requests time out because the database connection pool is exhausted"


def ids(results: list[dict[str, Any]]) -> list[str]:
    return [r["knowledge"]["id"] for r in results]


def add(repository: KnowledgeRepository, content: str, **scope: str) -> str:
    item = repository.create(type="lesson", content=content, scope={"workspace": WS, **scope})
    return str(item["id"])


def test_a_chinese_lesson_answers_an_english_question(repository: KnowledgeRepository) -> None:
    pool = add(repository, POOL)
    add(repository, DEADLOCK)
    add(repository, PORT)
    assert retrieve_relevant_knowledge(repository, QUESTION, workspace=WS) == []  # no shared word
    warnings: list[str] = []
    results = retrieve_relevant_knowledge(
        repository, QUESTION, workspace=WS, ranking="hybrid", warnings=warnings
    )
    assert ids(results)[0] == pool and warnings == []
    top = results[0]
    assert top["hybrid"]["channels"] == ["semantic"] and "lexical" not in top["hybrid"]
    assert top["hybrid"]["semantic"]["language"] == "zh"
    assert top["score"] == top["hybrid"]["score"]
    assert top["explanation"]["matchType"] == "none" and top["explanation"]["matchedTokens"] == []


def test_lexical_ranking_is_unchanged_and_the_lexical_part_is_its_own(
    repository: KnowledgeRepository, monkeypatch: pytest.MonkeyPatch
) -> None:
    for content in (PORT, "The admin API listens on port 9090.", POOL, DEADLOCK):
        add(repository, content)
    query = "which port does the api listen on"
    before = retrieve_relevant_knowledge(repository, query, workspace=WS)
    assert before == retrieve_relevant_knowledge(repository, query, workspace=WS, ranking="lexical")
    monkeypatch.setenv("DSH_RANKING", "lexical")
    assert retrieve_relevant_knowledge(repository, query, workspace=WS) == before
    assert all("hybrid" not in r for r in before)
    monkeypatch.setenv("DSH_RANKING", "hybrid")  # the variable alone switches the library
    hybrid = retrieve_relevant_knowledge(repository, query, workspace=WS)
    by_id = {r["knowledge"]["id"]: r for r in hybrid}
    for rank, lexical in enumerate(before, start=1):
        part = by_id[lexical["knowledge"]["id"]]["hybrid"]["lexical"]
        assert part["score"] == lexical["score"] and part["rank"] == rank
        assert by_id[lexical["knowledge"]["id"]]["explanation"] == lexical["explanation"]


def test_a_semantic_hit_never_crosses_scope_status_origin_or_type(
    repository: KnowledgeRepository,
) -> None:
    # Every variant of the answer those rules hide: all of them close in meaning.
    hidden = {
        "other workspace": repository.create(
            type="lesson", content=POOL, scope={"workspace": "/work/other"}
        )["id"],
        "other project": add(repository, POOL + "（结算）", project="billing"),
        "archived": add(repository, POOL + "（旧）"),
        "superseded": add(repository, "连接池耗尽会让请求超时，应限制连接数。"),
        "automatic": repository.create(
            type="lesson",
            content="连接池被耗尽时请求会超时。",
            scope={"workspace": WS},
            creation_origin="automatic",
        )["id"],
    }
    visible = add(repository, POOL, project="payments")
    wide = add(repository, DEADLOCK)
    repository.archive(hidden["archived"])
    replacement = add(repository, "连接池的上限由配置中心统一下发。")
    repository.verify(hidden["superseded"])
    repository.verify(replacement)
    repository.supersede(hidden["superseded"], replacement)
    counts: dict[str, int] = {}
    results = retrieve_relevant_knowledge(
        repository,
        QUESTION,
        workspace=WS,
        project="payments",
        ranking="hybrid",
        limit=100,
        counts=counts,
    )
    shown = set(ids(results))
    assert not shown & set(hidden.values()), shown & set(hidden.values())
    assert visible in shown and ids(results)[0] == visible
    assert counts["total"] == len(shown) and shown <= {visible, wide, replacement}
    # Workspace-wide only: the project's item is out too; a type or status filter holds.
    assert visible not in ids(
        retrieve_relevant_knowledge(repository, QUESTION, workspace=WS, ranking="hybrid")
    )
    assert (
        ids(
            retrieve_relevant_knowledge(
                repository,
                QUESTION,
                workspace=WS,
                project="payments",
                ranking="hybrid",
                type="fact",
            )
        )
        == []
    )
    assert set(
        ids(
            retrieve_relevant_knowledge(
                repository,
                QUESTION,
                workspace=WS,
                project="payments",
                ranking="hybrid",
                status="verified",
            )
        )
    ) <= {replacement}


def test_the_first_k_of_a_longer_answer_are_the_answer_for_k_every_time(
    repository: KnowledgeRepository,
) -> None:
    for n in range(12):
        add(repository, f"Service {n} times out when its connection pool is exhausted.")
    add(repository, POOL)
    add(repository, POOL)  # an exact duplicate: folded into the first
    longest = retrieve_relevant_knowledge(
        repository, QUESTION, workspace=WS, ranking="hybrid", limit=100
    )
    assert len({tuple(r["explanation"]["suppressedSimilarIds"]) for r in longest}) == 2
    for k in (1, 3, 5):
        shorter = retrieve_relevant_knowledge(
            repository, QUESTION, workspace=WS, ranking="hybrid", limit=k
        )
        assert ids(shorter) == ids(longest)[:k]
    again = retrieve_relevant_knowledge(
        repository, QUESTION, workspace=WS, ranking="hybrid", limit=100
    )
    assert again == longest


def test_missing_vectors_are_filled_on_demand_or_counted(
    repository: KnowledgeRepository, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = add(repository, POOL)  # written while lexical: no vector
    add(repository, DEADLOCK)
    monkeypatch.setattr(semantic_index, "ON_DEMAND_LIMIT", 2)
    warnings: list[str] = []
    results = retrieve_relevant_knowledge(
        repository, QUESTION, workspace=WS, ranking="hybrid", warnings=warnings
    )
    assert ids(results)[0] == first and warnings == []
    assert vectors.vector_status(repository.store)["current"] == 2  # stored for next time
    for n in range(3):  # written by something that stores no vectors
        repository.store.write(
            lambda n=n: repository.store.connection.execute(
                "INSERT INTO knowledge (id, type, content, workspace, status, created_at, "
                "updated_at, creation_origin) VALUES (?, 'fact', ?, ?, 'verified', "
                "'2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', 'explicit')",
                (f"n{n}", f"Note {n}: deploys happen on Fridays.", WS),
            )
        )
    warnings.clear()
    results = retrieve_relevant_knowledge(
        repository, QUESTION, workspace=WS, ranking="hybrid", warnings=warnings
    )
    assert ids(results)[0] == first
    assert warnings == [
        "3 items of this scope have no stored vector yet and rank by their words only: run "
        "`dsh-knowledge vectors build` to encode them once"
    ]


def test_a_long_lived_store_reloads_its_vectors_only_when_they_change(
    repository: KnowledgeRepository, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DSH_RANKING", "hybrid")
    add(repository, PORT)
    retrieve_relevant_knowledge(repository, QUESTION, workspace=WS)
    cache = repository.store.search_cache["semantic_index"]
    loaded = cache[WS][2]
    retrieve_relevant_knowledge(repository, QUESTION, workspace=WS)
    assert cache[WS][2] is loaded  # nothing changed: the same matrix
    pool = add(repository, POOL)  # another write of this process, or of any other
    assert ids(retrieve_relevant_knowledge(repository, QUESTION, workspace=WS))[0] == pool
    assert cache[WS][2] is not loaded and len(cache[WS][2]) == 2


def test_a_long_lived_store_sees_what_another_process_committed(
    db: str, repository: KnowledgeRepository
) -> None:
    # What a long-lived process keeps between queries (eligibility, the index) must never
    # outlive a change made elsewhere: an item archived by another process is gone at once.
    pool = add(repository, POOL)
    add(repository, DEADLOCK)
    first = retrieve_relevant_knowledge(repository, QUESTION, workspace=WS, ranking="hybrid")
    assert ids(first)[0] == pool
    external_write(db, ("UPDATE knowledge SET status = 'archived' WHERE id = ?", (pool,)))
    again = retrieve_relevant_knowledge(repository, QUESTION, workspace=WS, ranking="hybrid")
    assert pool not in ids(again)
    external_write(
        db, ("UPDATE knowledge SET workspace = '/elsewhere' WHERE status <> ?", ("archived",))
    )
    assert retrieve_relevant_knowledge(repository, QUESTION, workspace=WS, ranking="hybrid") == []
