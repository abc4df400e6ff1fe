"""Every shape of dsh-common's shared secret table is refused by every front end that writes.

The privacy filter is one detector (``dsh_common.secrets``) that dsh-memory's redaction also
uses; here each shape, in English, glued to Chinese on both sides, in JSON, in an env file and
in a URL, is refused by ``knowledge_add`` over MCP, by the CLI's ``add``, ``add --jsonl`` and
``update``, and skipped by ``extract --transcript`` - and found nowhere in the database file
or its WAL afterwards.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from packages.common.tests.secret_shapes import PROSE, SHAPES, cases

from dsh_knowledge.privacy import (
    PRIVACY_REJECTION_MESSAGE,
    PrivacyRejectedError,
    contains_sensitive_content,
    ensure_no_secrets,
)

from .agent_helpers import command

CASES = cases()
HIDDEN = sorted({shape.hidden for shape in SHAPES})
WORKSPACE = "/work/app"
MAX_LOCATOR = 256


@pytest.mark.parametrize(("case", "shape", "text"), CASES, ids=[c[0] for c in CASES])
def test_every_shape_in_every_context_is_refused(case: str, shape: Any, text: str) -> None:
    assert contains_sensitive_content(text), case
    with pytest.raises(PrivacyRejectedError) as caught:
        ensure_no_secrets("Plain content.", [{"type": "file", "source": "a.py", "locator": text}])
    assert str(caught.value) == PRIVACY_REJECTION_MESSAGE


@pytest.mark.parametrize("text", PROSE)
def test_ordinary_text_is_accepted(text: str) -> None:
    ensure_no_secrets(text, [{"type": "file", "source": text}])


def _cli(db: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [command(), "--db", db, *args],
        capture_output=True,
        text=True,
        input=stdin,
        check=False,
        timeout=120,
    )


def _refused(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 1, done.stdout
    error = json.loads(done.stderr)["error"]
    assert error == {"code": "privacy-policy-rejected", "message": PRIVACY_REJECTION_MESSAGE}
    assert done.stdout == ""


def _nothing_stored(db: str) -> None:
    """No byte of any secret anywhere: SQLite's files (the WAL too), or every row of every
    table of the PostgreSQL database (items, evidence, search index, vocabulary, bookkeeping)."""
    if db.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(db) as connection:
            tables = [
                row[0]
                for row in connection.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
                )
            ]
            assert "knowledge" in tables
            for table in tables:
                rows = connection.execute(f'SELECT t::text FROM "{table}" t').fetchall()  # noqa: S608 - catalog names
                data = "\n".join(row[0] for row in rows)
                for hidden in HIDDEN:
                    assert hidden not in data, (table, hidden)
        return
    path = Path(db)
    assert path.exists()
    for file in [path, *path.parent.glob(path.name + "-*")]:
        data = file.read_bytes()
        for hidden in HIDDEN:
            assert hidden.encode() not in data, (file.name, hidden)


# Secrets that once got through the earlier filter, in English and in Chinese.
REPORTED = [
    "DB_PASSWORD=" + "Hunter2-x9Q",
    '{"password": "' + "Hunter2-x9Q" + '"}',
    "postgresql+psycopg2" + "://u:" + "Hunter2-x9Q" + "@h/db",
    "https" + "://u:" + "Hunter2-x9Q" + "@git.example.com",
    "aws_secret_access_key = " + "wJalrXUtnFEMI/K7MDENG" + "/bPxRfiCYEXAMPLEKEY",
    next(s.snippet for s in SHAPES if s.label == "encrypted rsa private key"),
    next(s.snippet for s in SHAPES if s.label == "encrypted pkcs8 private key"),
]


def test_the_cli_refuses_secrets_in_add_jsonl_and_update(tmp_path: Path, db: str) -> None:
    stored = _cli(
        db,
        "add",
        "--workspace",
        WORKSPACE,
        "--type",
        "fact",
        "--content",
        "The API runs on port 8080.",
    )
    assert stored.returncode == 0, stored.stderr
    item = json.loads(stored.stdout)["id"]
    for text in REPORTED:
        for content in (text, "数据库配置" + text + "请勿外传"):
            _refused(
                _cli(db, "add", "--workspace", WORKSPACE, "--type", "fact", "--content", content)
            )
    evidence = json.dumps({"type": "file", "source": "cfg/.env", "locator": REPORTED[0]})
    _refused(
        _cli(
            db,
            "add",
            "--workspace",
            WORKSPACE,
            "--type",
            "fact",
            "--content",
            "The app reads its password from the environment.",
            "--evidence",
            evidence,
        )
    )
    _refused(_cli(db, "update", item, "--content", "密钥是" + REPORTED[2]))
    lines = [json.dumps({"type": "fact", "content": "Plain fact one."})]
    lines += [
        json.dumps({"type": "fact", "content": text}, ensure_ascii=False) for _, _, text in CASES
    ]
    _refused(
        _cli(db, "add", "--workspace", WORKSPACE, "--jsonl", "-", stdin="\n".join(lines) + "\n")
    )
    listed = json.loads(_cli(db, "list", "--workspace", WORKSPACE).stdout)
    assert [i["content"] for i in listed["items"]] == ["The API runs on port 8080."]
    _nothing_stored(db)


def test_extract_skips_every_secret_bearing_message(tmp_path: Path, db: str) -> None:
    messages = ["We decided to use Redis for the cache."]
    messages += [f"We decided to use {text}" for _, _, text in CASES]
    lines = [
        {
            "type": "user",
            "sessionId": "s-secrets",
            "cwd": WORKSPACE,
            "message": {"role": "user", "content": text},
        }
        for text in messages
    ]
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
    done = _cli(db, "extract", "--transcript", str(transcript))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["skipped"]["secret"] == len(CASES)
    assert [a["content"] for a in report["admitted"]] == ["We decided to use Redis for the cache."]
    _nothing_stored(db)


def test_knowledge_add_over_mcp_refuses_every_case(tmp_path: Path, db: str) -> None:
    pytest.importorskip("mcp", reason="the MCP extra (dsh-knowledge[mcp]) is not installed")
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=command(),
        args=["mcp", "--db", db, "--workspace", WORKSPACE],
        env={**os.environ, "DSH_KNOWLEDGE_SESSION_ID": "mcp-secrets"},
    )
    refused: list[str] = []

    async def main() -> None:
        with open(tmp_path / "stderr.txt", "w") as log, anyio.fail_after(120):
            async with (
                stdio_client(params, errlog=log) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                plain = {"type": "fact", "content": "Plain fact."}
                ok = await client.call_tool("knowledge_add", plain)
                assert ok.is_error is False, ok.content
                for case, _, text in CASES:
                    variants: list[dict[str, Any]] = [{"content": text}]
                    if len(text) <= MAX_LOCATOR:  # a longer one is refused by its bound
                        variants.append(
                            {
                                "content": "Plain.",
                                "evidence": [{"type": "file", "source": "a.py", "locator": text}],
                            }
                        )
                    for arguments in variants:
                        result = await client.call_tool(
                            "knowledge_add", {"type": "fact", **arguments}
                        )
                        assert result.is_error is True, case
                        assert result.content[0].text == PRIVACY_REJECTION_MESSAGE  # type: ignore[union-attr]
                        refused.append(case)

    anyio.run(main)
    assert len(refused) == len(CASES) + sum(len(text) <= MAX_LOCATOR for _, _, text in CASES)
    _nothing_stored(db)
    log = (tmp_path / "stderr.txt").read_text()
    for hidden in HIDDEN:
        assert hidden not in log
