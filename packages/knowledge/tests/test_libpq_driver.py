"""The prompt hook's ctypes libpq client against psycopg: the same answers, byte for byte.

The hook speaks to PostgreSQL through :mod:`dsh_knowledge._libpq` (psycopg's import would
cost more than the hook's whole budget); everything else uses psycopg. Two implementations
of one behaviour, so these tests run the same work through both and compare: the installed
hook's output, and library reads and writes over awkward values (array literals, quotes,
backslashes, NULs, Chinese, integers and booleans).
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

import pytest

from dsh_knowledge.errors import ValidationError
from dsh_knowledge.repository import KnowledgeRepository
from dsh_knowledge.retrieval import retrieve_relevant_knowledge
from dsh_knowledge.store import KnowledgeStore

from .agent_helpers import command
from .backend_helpers import external_write
from .pg_server import DatabaseFactory

pytest.importorskip("psycopg", reason="the PostgreSQL tier needs dsh-knowledge[postgres]")

WS = "/work/shop"
CONTENTS = [
    "The payment service times out under load; fixed by a circuit breaker.",
    "Decision: the auth gateway must go through the session cache.",
    "数据库连接池耗尽导致超时，通过限制重试次数解决。",
    "支付服务依赖配置中心，部署在 kubernetes 上。",
    "Webhook dispatcher retries use exponential backoff with jitter.",
    'Quotes "inside", a backslash \\ and {braces}, commas, and NULL as a word.',
]
PROMPTS = [
    "why does the payment service time out",
    "数据库连接池",
    "webhook retries backoff",
    "auth gateway session cache",
    "NULL braces backslash",
    "nothing matches this zebra",
]


@pytest.fixture
def pg(postgres_databases: DatabaseFactory) -> str:
    url = postgres_databases.create()
    with KnowledgeStore(url) as store:
        repository = KnowledgeRepository(store)
        for number, content in enumerate(CONTENTS):
            item = repository.create(
                type=("fact", "decision", "lesson")[number % 3],
                content=content,
                scope={"workspace": WS, "project": "shop" if number % 2 else None},
                evidence=[
                    {
                        "type": "file",
                        "source": f"src/m{number}.py",
                        "timestamp": "2025-01-01T00:00:00.000Z",
                    }
                ]
                * (number % 3),
            )
            if number % 2 == 0:
                repository.verify(item["id"])
    return url


def _hook(url: str, prompt: str, session: str, *, libpq: bool) -> subprocess.CompletedProcess[str]:
    payload = json.dumps({"session_id": session, "cwd": WS, "prompt": prompt})
    env = {**os.environ, "DSH_KNOWLEDGE_LIBPQ": "1" if libpq else "0", "DSH_DEBUG": "1"}
    return subprocess.run(
        [command(), "hook", "user-prompt-submit", "--db", url, "--project", "shop"],
        input=payload,
        capture_output=True,
        text=True,
        check=False,
        env=env,
        timeout=120,
    )


def test_the_hook_prints_the_same_bytes_through_libpq_and_psycopg(pg: str) -> None:
    injected = 0
    for number, prompt in enumerate(PROMPTS):
        for repeat in range(2):  # the second call of a session shows nothing new
            light = _hook(pg, prompt, f"light-{number}", libpq=True)
            heavy = _hook(pg, prompt, f"heavy-{number}", libpq=False)
            assert (light.returncode, light.stderr) == (0, "")
            assert (heavy.returncode, heavy.stderr) == (0, "")
            assert light.stdout == heavy.stdout, prompt
            if repeat == 0 and light.stdout:
                injected += 1
            if repeat == 1:
                assert light.stdout == ""  # per-session de-duplication, through both
    assert injected == len(PROMPTS) - 1  # every prompt but the zebra found something


def _both(url: str) -> tuple[KnowledgeStore, KnowledgeStore]:
    light = KnowledgeStore(url, light_driver=True)
    heavy = KnowledgeStore(url)
    assert light.connection.driver_name == "libpq"
    assert heavy.connection.driver_name == "psycopg"
    return light, heavy


def test_library_reads_are_identical_through_both_drivers(pg: str) -> None:
    light, heavy = _both(pg)
    try:
        results: list[Any] = []
        for store in (light, heavy):
            repository = KnowledgeRepository(store)
            answers: list[Any] = [repository.list(), repository.count(workspace=WS)]
            for prompt in PROMPTS:
                answers.append(repository.search(prompt.split()[0], workspace=WS))
                counts: dict[str, int] = {}
                answers.append(
                    retrieve_relevant_knowledge(
                        repository, prompt, workspace=WS, project="shop", counts=counts
                    )
                )
                answers.append(counts)
            results.append(answers)
        assert results[0] == results[1]
    finally:
        light.close()
        heavy.close()


def test_awkward_ids_and_values_round_trip_through_both_drivers(pg: str) -> None:
    awkward = ['a"b', "c\\d", "e,f", "{g}", "NULL", " spaced ", "中文", "x'y"]
    external_write(
        pg,
        *[
            (
                "INSERT INTO knowledge (id, type, content, workspace, status, created_at,"
                " updated_at) VALUES (?, 'fact', ?, ?, 'candidate', '2025-01-01T00:00:00.000Z',"
                " '2025-01-01T00:00:00.000Z')",
                (item_id, f"awkward id {item_id}", WS),
            )
            for item_id in awkward
        ],
    )
    light, heavy = _both(pg)
    try:
        fetched = [KnowledgeRepository(s).get_many([*awkward, "missing"]) for s in (light, heavy)]
        assert fetched[0] == fetched[1]
        assert [item["id"] for item in fetched[0]] == awkward
        for store in (light, heavy):
            with pytest.raises(ValidationError, match="NUL"):
                KnowledgeRepository(store).create(
                    type="fact", content="nul \x00 inside", scope={"workspace": WS}
                )
        light.sync_search_index()  # the raw inserts were queued; the light driver indexes them
        row = light.connection.execute(
            "SELECT count(*), bool_and(evidence_count >= 0), max(doc_id) IS NOT NULL "
            "FROM knowledge_search_doc"
        ).fetchone()
        assert (
            row
            == heavy.connection.execute(
                "SELECT count(*), bool_and(evidence_count >= 0), max(doc_id) IS NOT NULL "
                "FROM knowledge_search_doc"
            ).fetchone()
        )
        assert row[0] == len(CONTENTS) + len(awkward) and row[1] is True
    finally:
        light.close()
        heavy.close()


def test_writes_through_the_light_driver_keep_the_lifecycle(pg: str) -> None:
    light = KnowledgeStore(pg, light_driver=True)
    try:
        repository = KnowledgeRepository(light)
        old = repository.verify(
            repository.create(type="fact", content="old rule", scope={"workspace": WS})["id"]
        )
        new = repository.verify(
            repository.create(type="fact", content="new rule", scope={"workspace": WS})["id"]
        )
        superseded = repository.supersede(old["id"], new["id"])
        assert superseded["status"] == "superseded"
        assert superseded["replacementId"] == new["id"]
        found = retrieve_relevant_knowledge(repository, "rule", workspace=WS)
        assert [r["knowledge"]["id"] for r in found] == [new["id"]]
    finally:
        light.close()
    with KnowledgeStore(pg) as heavy:
        assert KnowledgeRepository(heavy).require(old["id"]) == superseded
