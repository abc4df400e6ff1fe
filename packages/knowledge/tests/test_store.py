from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from dsh_knowledge.errors import MigrationError, SchemaTooNewError, StorageError, ValidationError
from dsh_knowledge.repository import KnowledgeRepository
from dsh_knowledge.store import SCHEMA_VERSION, KnowledgeStore

NodeBuilder = Callable[[Path, int], None]
LEGACY_TIME = "2025-01-01T00:00:00.000Z"


def _schema(path: Path) -> dict[str, object]:
    """Tables, columns, checks (the CREATE text) and indexes of the two Node tables."""
    connection = sqlite3.connect(path)
    try:
        shape: dict[str, object] = {}
        for table in ("knowledge", "knowledge_evidence"):
            shape[f"{table}.columns"] = connection.execute(f"PRAGMA table_info({table})").fetchall()
            shape[f"{table}.indexes"] = sorted(
                row[1] for row in connection.execute(f"PRAGMA index_list({table})")
            )
            # Each index's columns in order and its DDL (whitespace-normalised): a name alone
            # let a wrongly ordered index pass.
            for (name,) in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? "
                "AND sql IS NOT NULL",
                (table,),
            ).fetchall():
                shape[f"{name}.columns"] = connection.execute(
                    f"PRAGMA index_info({name})"
                ).fetchall()
                shape[f"{name}.sql"] = " ".join(
                    connection.execute("SELECT sql FROM sqlite_master WHERE name = ?", (name,))
                    .fetchone()[0]
                    .split()
                )
            shape[f"{table}.fks"] = connection.execute(
                f"PRAGMA foreign_key_list({table})"
            ).fetchall()
            shape[f"{table}.sql"] = " ".join(
                connection.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,))
                .fetchone()[0]
                .split()
            )
        shape["user_version"] = connection.execute("PRAGMA user_version").fetchone()[0]
        return shape
    finally:
        connection.close()


def test_new_database_has_the_node_tool_schema(tmp_path: Path, node_database: NodeBuilder) -> None:
    ours = tmp_path / "ours.sqlite"
    KnowledgeStore(ours).close()
    node = tmp_path / "node.sqlite"
    node_database(node, 3)
    assert _schema(ours) == _schema(node)


def test_store_sets_wal_foreign_keys_and_busy_timeout(sqlite_store: KnowledgeStore) -> None:
    store = sqlite_store
    db = store.connection
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert db.execute("PRAGMA busy_timeout").fetchone()[0] == 5000
    assert store.user_version == SCHEMA_VERSION == 3


def test_memory_database_is_supported() -> None:
    with KnowledgeStore(":memory:") as store:
        repository = KnowledgeRepository(store)
        item = repository.create(type="fact", content="In memory.", scope={"workspace": "w"})
        assert repository.require(item["id"])["content"] == "In memory."


def test_blank_path_is_rejected() -> None:
    with pytest.raises(ValidationError, match="Database path must not be empty"):
        KnowledgeStore("  ")


