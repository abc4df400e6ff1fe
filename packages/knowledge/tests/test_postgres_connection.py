"""How a PostgreSQL URL reaches the server: libpq's environment variables and ``sslmode``.

libpq reads the URL, so what it reads beside the URL works as it does for ``psql``:
``PGHOST``/``PGUSER``/``PGDATABASE`` fill what the URL leaves out (and name the host an
error reports), and ``sslmode`` decides about SSL - which only TCP connections negotiate: on
a Unix socket libpq ignores it, as its documentation says. Through the installed command
and the prompt hook (which talks to libpq directly, not through psycopg).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from .agent_helpers import command
from .pg_server import PostgresServer, binaries

pytest.importorskip("psycopg", reason="the PostgreSQL tier needs dsh-knowledge[postgres]")


@pytest.fixture(scope="module")
def server() -> Iterator[PostgresServer]:
    """A server on a Unix socket and on the loopback address (no SSL configured)."""
    found = binaries()
    if found is None:
        pytest.skip("the PostgreSQL tier needs Debian's postgresql package")
    started = PostgresServer(found, tcp=True)
    try:
        started.start()
        started.psql("postgres", "CREATE DATABASE kb")
        yield started
    finally:
        started.stop()


def run(*args: str, env: dict[str, str] | None = None, data: str | None = None) -> Any:
    return subprocess.run(
        [command(), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        input=data,
        env={**os.environ, **(env or {})},
    )


def hook(db: str, prompt: str, env: dict[str, str] | None = None) -> Any:
    payload = json.dumps({"session_id": "s1", "cwd": "/w", "prompt": prompt})
    return run("hook", "user-prompt-submit", "--db", db, data=payload, env=env)


def test_pghost_pguser_and_pgdatabase_fill_a_bare_url(server: PostgresServer) -> None:
    env = {
        "PGHOST": str(server.socket_dir),
        "PGPORT": str(server.port),
        "PGUSER": "postgres",
        "PGDATABASE": "kb",
    }
    added = run(
        "--db",
        "postgresql://",
        "add",
        "--workspace",
        "/w",
        "--type",
        "fact",
        "--content",
        "The ledger closes at midnight.",
        env=env,
    )
    assert added.returncode == 0, added.stderr
    listed = json.loads(run("--db", server.url("kb"), "list").stdout)
    assert [item["content"] for item in listed["items"]] == ["The ledger closes at midnight."]
    done = hook("postgresql://", "when does the ledger close", env=env)
    assert done.returncode == 0 and done.stderr == ""
    assert "ledger closes at midnight" in done.stdout
    # The host an error names is the one libpq tried: PGHOST's.
    gone = {**env, "PGHOST": str(server.root / "no-socket-here")}
    failed = run("--db", "postgresql://", "list", env=gone)
    error = json.loads(failed.stderr)["error"]
    assert error["code"] == "storage-unavailable"
    assert f"host {server.root / 'no-socket-here'}, port {server.port}" in error["message"]


def test_sslmode_require_fails_clearly_on_a_server_without_ssl_and_disable_works(
    server: PostgresServer,
) -> None:
    required = server.tcp_url("kb") + "?sslmode=require"
    done = run("--db", required, "list")
    assert (done.returncode, done.stdout) == (1, "")
    error = json.loads(done.stderr)["error"]
    assert error["code"] == "storage-unavailable"
    assert f"host 127.0.0.1, port {server.port}" in error["message"]
    assert "SSL" in error["message"]  # libpq's reason: the server does not support SSL
    quiet = hook(required, "anything")
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")

    disabled = server.tcp_url("kb") + "?sslmode=disable"
    assert run("--db", disabled, "list").returncode == 0
    # On the Unix socket SSL is never negotiated: libpq ignores sslmode there.
    assert run("--db", server.url("kb") + "&sslmode=require", "list").returncode == 0
