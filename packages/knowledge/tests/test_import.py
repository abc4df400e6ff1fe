"""``dsh-knowledge --db TARGET import --from SOURCE``: a store copied whole, between backends.

How a team moves its local SQLite stores onto the shared PostgreSQL one: every item keeps
its id, evidence (order and Git provenance), status, supersede link, creation origin and
timestamps; ids already present are skipped and counted; one transaction; ``--dry-run``
reports first. Run for every direction (SQLite and PostgreSQL, either side) through the
command line, in process; imports racing each other are installed commands, processes.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from dsh_test_support import in_process

from dsh_knowledge.repository import KnowledgeRepository
from dsh_knowledge.store import KnowledgeStore

from .agent_helpers import command
from .backend_helpers import external_write
from .pg_server import DatabaseFactory

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return in_process.run("dsh-knowledge", *args)


def ok(*args: str) -> Any:
    done = cli(*args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _location(kind: str, tmp_path: Path, name: str, request: pytest.FixtureRequest) -> str:
    if kind == "sqlite":
        return str(tmp_path / f"{name}.sqlite")
    factory: DatabaseFactory = request.getfixturevalue("postgres_databases")
    return factory.create()


def _seed(location: str) -> dict[str, Any]:
    """Items in every state: verified, superseded (a chain), archived, automatic, evidence."""
    with KnowledgeStore(location) as store:
        repository = KnowledgeRepository(store)
        scope = {"workspace": "/srv/app", "project": "api"}
        first = repository.create(
            type="decision",
            content="The API listens on port 8080.",
            scope=scope,
            evidence=[
                {
                    "type": "file",
                    "source": "src/app.py",
                    "locator": "L3",
                    "timestamp": "2025-01-02T03:04:05.678Z",
                    "gitProvenance": {"commit": COMMIT, "path": "src/app.py"},
                },
                {"type": "session", "source": "s-1", "timestamp": "2025-01-02T03:04:05Z"},
            ],
        )
        second = repository.create(type="decision", content="The API listens on 9090.", scope=scope)
        third = repository.create(type="decision", content="The API listens on 443.", scope=scope)
        for item in (first, second, third):
            repository.verify(item["id"])
        repository.supersede(first["id"], second["id"])
        repository.supersede(second["id"], third["id"])
        archived = repository.create(type="fact", content="Old note.", scope={"workspace": "/x"})
        repository.archive(archived["id"])
        repository.create(
            type="lesson",
            content="自动提取的经验：缓存五分钟。",
            scope={"workspace": "/srv/app"},
            creation_origin="automatic",
        )
        return {item["id"]: item for item in repository.list()}


DIRECTIONS = [
    ("sqlite", "postgres"),
    ("postgres", "sqlite"),
    ("sqlite", "sqlite"),
    ("postgres", "postgres"),
]


@pytest.mark.parametrize(("source_kind", "target_kind"), DIRECTIONS)
def test_import_copies_every_item_exactly_and_skips_what_is_there(
    source_kind: str, target_kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    source = _location(source_kind, tmp_path, "source", request)
    target = _location(target_kind, tmp_path, "target", request)
    original = _seed(source)
    ok("--db", target, "add", "--workspace", "/srv/app", "--type", "fact", "--content", "Mine.")

    dry = ok("--db", target, "import", "--from", source, "--dry-run")
    assert (dry["items"], dry["imported"], dry["skipped"], dry["evidence"]) == (5, 5, 0, 2)
    assert dry["dryRun"] is True
    assert ok("--db", target, "list")["total"] == 1  # nothing written

    report = ok("--db", target, "import", "--from", source)
    assert (report["items"], report["imported"], report["skipped"]) == (5, 5, 0)
    assert report["dryRun"] is False
    with KnowledgeStore(target) as store:
        copied = {item["id"]: item for item in KnowledgeRepository(store).list()}
    assert len(copied) == 6
    for item_id, item in original.items():
        assert copied[item_id] == item  # id, evidence, status, links, origin, timestamps
    # The copy is searchable and ranked at once (the index was built in the same transaction).
    found = ok(
        "--db",
        target,
        "retrieve",
        "which port does the API listen on",
        "--workspace",
        "/srv/app",
        "--project",
        "api",
    )
    assert [r["knowledge"]["content"] for r in found["results"]] == ["The API listens on 443."]

    again = ok("--db", target, "import", "--from", source)
    assert (again["imported"], again["skipped"], again["evidence"]) == (0, 5, 0)
    assert ok("--db", target, "list")["total"] == 6
    if target_kind == "postgres":
        # Settled at once (visibility map, statistics), not a minute later by autovacuum.
        import psycopg

        with psycopg.connect(target) as connection:
            vacuumed = connection.execute(
                "SELECT relname FROM pg_stat_user_tables WHERE last_vacuum IS NOT NULL"
            ).fetchall()
        assert {"knowledge", "knowledge_search_doc"} <= {row[0] for row in vacuumed}


def test_one_bad_item_imports_nothing(tmp_path: Path, postgres_databases: DatabaseFactory) -> None:
    source = str(tmp_path / "source.sqlite")
    _seed(source)
    # PostgreSQL text cannot hold NUL; SQLite's can: that item cannot be copied.
    external_write(source, ("UPDATE knowledge SET content = ? WHERE type = 'fact'", ("nul \x00",)))
    target = postgres_databases.create()
    done = cli("--db", target, "import", "--from", source)
    assert done.returncode == 1
    assert json.loads(done.stderr)["error"]["code"] == "invalid-input"
    assert ok("--db", target, "list")["total"] == 0  # one transaction: none of it landed


def test_a_missing_source_is_an_error_and_is_not_created(tmp_path: Path) -> None:
    target = str(tmp_path / "target.sqlite")
    missing = tmp_path / "nowhere" / "source.sqlite"
    done = cli("--db", target, "import", "--from", str(missing))
    assert done.returncode == 1
    error = json.loads(done.stderr)["error"]
    assert error["code"] == "invalid-input" and "does not exist" in error["message"]
    assert not missing.parent.exists()


def test_a_source_url_password_is_never_printed(tmp_path: Path) -> None:
    target = str(tmp_path / "target.sqlite")
    done = cli("--db", target, "import", "--from", "postgresql://me:hunter2@127.0.0.1:1/kb")
    assert done.returncode == 1
    assert "hunter2" not in done.stdout + done.stderr
    error = json.loads(done.stderr)["error"]
    assert error["code"] == "storage-unavailable"
    assert "postgresql://me:***@127.0.0.1:1/kb" in error["message"]


def test_concurrent_imports_of_the_same_items_copy_each_once(tmp_path: Path, db: str) -> None:
    # Members moving onto the shared store at the same moment, from copies of one store: each
    # item lands once, every process succeeds, and the counts add up (nothing internal-error).
    source = str(tmp_path / "source.sqlite")
    with KnowledgeStore(source) as store:
        KnowledgeRepository(store).create_many(
            [
                {
                    "type": "fact",
                    "content": f"Note {n} on the payment queue.",
                    "scope": {"workspace": "/srv/app"},
                    "evidence": [
                        {
                            "type": "session",
                            "source": f"s-{n}",
                            "timestamp": "2025-01-02T03:04:05.678Z",
                        }
                    ],
                }
                for n in range(300)
            ]
        )
    KnowledgeStore(db).close()  # the schema in place: the race is on the items alone
    processes = [
        subprocess.Popen(
            [command(), "--db", db, "import", "--from", source],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    reports = []
    for process in processes:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        assert err == ""
        reports.append(json.loads(out))
    assert sum(r["imported"] for r in reports) == 300
    assert sum(r["skipped"] for r in reports) == 600
    assert sum(r["evidence"] for r in reports) == 300
    with KnowledgeStore(db) as store:
        assert KnowledgeRepository(store).count() == 300


def test_an_import_refused_by_the_server_prints_only_our_error(
    tmp_path: Path, postgres_databases: DatabaseFactory
) -> None:
    # The driver sends the rows pipelined; when the server refuses them it logs a warning
    # ("error ignored terminating <psycopg.Pipeline …>") that must not reach stderr.
    source = str(tmp_path / "source.sqlite")
    with KnowledgeStore(source) as store:  # enough rows that the driver pipelines them
        KnowledgeRepository(store).create_many(
            [
                {"type": "fact", "content": f"Note {n}.", "scope": {"workspace": "/srv/app"}}
                for n in range(300)
            ]
        )
    target = postgres_databases.create()
    KnowledgeStore(target).close()
    from psycopg.conninfo import conninfo_to_dict

    name = conninfo_to_dict(target)["dbname"]
    postgres_databases.admin.execute(
        f'ALTER DATABASE "{name}" SET default_transaction_read_only = on'
    )
    done = cli("--db", target, "import", "--from", source)
    assert (done.returncode, done.stdout) == (1, "")
    error = json.loads(done.stderr)["error"]  # the whole of stderr: one JSON object
    assert error["code"] == "storage-error" and "read-only" in error["message"]


def test_a_workspace_map_rescopes_path_workspaces_to_the_team_name(tmp_path: Path, db: str) -> None:
    # Alice's items were made before the team named its workspace: scoped to her checkout's
    # path (and a subfolder, where her MCP server was started), invisible to everyone else.
    alice = str(tmp_path / "alice.sqlite")
    for workspace, content in (
        ("/home/alice/payments", "Refunds go through the ledger."),
        ("/home/alice/payments/api", "The API retries twice."),
        ("/home/alice/payments-old", "Unrelated checkout."),
        ("/home/alice/notes", "Private note."),
    ):
        ok("--db", alice, "add", "--workspace", workspace, "--type", "fact", "--content", content)
    mapping = [
        "--workspace-map",
        "/home/alice/payments/=acme/payments",
        "--workspace-map",
        "/home/alice/notes=alice-notes",
    ]
    dry = ok("--db", db, "import", "--from", alice, "--dry-run", *mapping)
    assert dry["workspaces"] == [
        {"source": "/home/alice/notes", "target": "alice-notes", "items": 1},
        {"source": "/home/alice/payments", "target": "acme/payments", "items": 1},
        {"source": "/home/alice/payments-old", "target": "/home/alice/payments-old", "items": 1},
        {"source": "/home/alice/payments/api", "target": "acme/payments", "items": 1},
    ]
    assert ok("--db", db, "list")["total"] == 0  # a dry run writes nothing
    report = ok("--db", db, "import", "--from", alice, *mapping)
    assert (report["imported"], report["workspaces"]) == (4, dry["workspaces"])
    team = ok("--db", db, "list", "--workspace", "acme/payments")
    assert sorted(i["content"] for i in team["items"]) == [
        "Refunds go through the ledger.",
        "The API retries twice.",
    ]
    found = ok("--db", db, "retrieve", "how do refunds go", "--workspace", "acme/payments")
    assert [r["knowledge"]["content"] for r in found["results"]] == [
        "Refunds go through the ledger."
    ]
    # Alice's own store is untouched.
    assert ok("--db", alice, "list", "--workspace", "acme/payments")["total"] == 0

    for bad in (["no-equals"], ["=new"], ["/old="], ["/a=x", "/a/=y"], ["/a=\x01"]):
        done = cli(
            "--db", db, "import", "--from", alice, *(f"--workspace-map={pair}" for pair in bad)
        )
        assert done.returncode == 1, bad
        assert json.loads(done.stderr)["error"]["code"] == "invalid-input"