def test_store_creates_missing_parent_directories(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "k.sqlite"
    KnowledgeStore(path).close()
    assert path.is_file()


def test_v1_database_migrates_with_data_and_evidence_order(
    tmp_path: Path, node_database: NodeBuilder
) -> None:
    path = tmp_path / "v1.sqlite"
    node_database(path, 1)
    legacy = sqlite3.connect(path)
    legacy.execute(
        "INSERT INTO knowledge (id, type, content, workspace, project, status, replacement_id,"
        " created_at, updated_at) VALUES ('legacy-item', 'decision', 'Use transactions.',"
        " 'workspace-a', 'project-a', 'verified', NULL, ?, '2025-01-02T00:00:00.000Z')",
        (LEGACY_TIME,),
    )
    legacy.executemany(
        "INSERT INTO knowledge_evidence (knowledge_id, ordinal, type, source, locator, timestamp)"
        " VALUES ('legacy-item', ?, ?, ?, ?, ?)",
        [
            (0, "file", "src/store.ts", "transaction", LEGACY_TIME),
            (1, "session", "session-1", None, "2025-01-02T00:00:00.000Z"),
        ],
    )
    legacy.commit()
    legacy.close()
    with KnowledgeStore(path) as store:
        item = KnowledgeRepository(store).require("legacy-item")
        assert store.user_version == 3
    assert item == {
        "id": "legacy-item",
        "type": "decision",
        "content": "Use transactions.",
        "scope": {"workspace": "workspace-a", "project": "project-a"},
        "status": "verified",
        "creationOrigin": "explicit",
        "evidence": [
            {
                "type": "file",
                "source": "src/store.ts",
                "locator": "transaction",
                "timestamp": LEGACY_TIME,
            },
            {"type": "session", "source": "session-1", "timestamp": "2025-01-02T00:00:00.000Z"},
        ],
        "createdAt": LEGACY_TIME,
        "updatedAt": "2025-01-02T00:00:00.000Z",
    }


def test_v2_database_migrates_keeping_git_provenance(
    tmp_path: Path, node_database: NodeBuilder
) -> None:
    path = tmp_path / "v2.sqlite"
    node_database(path, 2)
    legacy = sqlite3.connect(path)
    legacy.execute(
        "INSERT INTO knowledge (id, type, content, workspace, project, status, created_at,"
        " updated_at) VALUES ('v2-item', 'lesson', 'Use bounded waits.', 'ws', 'api',"
        " 'candidate', ?, ?)",
        (LEGACY_TIME, LEGACY_TIME),
    )
    legacy.execute(
        "INSERT INTO knowledge_evidence (knowledge_id, ordinal, type, source, locator, timestamp,"
        " git_commit, git_path) VALUES ('v2-item', 0, 'file', 'src/startup.ts', 'init', ?, ?,"
        " 'src/startup.ts')",
        (LEGACY_TIME, "a" * 40),
    )
    legacy.commit()
    legacy.close()
    with KnowledgeStore(path) as store:
        item = KnowledgeRepository(store).require("v2-item")
        indexes = {row[1] for row in store.connection.execute("PRAGMA index_list(knowledge)")}
    assert item["creationOrigin"] == "explicit"
    assert item["evidence"][0]["gitProvenance"] == {"commit": "a" * 40, "path": "src/startup.ts"}
    assert "knowledge_origin_scope_status_idx" in indexes


def test_migrated_schema_rejects_an_unknown_origin(
    tmp_path: Path, node_database: NodeBuilder
) -> None:
    path = tmp_path / "v2.sqlite"
    node_database(path, 2)
    with KnowledgeStore(path) as store, pytest.raises(sqlite3.IntegrityError, match="CHECK"):
        store.connection.execute(
            "INSERT INTO knowledge (id, type, content, workspace, status, created_at, updated_at,"
            " creation_origin) VALUES ('x', 'fact', 'c', 'w', 'candidate', 'a', 'a',"
            " 'automatic-ish')"
        )


def test_failed_migration_leaves_the_old_version_and_data(
    tmp_path: Path, node_database: NodeBuilder
) -> None:
    path = tmp_path / "v1.sqlite"
    node_database(path, 1)
    legacy = sqlite3.connect(path)
    legacy.execute("CREATE TABLE knowledge_evidence_v2 (reserved TEXT)")
    legacy.execute(
        "INSERT INTO knowledge (id, type, content, workspace, status, created_at, updated_at)"
        " VALUES ('kept', 'fact', 'Keep this row.', 'w', 'candidate', ?, ?)",
        (LEGACY_TIME, LEGACY_TIME),
    )
    legacy.commit()
    legacy.close()
    with pytest.raises(MigrationError, match="already exists") as caught:
        KnowledgeStore(path)
    assert caught.value.code == "migration-failed"
    reopened = sqlite3.connect(path)
    assert reopened.execute("PRAGMA user_version").fetchone()[0] == 1
    assert reopened.execute("SELECT content FROM knowledge").fetchall() == [("Keep this row.",)]
    columns = [row[1] for row in reopened.execute("PRAGMA table_info(knowledge_evidence)")]
    assert "git_commit" not in columns
    reopened.close()


def test_newer_schema_version_is_refused(tmp_path: Path, node_database: NodeBuilder) -> None:
    path = tmp_path / "future.sqlite"
    node_database(path, 3)
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA user_version = 4")
    connection.commit()
    connection.close()
    with pytest.raises(SchemaTooNewError) as caught:
        KnowledgeStore(path)
    assert caught.value.code == "schema-too-new"
    assert str(caught.value) == "Database schema version 4 is newer than supported version 3."


def test_node_tool_reading_our_database_sees_plain_rows(repository: KnowledgeRepository) -> None:
    created = repository.create(
        type="fact", content="Readable by Node.", scope={"workspace": "w", "project": "p"}
    )
    # What the Node repository's getById selects: the plain columns, nothing of ours.
    row = repository.store.connection.execute(
        "SELECT id, type, content, workspace, project, status, replacement_id, created_at,"
        " updated_at, creation_origin FROM knowledge WHERE id = ?",
        (created["id"],),
    ).fetchone()
    assert row[1:6] == ("fact", "Readable by Node.", "w", "p", "candidate")
    assert row[9] == "explicit"


def test_a_file_that_is_not_a_database_is_a_storage_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("just some text, not SQLite\n" * 100)
    with pytest.raises(StorageError) as caught:
        KnowledgeStore(path)
    assert caught.value.code == "storage-error"
    assert path.read_text().startswith("just some text")


def _build_ours_0_1_0(path: Path) -> None:
    """A database exactly as dsh-knowledge 0.1.0 left it: the v3 index in the wrong order."""
    from .conftest import NODE_V1, NODE_V2, OURS_0_1_0_V3

    connection = sqlite3.connect(path)
    connection.executescript(NODE_V1 + NODE_V2 + OURS_0_1_0_V3)
    connection.execute(
        "INSERT INTO knowledge (id, type, content, workspace, project, status, created_at,"
        " updated_at, creation_origin) VALUES ('old', 'fact', 'Kept.', '/w', NULL, 'verified',"
        " ?, ?, 'automatic')",
        (LEGACY_TIME, LEGACY_TIME),
    )
    connection.execute("PRAGMA user_version = 3")
    connection.commit()
    connection.close()


def _origin_index(path: Path) -> tuple[list[str], str]:
    connection = sqlite3.connect(path)
    try:
        columns = [
            row[2]
            for row in connection.execute("PRAGMA index_info(knowledge_origin_scope_status_idx)")
        ]
        sql = connection.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'knowledge_origin_scope_status_idx'"
        ).fetchone()[0]
        return columns, " ".join(sql.split())
    finally:
        connection.close()


