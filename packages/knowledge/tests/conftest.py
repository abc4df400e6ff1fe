"""Shared fixtures: every test runs in the toolkit's hermetic home.

``db`` is the database a test works on, once per backend (the ``backend`` parameter): an
SQLite file, and a fresh database on a real PostgreSQL server (one server per test worker,
started from Debian's ``postgresql`` by :mod:`pg_server`, or ``$DSH_TEST_POSTGRES_URL``).
``store`` and ``repository`` open it, so every test that uses them runs on both. Tests of
the SQLite file itself use ``db_path`` and stay SQLite-only.
"""

from __future__ import annotations

import importlib.util
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from dsh_knowledge.repository import KnowledgeRepository
from dsh_knowledge.store import KnowledgeStore

from .command_helpers import add
from .pg_server import DatabaseFactory, PostgresServer, binaries, external_url, with_database

BACKENDS = ("sqlite", "postgres")


@pytest.fixture(autouse=True)
def isolated_home(hermetic_home: Path) -> Path:
    """The toolkit's hermetic home (dsh_test_support.home), for every test of this package:
    HOME, DSH_HOME (``$HOME/.dsh``) and git's global config in a fresh folder, and no
    developer setting (a store, a scope, a driver, a libpq password or service, a ranking).
    The home folder is returned."""
    return hermetic_home


@pytest.fixture
def dsh_home(isolated_home: Path) -> Path:
    """``DSH_HOME`` of the test (not created: the commands create it)."""
    return Path(os.environ["DSH_HOME"])


