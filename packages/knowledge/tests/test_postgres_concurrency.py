"""Many agents on one PostgreSQL store at once: nothing lost, one winner per lifecycle race.

PostgreSQL's default isolation does not serialise a read-modify-write as SQLite's
``BEGIN IMMEDIATE`` does; these races prove the row locks keep the lifecycle's rules: two
supersedes of one item never both win, an archive racing a supersede ends in a state the
lifecycle allows, and ten processes opening a fresh database create its schema once.
Writers are real processes, each connected before a common start signal so they truly
overlap: library writers for volume (8 x 100 adds), the installed command for the path a
user takes (8 x 5 ``add``; a process per add costs too much for 800), and one process per
side of every lifecycle race.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

import pytest

from dsh_knowledge.repository import KnowledgeRepository
from dsh_knowledge.retrieval import retrieve_relevant_knowledge
from dsh_knowledge.store import KnowledgeStore

from .agent_helpers import command
from .pg_server import DatabaseFactory

pytest.importorskip("psycopg", reason="the PostgreSQL tier needs dsh-knowledge[postgres]")

WRITER = """
import sys
from dsh_knowledge.repository import KnowledgeRepository
from dsh_knowledge.store import KnowledgeStore

url, writer, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.stdin.readline()  # start together: every writer waits for the go signal
store = KnowledgeStore(url)
repository = KnowledgeRepository(store)
for n in range(count):
    repository.create(
        type="fact",
        content=f"writer {writer} item {n} concurrent insert",
        scope={"workspace": "/w"},
        evidence=[{"type": "session", "source": f"w{writer}", "timestamp": "2025-01-01T00:00:00Z"}],
    )
store.close()
print("done")
"""

OPENER = """
import sys
from dsh_knowledge.store import KnowledgeStore

sys.stdin.readline()
KnowledgeStore(sys.argv[1]).close()
print("opened")
"""


CLI_WRITER = """
import subprocess, sys

program, url, writer, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
sys.stdin.readline()
for n in range(count):
    subprocess.run([program, "--db", url, "add", "--workspace", "/w", "--type", "fact",
                    "--content", f"cli writer {writer} item {n}"], check=True,
                   stdout=subprocess.DEVNULL)
print("done")
"""

RACER = """
import json, sys
from dsh_knowledge.errors import KnowledgeError
from dsh_knowledge.repository import KnowledgeRepository
from dsh_knowledge.store import KnowledgeStore

url, action, *ids = sys.argv[1:]
repository = KnowledgeRepository(KnowledgeStore(url))
repository.count()  # connected and warm before the start signal
print("ready", flush=True)
sys.stdin.readline()
try:
    print(json.dumps({"ok": getattr(repository, action)(*ids)}))
except KnowledgeError as error:
    print(json.dumps({"code": error.code, "message": error.message}))
"""


def _together(script: str, argvs: list[list[str]]) -> None:
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", script, *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for argv in argvs
    ]
    for process in processes:  # release them as close together as the pipes allow
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    for process in processes:
        stdout, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, stderr
        assert stdout.strip() in {"done", "opened"}


@pytest.fixture
def pg(postgres_databases: DatabaseFactory) -> str:
    return postgres_databases.create()


def test_eight_processes_adding_a_hundred_items_each_lose_nothing(pg: str) -> None:
    _together(WRITER, [[pg, str(n), "100"] for n in range(8)])
    with KnowledgeStore(pg) as store:
        db = store.connection
        assert db.execute("SELECT count(*) FROM knowledge").fetchone()[0] == 800
        assert db.execute("SELECT count(*) FROM knowledge_evidence").fetchone()[0] == 800
        assert db.execute("SELECT count(*) FROM knowledge_search_doc").fetchone()[0] == 800
        assert db.execute("SELECT count(*) FROM knowledge_search_pending").fetchone()[0] == 0
        found = retrieve_relevant_knowledge(
            KnowledgeRepository(store), "writer 7 item 99", workspace="/w", limit=1
        )
        assert found[0]["knowledge"]["content"] == "writer 7 item 99 concurrent insert"


def test_eight_processes_adding_through_the_command_line_lose_nothing(pg: str) -> None:
    _together(CLI_WRITER, [[command(), pg, str(n), "5"] for n in range(8)])
    with KnowledgeStore(pg) as store:
        repository = KnowledgeRepository(store)
        assert repository.count() == 40
        found = retrieve_relevant_knowledge(repository, "cli writer 7 item 4", workspace="/w")
        assert found[0]["knowledge"]["content"] == "cli writer 7 item 4"


def test_ten_processes_opening_a_fresh_database_create_the_schema_once(
    postgres_databases: DatabaseFactory,
) -> None:
    url = postgres_databases.create(from_template=False)  # not even pg_trgm yet
    _together(OPENER, [[url] for _ in range(10)])
    with KnowledgeStore(url) as store:
        rows = store.connection.execute(
            "SELECT version, name FROM dshpy_schema_migrations ORDER BY version"
        ).fetchall()
    assert [tuple(row) for row in rows] == [
        (1, "create-knowledge-and-evidence"),
        (2, "search-index-trigram"),
        (3, "agent-session-tables"),
        (4, "item-vectors"),
    ]


@dataclass
class Refused:
    """A racer's documented error (its code and message, as the library raised it)."""

    code: str
    message: str


