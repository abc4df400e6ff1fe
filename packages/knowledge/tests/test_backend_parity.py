"""The same operations give the same JSON on SQLite and PostgreSQL (ids and timestamps aside).

One scripted session - lifecycle rules and refusals, limits with ``total``/``truncated``,
literal search, ranked retrieval with explanations and folded near-duplicates, Chinese,
review, extraction, health, the seven agent tools and the prompt hook's context block with
its per-session de-duplication - runs on a fresh store of each backend; the two transcripts
must be equal once ids are numbered by first appearance and timestamps blanked. A property
test then copies random corpora from SQLite to PostgreSQL (``import``: ids and timestamps
kept) and requires identical ranked retrieval for random queries and options.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_knowledge.context_block import build_context
from dsh_knowledge.errors import KnowledgeError
from dsh_knowledge.extraction import UserMessage, extract_candidates
from dsh_knowledge.health import check_health
from dsh_knowledge.repository import UNSET, KnowledgeRepository
from dsh_knowledge.retrieval import retrieve_relevant_knowledge
from dsh_knowledge.review import review_candidates, set_status
from dsh_knowledge.store import KnowledgeStore
from dsh_knowledge.tools import ToolContext, call_tool
from dsh_knowledge.transfer import import_store

from .agent_helpers import command, make_repo
from .pg_server import DatabaseFactory
from .test_search_index import _items, _texts

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_STAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")
_STORE = re.compile(r"(postgresql://\S+?|/\S+?\.sqlite)(?=[ :)]|$)")


def _normalise(transcript: list[Any]) -> str:
    text = json.dumps(transcript, ensure_ascii=False, sort_keys=True)
    numbers: dict[str, str] = {}
    text = _UUID.sub(lambda m: numbers.setdefault(m.group(0), f"<id{len(numbers)}>"), text)
    text = _STAMP.sub("<time>", text)
    return _STORE.sub("<store>", text)


def _scenario(location: str, repo: Path) -> list[Any]:
    """Every behaviour the backends must share, as one transcript of results and errors."""
    out: list[Any] = []

    def step(name: str, action: Callable[[], Any]) -> Any:
        try:
            result = action()
        except KnowledgeError as error:
            out.append([name, "error", error.code, error.message])
            return None
        out.append([name, result])
        time.sleep(0.003)  # distinct millisecond timestamps: ties break the same way
        return result

    ws, other = str(repo), "/elsewhere"
    evidence = [{"type": "file", "source": "src/app.py", "timestamp": "2025-01-01T00:00:00.000Z"}]
    with KnowledgeStore(location) as store:
        r = KnowledgeRepository(store)
        a = step(
            "add",
            lambda: r.create(
                type="fact",
                content="The API listens on port 8080.",
                scope={"workspace": ws},
                evidence=evidence,
            ),
        )
        b = step(
            "add",
            lambda: r.create(
                type="decision",
                content="Retries use exponential backoff with jitter for the payment service.",
                scope={"workspace": ws, "project": "pay"},
            ),
        )
        c = step(
            "add",
            lambda: r.create(
                type="decision",
                content="Retries use exponential backoff with jitter for the payment service!",
                scope={"workspace": ws, "project": "pay"},
            ),
        )
        d = step(
            "add",
            lambda: r.create(
                type="lesson",
                content="数据库连接池耗尽导致超时，通过限制重试次数解决。",
                scope={"workspace": ws},
            ),
        )
        e = step(
            "add",
            lambda: r.create(
                type="fact", content="Coverage is 100% on main_branch.", scope={"workspace": ws}
            ),
        )
        f = step(
            "add",
            lambda: r.create(
                type="decision",
                content="Retries use exponential backoff with jitter for the payment service.",
                scope={"workspace": ws, "project": "pay"},
            ),
        )
        elsewhere = {"workspace": other, "project": "pay"}
        step(
            "add-other",
            lambda: r.create(type="fact", content="The API listens on 9090.", scope=elsewhere),
        )
        step("bad-type", lambda: r.create(type="rumour", content="x", scope={"workspace": ws}))
        step("blank", lambda: r.create(type="fact", content="  ", scope={"workspace": ws}))
        for item in (a, b, c, d, f):
            step("verify", lambda item=item: r.verify(item["id"]))
        step("supersede-self", lambda: r.supersede(b["id"], b["id"]))
        step("supersede-candidate", lambda: r.supersede(e["id"], a["id"]))
        step("supersede-scope", lambda: r.supersede(a["id"], b["id"]))
        step("supersede", lambda: r.supersede(b["id"], c["id"]))
        step("supersede-again", lambda: r.supersede(b["id"], c["id"]))
        step("verify-superseded", lambda: r.verify(b["id"]))
        step("scope-change", lambda: r.update(c["id"], scope={"workspace": other}))
        step("update", lambda: r.update(e["id"], content="Coverage is 100% on Main_Branch."))
        step("get-missing", lambda: r.require("missing"))
        step("list", lambda: r.list(workspace=ws))
        step("list-limit", lambda: (r.list(workspace=ws, limit=2), r.count(workspace=ws)))
        step("list-project", lambda: r.list(project="pay"))
        step("list-wide", lambda: r.list(workspace=ws, project=None, status="verified"))
        step("search-pct", lambda: r.search("100%"))
        step("search-case", lambda: r.search("MAIN_BRANCH", workspace=ws, project=UNSET))
        step("search-long", lambda: r.search("x" * 60_000))
        for query, options in (
            ("which port does the api listen on", {}),
            ("payment retries backoff jitter", {"project": "pay"}),
            ("payment retries", {"project": "pay", "preferred_types": ["decision"]}),
            ("数据库连接池", {}),
            ("连接池 retries", {"status": "verified", "limit": 1}),
            ("coverage main", {"type": "fact"}),
        ):
            counts: dict[str, int] = {}
            step(
                "retrieve",
                lambda q=query, o=options, c=counts: retrieve_relevant_knowledge(
                    r, q, workspace=ws, counts=c, **o
                ),
            )
            out.append(["counts", counts])
            # Hybrid: the same fused scores, channels and order (the vectors are filled on
            # demand by the first query, in item id order on both backends).
            counts, warnings = {}, []
            step(
                "retrieve-hybrid",
                lambda q=query, o=options, c=counts, w=warnings: retrieve_relevant_knowledge(
                    r, q, workspace=ws, counts=c, ranking="hybrid", warnings=w, **o
                ),
            )
            out.append(["counts", counts, warnings])
        step(
            "retrieve-cross-lingual",
            lambda: retrieve_relevant_knowledge(
                r, "database pool ran out and requests timed out", workspace=ws, ranking="hybrid"
            ),
        )
        step("review", lambda: review_candidates(r, workspace=ws, repo_dir=repo))
        redis = "We decided to use Redis for the session cache."
        # One admitted candidate per call: two in one call could share a millisecond, and
        # equal timestamps order by the (random) ids - differently in each run.
        for seq, text in ((1, redis), (2, "The backend must never log bodies.")):
            step(
                "extract",
                lambda q=seq, t=text: extract_candidates(
                    r, [[UserMessage(q, t)]], session_id="s-1", workspace=ws
                ).to_json(),
            )
        step(
            "extract-again",
            lambda: extract_candidates(
                r, [[UserMessage(3, redis)]], session_id="s-1", workspace=ws
            ).to_json(),
        )
        step("set-status", lambda: set_status(r, [d["id"], "missing"], "archived"))
        step("health", lambda: check_health([r.require(a["id"])], repo, include_guidance=True))
        context = ToolContext(repository=r, workspace=ws, project="pay", session_id="mcp-1")
        for name, arguments in (
            (
                "knowledge_add",
                {
                    "type": "fact",
                    "content": "Webhooks are signed with HMAC.",
                    "evidence": [{"type": "file", "source": "src/app.py"}],
                },
            ),
            ("knowledge_search", {"query": "webhooks signed", "limit": 1}),
            ("knowledge_search", {"query": "payment", "project": None}),
            ("knowledge_search", {"query": "how do retries back off", "ranking": "hybrid"}),
            ("knowledge_list", {"limit": 2}),
            ("knowledge_get", {"id": a["id"], "includeHealth": True}),
            ("knowledge_get", {"id": "nope"}),
            ("knowledge_check_freshness", {"id": a["id"]}),
            ("knowledge_health", {"ids": [a["id"], "nope"], "includeGuidance": True}),
            ("knowledge_archive", {"id": e["id"]}),
            ("knowledge_add", {"type": "fact", "content": "password=hunter2secret99"}),
            ("knowledge_search", {"query": "q" * 300}),
        ):
            step(name, lambda n=name, a_=arguments: call_tool(context, n, a_))
        for session in ("hook-1", "hook-1", "hook-2"):
            step(
                "context",
                lambda s=session: build_context(
                    "payment retries and the api port",
                    repository=r,
                    workspace=ws,
                    project="pay",
                    session_id=s,
                ),
            )
        step(
            "context-hybrid",
            lambda: build_context(
                "what did we learn about the database pool",
                repository=r,
                workspace=ws,
                project="pay",
                session_id="hook-3",
                ranking="hybrid",
            ),
        )
    return out


def test_one_scripted_session_gives_the_same_json_on_both_backends(
    tmp_path: Path, postgres_databases: DatabaseFactory
) -> None:
    repo = make_repo(tmp_path / "repo", {"src/app.py": "PORT = 8080\n"})
    sqlite_run = _scenario(str(tmp_path / "k.sqlite"), repo)
    postgres_run = _scenario(postgres_databases.create(), repo)
    assert _normalise(sqlite_run) == _normalise(postgres_run)
    # The transcript exercised what it claims to: refusals, folding, Chinese, the hook.
    text = _normalise(sqlite_run)
    for needle in (
        "invalid-supersede",
        "invalid-transition",
        "scope-change-forbidden",
        "not-found",
        "invalid-input",
        '"suppressedSimilarIds": ["<id',
        "数据库",
        "<dsh-knowledge>",
        "privacy",
        '"truncated": true',
        '"channels": ["semantic"]',
        '"channels": ["lexical", "semantic"]',
        '"ranking": "hybrid"',
    ):
        assert needle in text, needle


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [command(), *args], capture_output=True, text=True, check=False, timeout=120
    )


def test_command_line_errors_and_codes_are_the_same_on_both_backends(
    tmp_path: Path, postgres_databases: DatabaseFactory
) -> None:
    transcripts = []
    for location in (str(tmp_path / "k.sqlite"), postgres_databases.create()):
        runs = []
        for args in (
            ["add", "--workspace", "/w", "--type", "fact", "--content", "alpha port 8080"],
            ["get", "missing"],
            ["list", "--limit", "0"],
            ["search", "ALPHA", "--limit", "1"],  # the fast path
            ["retrieve", "alpha port", "--workspace", "/w", "--limit", "1"],
            ["retrieve", "alpha", "--workspace", "/w", "--prefer", "fact"],  # the parser path
            ["supersede", "missing", "--by", "missing-too"],
            ["update", "missing", "--content", "x"],
            ["verify"],
        ):
            done = _cli("--db", location, *args)
            runs.append([args, done.returncode, done.stdout, done.stderr])
        transcripts.append(_normalise(runs))
    assert transcripts[0] == transcripts[1]


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    items=_items,
    query=_texts(max_words=5),
    project=st.sampled_from([None, "p"]),
    limit=st.sampled_from([None, 1, 3, 100]),
    status=st.sampled_from([None, "candidate", "verified"]),
    preferred=st.sampled_from([None, ["lesson"], ["decision", "fact"]]),
)
def test_random_corpora_rank_identically_on_postgres(  # noqa: PLR0917 - one per strategy
    items: list[tuple[Any, ...]],
    query: str,
    project: str | None,
    limit: int | None,
    status: str | None,
    preferred: list[str] | None,
    tmp_path_factory: pytest.TempPathFactory,
    postgres_databases: DatabaseFactory,
) -> None:
    from .test_search_index import _corpus

    source = tmp_path_factory.mktemp("parity") / "k.sqlite"
    options: dict[str, Any] = {
        "workspace": "/w",
        "project": project,
        "limit": limit,
        "status": status,
        "preferred_types": preferred,
    }
    with KnowledgeStore(source) as lite:
        _corpus(lite, items, legacy_stamps=True)
        lite_counts: dict[str, int] = {}
        expected = retrieve_relevant_knowledge(
            KnowledgeRepository(lite), query, counts=lite_counts, **options
        )
    with KnowledgeStore(postgres_databases.create()) as pg:
        repository = KnowledgeRepository(pg)
        import_store(repository, str(source))
        pg_counts: dict[str, int] = {}
        got = retrieve_relevant_knowledge(repository, query, counts=pg_counts, **options)
        scanned = retrieve_relevant_knowledge(repository, query, use_index=False, **options)
    assert got == expected == scanned
    assert pg_counts == lite_counts
    # Hybrid ranking too: the same fused order, scores and accounts on both backends.
    hybrid = {"ranking": "hybrid", **options}
    lite_warnings: list[str] = []
    pg_warnings: list[str] = []
    with KnowledgeStore(source) as lite:
        lite_counts = {}
        expected = retrieve_relevant_knowledge(
            KnowledgeRepository(lite), query, counts=lite_counts, warnings=lite_warnings, **hybrid
        )
    with KnowledgeStore(postgres_databases.create()) as pg:
        repository = KnowledgeRepository(pg)
        import_store(repository, str(source))
        pg_counts = {}
        got = retrieve_relevant_knowledge(
            repository, query, counts=pg_counts, warnings=pg_warnings, **hybrid
        )
    assert got == expected
    assert (pg_counts, pg_warnings) == (lite_counts, lite_warnings)