@pytest.fixture(scope="session")
def semantic_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ``DSH_HOME`` whose embedding weight cache is built once per session.

    For tests that start processes ranking with the model: each would otherwise unpack the
    model's weights into its own fresh ``DSH_HOME`` first (1-3 s). Pass ``--db`` explicitly.
    """
    home = tmp_path_factory.mktemp("semantic-home")
    probe = "from dsh_common import embedding; print(embedding.warm())"
    done = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, "DSH_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    assert done.stdout.strip() in {"built", "mapped"}, done.stdout
    return home


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "knowledge.sqlite"


@pytest.fixture
def seeded_store(db: str) -> str:
    """A store on either backend holding one item, added through the command line."""
    add(db, "The seed item.")
    return db


@pytest.fixture
def seeded_file(tmp_path: Path) -> Path:
    """An SQLite file holding one item (for what only a file can suffer)."""
    path = tmp_path / "kb" / "knowledge.sqlite"
    add(path, "The seed item.")
    return path


@pytest.fixture
def sqlite_store(db_path: Path) -> Iterator[KnowledgeStore]:
    """An SQLite store, for tests of the file itself (pragmas, the Node tool's schema)."""
    opened = KnowledgeStore(db_path)
    yield opened
    opened.close()


@pytest.fixture(scope="session")
def postgres_databases() -> Iterator[DatabaseFactory]:
    """Fresh PostgreSQL databases: ours (one server per worker, stopped at the end of the
    session) or the external server ``$DSH_TEST_POSTGRES_URL`` names."""
    if importlib.util.find_spec("psycopg") is None:
        pytest.skip("the PostgreSQL tier needs psycopg: install dsh-knowledge[postgres]")
    external = external_url()
    if external is not None:
        factory = DatabaseFactory(external, lambda name: with_database(external, name))
        try:
            yield factory
        finally:
            factory.close(drop=True)
        return
    found = binaries()
    if found is None:
        pytest.skip(
            "the PostgreSQL tier needs Debian's postgresql package "
            "(apt-get install postgresql postgresql-contrib) or DSH_TEST_POSTGRES_URL"
        )
    server = PostgresServer(found)
    try:
        server.start()
        factory = DatabaseFactory(server.url(), server.url)
        try:
            yield factory
        finally:
            factory.close(drop=False)  # the whole server goes away below
    finally:
        server.stop()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def db(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """The test's database, as ``--db`` and ``KnowledgeStore`` take it: a path or a URL."""
    if backend == "sqlite":
        return str(tmp_path / "data" / "knowledge.sqlite")
    factory: DatabaseFactory = request.getfixturevalue("postgres_databases")
    return factory.create()


@pytest.fixture
def store(db: str) -> Iterator[KnowledgeStore]:
    opened = KnowledgeStore(db)
    yield opened
    opened.close()


@pytest.fixture
def repository(store: KnowledgeStore) -> KnowledgeRepository:
    return KnowledgeRepository(store)


# --- the earlier Node tool's exact DDL (kept apart from ours: tests fail if ours drifts) ---

NODE_V1 = """
CREATE TABLE knowledge (
  id TEXT PRIMARY KEY NOT NULL,
  type TEXT NOT NULL CHECK (type IN ('fact', 'decision', 'lesson')),
  content TEXT NOT NULL CHECK (length(trim(content)) > 0),
  workspace TEXT NOT NULL CHECK (length(trim(workspace)) > 0),
  project TEXT CHECK (project IS NULL OR length(trim(project)) > 0),
  status TEXT NOT NULL CHECK (status IN ('candidate', 'verified', 'superseded', 'archived')),
  replacement_id TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  FOREIGN KEY (replacement_id) REFERENCES knowledge(id) ON DELETE RESTRICT,
  CHECK (replacement_id IS NULL OR replacement_id <> id),
  CHECK (status <> 'superseded' OR replacement_id IS NOT NULL),
  CHECK (status NOT IN ('candidate', 'verified') OR replacement_id IS NULL)
);
CREATE TABLE knowledge_evidence (
  knowledge_id TEXT NOT NULL,
  ordinal INTEGER NOT NULL CHECK (ordinal >= 0),
  type TEXT NOT NULL CHECK (type IN ('session', 'file', 'git')),
  source TEXT NOT NULL CHECK (length(trim(source)) > 0),
  locator TEXT,
  timestamp TEXT NOT NULL,
  PRIMARY KEY (knowledge_id, ordinal),
  FOREIGN KEY (knowledge_id) REFERENCES knowledge(id) ON DELETE CASCADE
);
CREATE INDEX knowledge_workspace_project_idx ON knowledge(workspace, project);
CREATE INDEX knowledge_project_idx ON knowledge(project);
CREATE INDEX knowledge_type_idx ON knowledge(type);
CREATE INDEX knowledge_status_idx ON knowledge(status);
CREATE INDEX knowledge_updated_at_idx ON knowledge(updated_at);
"""

NODE_V2 = """
CREATE TABLE knowledge_evidence_v2 (
  knowledge_id TEXT NOT NULL,
  ordinal INTEGER NOT NULL CHECK (ordinal >= 0),
  type TEXT NOT NULL CHECK (type IN ('session', 'file', 'git')),
  source TEXT NOT NULL CHECK (length(trim(source)) > 0),
  locator TEXT,
  timestamp TEXT NOT NULL,
  git_commit TEXT,
  git_path TEXT,
  PRIMARY KEY (knowledge_id, ordinal),
  FOREIGN KEY (knowledge_id) REFERENCES knowledge(id) ON DELETE CASCADE,
  CHECK (
    (git_commit IS NULL AND git_path IS NULL) OR
    (type = 'file' AND git_commit IS NOT NULL AND git_path IS NOT NULL AND
     length(git_commit) IN (40, 64) AND git_commit NOT GLOB '*[^0-9a-fA-F]*' AND
     length(trim(git_path)) > 0 AND substr(git_path, 1, 1) <> '/' AND
     instr(git_path, char(92)) = 0)
  )
);
INSERT INTO knowledge_evidence_v2
  (knowledge_id, ordinal, type, source, locator, timestamp, git_commit, git_path)
SELECT knowledge_id, ordinal, type, source, locator, timestamp, NULL, NULL
FROM knowledge_evidence;
DROP TABLE knowledge_evidence;
ALTER TABLE knowledge_evidence_v2 RENAME TO knowledge_evidence;
"""

NODE_V3 = """
ALTER TABLE knowledge ADD COLUMN creation_origin TEXT NOT NULL DEFAULT 'explicit'
  CHECK (creation_origin IN ('explicit', 'automatic'));
CREATE INDEX knowledge_origin_scope_status_idx
  ON knowledge(workspace, project, status, creation_origin);
"""

# What dsh-knowledge 0.1.0 wrote instead: the same index name, another column order.
OURS_0_1_0_V3 = """
ALTER TABLE knowledge ADD COLUMN creation_origin TEXT NOT NULL DEFAULT 'explicit'
  CHECK (creation_origin IN ('explicit', 'automatic'));
CREATE INDEX knowledge_origin_scope_status_idx
  ON knowledge(creation_origin, workspace, project, status);
"""


def build_node_database(path: Path, version: int) -> None:
    """A database exactly as the Node tool at ``version`` (1, 2 or 3) leaves it, empty."""
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA foreign_keys = ON")
    connection.executescript(NODE_V1)
    if version >= 2:
        connection.executescript(NODE_V2)
    if version >= 3:
        connection.executescript(NODE_V3)
    connection.execute(f"PRAGMA user_version = {version}")
    connection.commit()
    connection.close()


@pytest.fixture
def node_database() -> Callable[[Path, int], None]:
    """Builder of empty databases exactly as the Node tool at schema 1, 2 or 3 leaves them."""
    return build_node_database
