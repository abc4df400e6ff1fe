"""Hybrid ranking through the installed command: ``retrieve``, ``vectors`` and the hook.

Real processes, the real bundled model (offline), both backends. ``--ranking`` and
``DSH_RANKING`` switch the command line and the prompt hook (the MCP server:
``test_mcp_server.py``); lexical output stays byte for byte what it was; a bad name is
refused by a command and ignored by the hook, which never fails.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from dsh_test_support import commands

from .agent_helpers import command

WS = "/work/payments"
LESSON = "数据库连接池耗尽导致请求超时：给每个服务的连接池设置上限。"
QUESTION = "requests time out because the database connection pool is exhausted"


def run(
    db: str, *args: str, home: Path, stdin: str | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [command(), *args] if args[0] == "hook" else [command(), "--db", db, *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={**os.environ, "DSH_HOME": str(home), **env},
    )


@pytest.fixture
def seeded(db: str, semantic_home: Path) -> str:
    for content in (LESSON, "The public API listens on port 8080."):
        done = run(
            db,
            "add",
            "--workspace",
            WS,
            "--type",
            "lesson",
            "--content",
            content,
            home=semantic_home,
        )
        assert done.returncode == 0, done.stderr
    return db


def test_retrieve_ranks_hybrid_with_the_option_or_the_variable(
    seeded: str, semantic_home: Path
) -> None:
    lexical = run(seeded, "retrieve", QUESTION, "--workspace", WS, home=semantic_home)
    assert json.loads(lexical.stdout) == {"results": [], "total": 0, "truncated": False}
    same = run(
        seeded, "retrieve", QUESTION, "--workspace", WS, "--ranking", "lexical", home=semantic_home
    )
    assert same.stdout == lexical.stdout and same.stderr == lexical.stderr == ""
    for extra, env in ((["--ranking", "hybrid"], {}), ([], {"DSH_RANKING": "hybrid"})):
        done = run(
            seeded, "retrieve", QUESTION, "--workspace", WS, *extra, home=semantic_home, **env
        )
        assert done.returncode == 0, done.stderr
        output = json.loads(done.stdout)
        assert output["ranking"] == "hybrid" and "warnings" not in output
        top = output["results"][0]
        assert top["knowledge"]["content"] == LESSON
        assert top["hybrid"]["channels"] == ["semantic"]
    # The option wins over the variable.
    done = run(
        seeded,
        "retrieve",
        QUESTION,
        "--workspace",
        WS,
        "--ranking",
        "lexical",
        home=semantic_home,
        DSH_RANKING="hybrid",
    )
    assert done.stdout == lexical.stdout


def test_an_unknown_ranking_is_refused_by_the_command(seeded: str, semantic_home: Path) -> None:
    for extra, env in ((["--ranking", "semantic"], {}), ([], {"DSH_RANKING": "fast"})):
        done = run(seeded, "retrieve", "port", "--workspace", WS, *extra, home=semantic_home, **env)
        assert done.returncode == 1 and done.stdout == ""
        error = json.loads(done.stderr)["error"]
        assert error["code"] == "invalid-ranking"
        assert "lexical, hybrid" in error["message"]


def test_vectors_build_reports_progress_and_status_counts(seeded: str, semantic_home: Path) -> None:
    status = json.loads(run(seeded, "vectors", "status", home=semantic_home).stdout)
    assert (status["items"], status["current"], status["missing"]) == (2, 0, 2)
    done = run(seeded, "vectors", "build", home=semantic_home)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["encoded"] == 2
    # Not a terminal here: one progress line per report.
    assert done.stderr.splitlines()[-1] == (
        "vectors: [##############################] 2/2 items encoded"
    )
    status = json.loads(run(seeded, "vectors", "status", home=semantic_home).stdout)
    assert (status["current"], status["missing"], status["stale"]) == (2, 0, 0)


def test_the_hook_honours_dsh_ranking_and_never_fails_on_it(
    seeded: str, semantic_home: Path
) -> None:
    payload = json.dumps({"session_id": "s", "cwd": WS, "prompt": QUESTION})
    lexical = run(
        seeded, "hook", "user-prompt-submit", "--db", seeded, stdin=payload, home=semantic_home
    )
    assert lexical.returncode == 0 and lexical.stdout == ""  # no shared word
    hybrid = run(
        seeded,
        "hook",
        "user-prompt-submit",
        "--db",
        seeded,
        stdin=payload,
        home=semantic_home,
        DSH_RANKING="hybrid",
        DSH_DEBUG="1",
    )
    assert hybrid.returncode == 0, hybrid.stderr
    context = json.loads(hybrid.stdout)["hookSpecificOutput"]["additionalContext"]
    assert LESSON in context
    keyword = json.dumps({"session_id": "s2", "cwd": WS, "prompt": "which port does the API use"})
    bad = run(
        seeded,
        "hook",
        "user-prompt-submit",
        "--db",
        seeded,
        stdin=keyword,
        home=semantic_home,
        DSH_RANKING="fast",
        DSH_DEBUG="1",
    )
    assert bad.returncode == 0 and bad.stderr == ""
    assert "port 8080" in json.loads(bad.stdout)["hookSpecificOutput"]["additionalContext"]


def test_a_lexical_hook_imports_neither_numpy_nor_the_model(
    seeded: str, semantic_home: Path
) -> None:
    # Lexical ranking costs what it cost before: the hybrid modules load only when asked.
    # PYTHONPROFILEIMPORTTIME (-X importtime) names what the console script's process imports.
    payload = json.dumps({"session_id": "s", "cwd": WS, "prompt": "which port does the API use"})
    env = commands.environ(DSH_HOME=str(semantic_home), PYTHONPROFILEIMPORTTIME="1")
    done = commands.run(
        "dsh-knowledge", "hook", "user-prompt-submit", "--db", seeded, input=payload, env=env
    )
    assert done.returncode == 0 and "port 8080" in done.stdout
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "dsh_knowledge.hooks" in imported  # the probe sees the hook itself
    assert not {"numpy", "dsh_knowledge.hybrid", "dsh_common.embedding.model"} & imported
