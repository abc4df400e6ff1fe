"""A password in a PostgreSQL URL is never printed: not in JSON, ``--format text``, the hook's
``DSH_DEBUG`` line, the MCP server's stderr or its tool errors.

The URLs are the ones that used to leak: an unencoded ``?`` (the redaction split the URL
there), an unencoded ``/`` (libpq reads ``user:pa`` as host and port, and the message named
them), a bad percent escape and a malformed IPv6 host (libpq quotes the token, or the whole
URL). Everything runs through the installed command, the hook and a real MCP session.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from dsh_knowledge.store_location import misread_userinfo, redact_url, scrub, url_secrets

from .agent_helpers import command
from .pg_server import PASSWORD_USER, PostgresServer, binaries

pytest.importorskip("psycopg", reason="the PostgreSQL tier needs dsh-knowledge[postgres]")

# (url, fragments of its password that must never be printed)
UNREACHABLE = {
    "question-mark": ("postgresql://team:Zq7?Wx9pw@127.0.0.1:1/kb", ("Zq7", "Wx9pw")),
    "slash": ("postgresql://pwuser:Sl4sh/Pw9x@127.0.0.1:1/kb", ("Sl4sh", "Pw9x")),
    "bad-escape": ("postgresql://team:p%zzH1dden@127.0.0.1:1/kb", ("zzH1dden", "H1dden")),
    "bad-ipv6": ("postgresql://team:Mal6formed@[::1/kb", ("Mal6formed",)),
    "query": ("postgresql:///kb?host=/nowhere&password=q%zzQu3ry", ("Qu3ry",)),
}


def run(*args: str, data: str | None = None, env: dict[str, str] | None = None) -> Any:
    return subprocess.run(
        [command(), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        input=data,
        env={**os.environ, **(env or {})},
    )


def printed_by_every_front_end(url: str, tmp_path: Path) -> str:
    """Everything the CLI (JSON and text), the hook (DSH_DEBUG) and MCP print for ``url``."""
    shown: list[str] = []
    for args in (["list"], ["list", "--format", "text"]):
        done = run("--db", url, *args)
        assert done.returncode == 1 and done.stdout == "", (args, done.stdout)
        if "--format" not in args:
            # One JSON object, nothing before it (no driver warning).
            error = json.loads(done.stderr)["error"]
            assert set(error) == {"code", "message"}
        shown.append(done.stderr)
    payload = json.dumps({"session_id": "s1", "cwd": "/w", "prompt": "anything"})
    done = run("hook", "user-prompt-submit", "--db", url, data=payload, env={"DSH_DEBUG": "1"})
    assert (done.returncode, done.stdout) == (0, "")
    assert done.stderr.startswith("dsh hook user-prompt-submit failed: ")
    shown.append(done.stderr)
    shown.append(mcp_output(url, tmp_path))
    return "\n".join(shown)


def mcp_output(url: str, tmp_path: Path) -> str:
    pytest.importorskip("mcp", reason="the MCP extra (dsh-knowledge[mcp]) is not installed")
    from .test_mcp_server import session

    errlog = tmp_path / "mcp-stderr.txt"
    answers: list[str] = []

    async def body(client: Any) -> None:
        result = await client.call_tool("knowledge_list", {})
        assert result.is_error is True
        answers.append(result.content[0].text)

    session(["--db", url, "--workspace", "/w"], body, {"DSH_DEBUG": "1"}, errlog=errlog)
    log = errlog.read_text()
    assert "Knowledge storage could not be opened" in log
    return log + "\n".join(answers)


@pytest.mark.parametrize("case", list(UNREACHABLE))
def test_no_front_end_prints_any_part_of_the_password(case: str, tmp_path: Path) -> None:
    url, fragments = UNREACHABLE[case]
    shown = printed_by_every_front_end(url, tmp_path)
    for fragment in fragments:
        assert fragment not in shown, (fragment, shown)
    assert redact_url(url) in shown  # the URL is still named, password hidden
    if case == "slash":
        # libpq took "pwuser:Sl4sh" for host and port: neither is named as if it were.
        assert "host pwuser" not in shown and "port Sl4sh" not in shown
        assert "%2F" in shown


def test_redaction_reads_the_userinfo_as_libpq_does() -> None:
    assert redact_url("postgresql://u:a?b@h:5/db?sslmode=require") == (
        "postgresql://u:***@h:5/db?sslmode=require"
    )
    assert redact_url("postgresql://u:a@b@h/db") == "postgresql://u:***@h/db"
    assert redact_url("postgresql://u:a/b@h/db?x=1") == "postgresql://u:***@h/db?x=1"
    assert redact_url("postgresql://h:5432/db?options=a@b") == "postgresql://h:5432/db?options=a@b"
    assert redact_url("postgresql://u@h/db?") == "postgresql://u@h/db?"
    assert misread_userinfo("postgresql://u:a/b@h/db") is True
    assert misread_userinfo("postgresql://u:a?b@h/db") is False
    assert url_secrets("postgresql://u:p%41@h/db?password=q+r") == ("p%41", "q r", "q+r", "pA")
    message = 'invalid token "p%41" in "postgresql://u:p%41@h/db", user pA'
    assert scrub(message, "postgresql://u:p%41@h/db") == (
        'invalid token "***" in "postgresql://u:***@h/db", user ***'
    )


# --- a real server whose password holds "?", "/" and "@" ---------------------------------------

SECRET = "Kq8?Wv/Rj@3"  # noqa: S105 - a throw-away test role's password
FRAGMENTS = ("Kq8", "Wv/Rj", "Wv%2FRj", "Rj@3", "Rj%403")


@pytest.fixture(scope="module")
def server() -> Iterator[PostgresServer]:
    found = binaries()
    if found is None:
        pytest.skip("the PostgreSQL tier needs Debian's postgresql package")
    primary = PostgresServer(found)
    try:
        primary.start()
        # The cluster's pg_hba asks this role (only) for its password.
        primary.psql("postgres", f"CREATE ROLE {PASSWORD_USER} LOGIN PASSWORD '{SECRET}'")
        primary.psql("postgres", f"CREATE DATABASE kb OWNER {PASSWORD_USER}")
        yield primary
    finally:
        primary.stop()


def url_with(server: PostgresServer, userinfo: str) -> str:
    return f"postgresql://{userinfo}@/kb?host={quote(str(server.socket_dir), safe='/')}"


def test_a_password_with_a_question_mark_works_and_is_never_shown(
    server: PostgresServer, tmp_path: Path
) -> None:
    # "?" needs no escaping in the userinfo (libpq reads up to the "@"); "/" and "@" do.
    right = url_with(server, f"{PASSWORD_USER}:{SECRET.replace('/', '%2F').replace('@', '%40')}")
    added = run("--db", right, "add", "--workspace", "/w", "--type", "fact", "--content", "Up.")
    assert added.returncode == 0, added.stderr
    outputs = [added.stdout]
    for args in (["list"], ["list", "--format", "text"], ["import", "--from", right, "--dry-run"]):
        done = run("--db", right, *args)
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout + done.stderr)
    assert f"postgresql://{PASSWORD_USER}:***@/kb" in outputs[-1]
    wrong = url_with(server, f"{PASSWORD_USER}:Kq8?Wv%2FRj%404")
    done = run("--db", wrong, "list")
    error = json.loads(done.stderr)["error"]
    assert error["code"] == "storage-unavailable"
    assert "password authentication failed" in error["message"]
    outputs.append(printed_by_every_front_end(wrong, tmp_path))
    # Unencoded "/" and "@": libpq cannot read it as meant; the message says how to write it.
    misread = url_with(server, f"{PASSWORD_USER}:{SECRET}")
    outputs.append(printed_by_every_front_end(misread, tmp_path))
    shown = "\n".join(outputs)
    for fragment in FRAGMENTS:
        assert fragment not in shown, (fragment, shown)