def _race(url: str, actions: list[tuple[str, ...]]) -> list[Any]:
    """Run each ``(method, *ids)`` of the repository in a process of its own, connected
    first and then released together; its item, or :class:`Refused`."""
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, url, *action],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for action in actions
    ]
    for process in processes:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready"
    for process in processes:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    outcomes: list[Any] = []
    for process in processes:
        stdout, stderr = process.communicate(timeout=120)
        assert process.returncode == 0, stderr
        answer = json.loads(stdout)
        outcomes.append(answer["ok"] if "ok" in answer else Refused(**answer))
    return outcomes


def _verified(repository: KnowledgeRepository, content: str) -> str:
    item = repository.create(type="fact", content=content, scope={"workspace": "/w"})
    return str(repository.verify(item["id"])["id"])


@pytest.mark.parametrize("round_", range(6))
def test_two_supersedes_of_one_item_give_one_winner_and_one_documented_error(
    pg: str, round_: int
) -> None:
    with KnowledgeStore(pg) as store:
        repository = KnowledgeRepository(store)
        old = _verified(repository, f"round {round_}: the old rule")
        first = _verified(repository, f"round {round_}: replacement one")
        second = _verified(repository, f"round {round_}: replacement two")
    outcomes = _race(pg, [("supersede", old, first), ("supersede", old, second)])
    errors = [o for o in outcomes if isinstance(o, Refused)]
    winners = [o for o in outcomes if isinstance(o, dict)]
    assert len(winners) == 1 and len(errors) == 1, outcomes
    assert errors[0].code == "invalid-transition"
    assert "superseded -> superseded" in errors[0].message
    with KnowledgeStore(pg) as store:
        final = KnowledgeRepository(store).require(old)
    assert final["status"] == "superseded"
    assert final["replacementId"] == winners[0]["replacementId"]  # never two live replacements


@pytest.mark.parametrize("round_", range(4))
def test_archive_racing_supersede_ends_in_a_state_the_lifecycle_allows(
    pg: str, round_: int
) -> None:
    with KnowledgeStore(pg) as store:
        repository = KnowledgeRepository(store)
        old = _verified(repository, f"round {round_}: to be replaced or archived")
        new = _verified(repository, f"round {round_}: the replacement")
    outcomes = _race(pg, [("archive", old), ("supersede", old, new)])
    with KnowledgeStore(pg) as store:
        final = KnowledgeRepository(store).require(old)
    assert final["status"] == "archived"  # archive always lands; it is allowed from both
    archived, superseded = outcomes
    assert isinstance(archived, dict)
    if isinstance(superseded, Refused):  # the archive came first
        assert superseded.code == "invalid-transition"
        assert "replacementId" not in final
    else:  # superseded first, then archived: the link is kept
        assert final["replacementId"] == new


def test_verify_racing_a_supersede_by_the_same_candidate_has_one_consistent_outcome(
    pg: str,
) -> None:
    with KnowledgeStore(pg) as store:
        repository = KnowledgeRepository(store)
        old = _verified(repository, "the rule in force")
        candidate = repository.create(
            type="fact", content="the proposed rule", scope={"workspace": "/w"}
        )["id"]
    verified, superseded = _race(pg, [("verify", candidate), ("supersede", old, candidate)])
    assert isinstance(verified, dict) and verified["status"] == "verified"
    with KnowledgeStore(pg) as store:
        final = KnowledgeRepository(store).require(old)
    if isinstance(superseded, Refused):  # the supersede saw a candidate replacement
        assert superseded.code == "invalid-supersede"
        assert final["status"] == "verified"
    else:
        assert final["status"] == "superseded" and final["replacementId"] == candidate


def test_two_verifies_of_one_candidate_both_succeed_as_on_sqlite(pg: str) -> None:
    # A status may stay as it is: the second verify is verified -> verified, on both backends.
    with KnowledgeStore(pg) as store:
        item = KnowledgeRepository(store).create(
            type="fact", content="verify me twice", scope={"workspace": "/w"}
        )
    outcomes = _race(pg, [("verify", item["id"]), ("verify", item["id"])])
    assert all(isinstance(o, dict) and o["status"] == "verified" for o in outcomes)
    stamps = sorted(o["updatedAt"] for o in outcomes)
    assert stamps[0] < stamps[1]  # serialised: the second saw the first and moved past it