def test_origin_index_has_the_node_tool_column_order(
    sqlite_store: KnowledgeStore, db_path: Path
) -> None:
    assert _origin_index(db_path)[0] == ["workspace", "project", "status", "creation_origin"]


def test_database_written_with_the_old_origin_index_is_repaired_on_open(
    tmp_path: Path, node_database: NodeBuilder
) -> None:
    path = tmp_path / "ours-0.1.0.sqlite"
    _build_ours_0_1_0(path)
    assert _origin_index(path)[0] == ["creation_origin", "workspace", "project", "status"]
    with KnowledgeStore(path) as store:
        item = KnowledgeRepository(store).require("old")
        assert store.user_version == 3
    assert item["content"] == "Kept."
    assert item["creationOrigin"] == "automatic"
    node = tmp_path / "node.sqlite"
    node_database(node, 3)
    assert _origin_index(path) == _origin_index(node)
    assert _schema(path) == _schema(node)


def test_origin_index_repair_is_done_once(tmp_path: Path) -> None:
    path = tmp_path / "ours-0.1.0.sqlite"
    _build_ours_0_1_0(path)
    KnowledgeStore(path).close()
    connection = sqlite3.connect(path)
    before = connection.execute("PRAGMA schema_version").fetchone()[0]
    connection.close()
    KnowledgeStore(path).close()
    connection = sqlite3.connect(path)
    # An already repaired file is not rewritten: its schema cookie does not move.
    assert connection.execute("PRAGMA schema_version").fetchone()[0] == before
    connection.close()
