"""PostgreSQL faults a team will meet, through the installed command, the hook and MCP.

A server that is down or unreachable, a wrong password, a server restarted between two
commands (and under a live MCP server), a read-only hot standby, a missing driver: each gets
its documented code and a message naming host and port but never the password; the hook
prints nothing and exits 0; the MCP server answers a tool error and stays up. These tests
start servers of their own (one primary, one hot standby streaming from it) because they
stop, restart and replicate them.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from .agent_helpers import command
from .pg_server import PASSWORD, PASSWORD_USER, PostgresServer, binaries

pytest.importorskip("psycopg", reason="the PostgreSQL tier needs dsh-knowledge[postgres]")


@pytest.fixture(scope="module")
def server() -> Iterator[PostgresServer]:
    found = binaries()
    if found is None:
        pytest.skip("the PostgreSQL tier needs Debian's postgresql package")
    primary = PostgresServer(found)
    try:
        primary.start()
        primary.psql("postgres", f"CREATE ROLE {PASSWORD_USER} LOGIN PASSWORD '{PASSWORD}'")
        yield primary
    finally:
        primary.stop()


def fresh_database(server: PostgresServer, owner: str = "postgres") -> str:
    name = "kb_" + uuid.uuid4().hex[:10]
    server.psql("postgres", f'CREATE DATABASE "{name}" OWNER "{owner}"')
    return name


def cli(*args: str, env: dict[str, str] | None = None, data: str | None = None) -> Any:
    return subprocess.run(
        [command(), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        input=data,
        env={**os.environ, **(env or {})},
    )


def ok(*args: str, env: dict[str, str] | None = None) -> Any:
    done = cli(*args, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def failure(*args: str, env: dict[str, str] | None = None) -> dict[str, str]:
    done = cli(*args, env=env)
    assert done.returncode == 1, done.stdout
    assert done.stdout == ""
    return dict(json.loads(done.stderr)["error"])


def add(url: str, content: str) -> dict[str, Any]:
    return dict(ok("--db", url, "add", "--workspace", "/w", "--type", "fact", "--content", content))


def hook(url: str, prompt: str, session: str = "s1") -> subprocess.CompletedProcess[str]:
    payload = json.dumps({"session_id": session, "cwd": "/w", "prompt": prompt})
    return subprocess.run(
        [command(), "hook", "user-prompt-submit", "--db", url],
        input=payload,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


# --- unreachable, down, wrong password ------------------------------------------------------


def test_an_unreachable_server_is_storage_unavailable_naming_host_and_port() -> None:
    url = "postgresql://team:s3cret-pw@127.0.0.1:1/knowledge"
    for args in (
        ["list"],
        ["search", "x"],
        ["retrieve", "x"],
        ["add", "--workspace", "/w", "--type", "fact", "--content", "x"],
    ):
        error = failure("--db", url, *args)
        assert error["code"] == "storage-unavailable", error
        assert "host 127.0.0.1, port 1" in error["message"]
        assert "s3cret-pw" not in error["message"]
        assert "postgresql://team:***@127.0.0.1:1/knowledge" in error["message"]
    text = cli("--db", url, "list", "--format", "text")
    assert text.returncode == 1 and "s3cret-pw" not in text.stdout + text.stderr
    # The hook: nothing printed, exit 0.
    done = hook(url, "anything at all")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_a_server_that_accepts_but_never_answers_fails_within_the_connect_timeout() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)  # the kernel completes the handshake; nobody ever answers
    port = listener.getsockname()[1]
    try:
        # What start-up and a refused connection cost on this machine right now: the bound
        # below is that plus the timeout, plus slack for a busy machine - seconds, not 30.
        started = time.monotonic()
        failure("--db", "postgresql://team@127.0.0.1:1/knowledge", "list")
        baseline = time.monotonic() - started
        url = f"postgresql://team@127.0.0.1:{port}/knowledge?connect_timeout=1"
        started = time.monotonic()
        error = failure("--db", url, "list")
        elapsed = time.monotonic() - started
        assert error["code"] == "storage-unavailable"
        assert f"host 127.0.0.1, port {port}" in error["message"]
        assert 1 <= elapsed < baseline + 1 + 3, (elapsed, baseline)
        started = time.monotonic()
        done = hook(f"postgresql://team@127.0.0.1:{port}/knowledge", "anything")
        assert (done.returncode, done.stdout) == (0, "")
        elapsed = time.monotonic() - started
        assert 2 <= elapsed < baseline + 2 + 3, (elapsed, baseline)  # the hook's own 2 s
    finally:
        listener.close()


def test_a_stopped_server_is_unavailable_and_the_next_command_after_a_start_works(
    server: PostgresServer,
) -> None:
    url = server.url(fresh_database(server))
    first = add(url, "written before the restart")
    server.restart()  # restarted between two commands
    assert [i["id"] for i in ok("--db", url, "list")["items"]] == [first["id"]]
    server.halt()
    try:
        error = failure("--db", url, "list")
        assert error["code"] == "storage-unavailable"
        assert str(server.socket_dir) in error["message"] and "port 5432" in error["message"]
        done = hook(url, "written before the restart")
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    finally:
        server.resume()
    assert len(ok("--db", url, "list")["items"]) == 1


def test_a_wrong_password_is_storage_unavailable_with_the_servers_reason(
    server: PostgresServer, tmp_path: Path
) -> None:
    name = fresh_database(server, owner=PASSWORD_USER)
    socket_dir = str(server.socket_dir)
    wrong = f"postgresql://{PASSWORD_USER}:not-the-password@/{name}?host={socket_dir}"
    error = failure("--db", wrong, "list")
    assert error["code"] == "storage-unavailable"
    assert "password authentication failed" in error["message"]
    assert "not-the-password" not in error["message"]
    assert "port 5432" in error["message"]
    done = hook(wrong, "anything")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")

    # The right password, three ways libpq accepts it; none is ever printed.
    right = f"postgresql://{PASSWORD_USER}:{PASSWORD}@/{name}?host={socket_dir}"
    item = add(right, "reached with the password in the URL")
    bare = f"postgresql://{PASSWORD_USER}@/{name}?host={socket_dir}"
    listed = ok("--db", bare, "list", env={"PGPASSWORD": PASSWORD})
    assert [i["id"] for i in listed["items"]] == [item["id"]]
    passfile = tmp_path / "pgpass"
    passfile.write_text(f"*:*:{name}:{PASSWORD_USER}:{PASSWORD}\n")
    passfile.chmod(0o600)
    listed = ok("--db", bare, "list", env={"PGPASSFILE": str(passfile)})
    assert [i["id"] for i in listed["items"]] == [item["id"]]
    report = ok("--db", right, "import", "--from", right, "--dry-run")
    assert (
        report["source"]
        == report["target"]
        == (f"postgresql://{PASSWORD_USER}:***@/{name}?host={socket_dir}")
    )


def test_a_missing_driver_names_the_extra(tmp_path: Path) -> None:
    # A psycopg that cannot be imported, first on the path: as if the extra were not installed.
    stub = tmp_path / "stub" / "psycopg"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("raise ImportError('No module named psycopg')\n")
    env = {"PYTHONPATH": str(tmp_path / "stub")}
    error = failure("--db", "postgresql://team@db.internal/kb", "list", env=env)
    assert error["code"] == "postgres-unavailable"
    assert "pip install 'dsh-knowledge[postgres]'" in error["message"]
    done = cli(
        "hook",
        "user-prompt-submit",
        "--db",
        "postgresql://team@db.internal/kb",
        env=env,
        data=json.dumps({"cwd": "/w", "prompt": "anything"}),
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


# --- a read-only hot standby ------------------------------------------------------------------


@pytest.fixture(scope="module")
def standby(server: PostgresServer) -> Iterator[tuple[PostgresServer, str]]:
    name = fresh_database(server)
    add(server.url(name), "Replicated: the cache holds sessions for ten minutes.")
    replica = PostgresServer(server.bin, primary=server)
    try:
        replica.start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with contextlib.suppress(RuntimeError):
                if replica.psql(name, "SELECT count(*) FROM knowledge") == "1":
                    break
            time.sleep(0.1)
        yield replica, name
    finally:
        replica.stop()


def test_writes_on_a_hot_standby_are_read_only_while_reads_work(
    standby: tuple[PostgresServer, str],
) -> None:
    replica, name = standby
    url = replica.url(name)
    assert replica.psql(name, "SELECT pg_is_in_recovery()") == "t"
    error = failure("--db", url, "add", "--workspace", "/w", "--type", "fact", "--content", "x")
    assert error["code"] == "storage-error"
    assert "read-only" in error["message"]
    listed = ok("--db", url, "list")
    assert [i["content"] for i in listed["items"]] == [
        "Replicated: the cache holds sessions for ten minutes."
    ]
    item_id = listed["items"][0]["id"]
    assert failure("--db", url, "verify", item_id)["code"] == "storage-error"
    assert ok("--db", url, "search", "cache")["total"] == 1
    got = ok("--db", url, "retrieve", "how long does the cache hold sessions", "--workspace", "/w")
    assert [r["knowledge"]["id"] for r in got["results"]] == [item_id]
    # With a session id, the bookkeeping write is refused (read-only): skipped, the block
    # is still printed.
    done = hook(url, "how long does the cache hold sessions")
    assert (done.returncode, done.stderr) == (0, "")
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "the cache holds sessions for ten minutes" in context


# --- the MCP server stays up --------------------------------------------------------------------


def test_the_mcp_server_answers_tool_errors_and_survives_a_restart(
    server: PostgresServer,
) -> None:
    pytest.importorskip("mcp", reason="the MCP extra (dsh-knowledge[mcp]) is not installed")
    from .test_mcp_server import session

    url = server.url(fresh_database(server))
    seen: dict[str, Any] = {}

    async def body(client: Any) -> None:
        added = await client.call_tool(
            "knowledge_add", {"type": "fact", "content": "The cache keeps sessions."}
        )
        assert added.is_error is False, added.content
        await anyio.to_thread.run_sync(server.restart)
        found = await client.call_tool("knowledge_search", {"query": "cache sessions"})
        assert found.is_error is False, found.content  # a new connection, transparently
        assert found.structured_content["total"] == 1
        await anyio.to_thread.run_sync(server.halt)
        try:
            down = await client.call_tool("knowledge_list", {})
            assert down.is_error is True
            assert "Cannot connect to the knowledge database" in down.content[0].text
            assert str(server.socket_dir) in down.content[0].text
        finally:
            await anyio.to_thread.run_sync(server.resume)
        back = await client.call_tool("knowledge_list", {})
        assert back.is_error is False, back.content
        assert back.structured_content["total"] == 1
        seen["done"] = True

    session(["--db", url, "--workspace", "/w"], body, {})
    assert seen == {"done": True}


def test_an_mcp_server_started_while_the_server_is_down_serves_once_it_is_up(
    server: PostgresServer, tmp_path: Path
) -> None:
    pytest.importorskip("mcp", reason="the MCP extra (dsh-knowledge[mcp]) is not installed")
    from .test_mcp_server import session

    url = server.url(fresh_database(server))
    item = add(url, "The queue retries three times.")
    seen: dict[str, Any] = {}
    errlog = tmp_path / "mcp-stderr.txt"

    async def body(client: Any) -> None:
        assert len((await client.list_tools()).tools) == 7
        down = await client.call_tool("knowledge_list", {})
        assert down.is_error is True
        assert down.content[0].text == "Knowledge storage is unavailable."
        await anyio.to_thread.run_sync(server.resume)
        back = await client.call_tool("knowledge_get", {"id": item["id"]})
        assert back.is_error is False, back.content
        assert back.structured_content["item"]["content"] == "The queue retries three times."
        seen["done"] = True

    server.halt()
    try:
        session(["--db", url, "--workspace", "/w"], body, {}, errlog=errlog)
    finally:
        if server.pid is None:
            server.resume()
    assert seen == {"done": True}
    log = errlog.read_text()
    # Logged once when it first failed (not on every call), and once when it opened.
    assert log.count("Knowledge storage could not be opened") == 1, log
    assert "Knowledge storage opened: postgresql://" in log


def test_a_connection_lost_inside_a_write_reruns_the_whole_transaction_once(
    server: PostgresServer,
) -> None:
    from dsh_knowledge.store import KnowledgeStore

    url = server.url(fresh_database(server))
    runs: list[int] = []
    with KnowledgeStore(url) as store:
        db = store.connection

        def work() -> None:
            runs.append(1)
            db.execute("INSERT INTO dshpy_extraction_progress VALUES ('first', 1, 1)")
            if len(runs) == 1:
                server.restart()  # the open transaction dies with the server
            db.execute("INSERT INTO dshpy_extraction_progress VALUES ('second', 2, 2)")

        store.write(work)
        rows = db.execute(
            "SELECT session_id FROM dshpy_extraction_progress ORDER BY session_id"
        ).fetchall()
    assert len(runs) == 2  # rerun from the start on a new connection
    assert [row[0] for row in rows] == ["first", "second"]  # once each, both or neither
