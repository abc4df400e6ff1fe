"""Without ICU, each installed command says so exactly when it segments text with the fallback.

ICU is hidden from the real installed commands the way a platform without a pyicu-wheels
wheel hides it: a ``sitecustomize`` on ``PYTHONPATH`` installs a meta-path finder that
refuses ``icu`` (and notes that it was asked). dsh-compound segments its recall queries
with :mod:`dsh_common.text`, so it prints the one fallback warning of that module.
dsh-knowledge and dsh-memory tokenise with their own rules (letters, numbers and
dsh-common's Han bigrams: no word segmenter at all), so without ICU they answer exactly as
with it, never ask for ICU, and have nothing to warn about.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

import pytest
from dsh_test_support import commands, in_process

from dsh_common.text import FALLBACK_WARNING

HIDE_ICU = textwrap.dedent(
    """
    import os, sys

    class HideIcu:
        def find_spec(self, name, path=None, target=None):
            if name == "icu" or name.startswith("icu."):
                with open(os.environ["ICU_ASKED"], "a") as log:
                    log.write(name + "\\n")
                raise ImportError("icu hidden by the test")
            return None

    sys.meta_path.insert(0, HideIcu())
    """
)


@pytest.fixture
def setup(tmp_path: Path) -> dict[str, Path]:
    """A lesson, a knowledge item and a memory record, all about the connection pool (set up
    in process: ICU is hidden only from the commands under test)."""
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text(HIDE_ICU)
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    (work / ".git").mkdir()
    (work / "src" / "pool.py").write_text("POOL = 2\n")
    draft = {
        "id": "pool-exhausted",
        "title": "数据库连接池耗尽导致登录超时",
        "tags": ["数据库"],
        "problem": "登录超时",
        "rootCause": "连接池太小",
        "resolution": "调大连接池",
        "whenToUse": "登录测试超时",
        "verification": {"command": "c", "result": "r"},
        "files": ["src/pool.py"],
    }
    (work / "draft.json").write_text(json.dumps(draft, ensure_ascii=False))
    memory = tmp_path / "memory"
    for argv in (
        ["dsh-compound", "capture", "--input", "draft.json"],
        [
            "dsh-knowledge",
            "--db",
            str(tmp_path / "k.db"),
            "add",
            "--type",
            "fact",
            "--content",
            "数据库连接池耗尽会导致登录超时",
        ],
        ["dsh-memory", "--root", str(memory), "init"],
    ):
        done = in_process.run(argv[0], *argv[1:], cwd=work)
        assert done.returncode == 0, done.stderr
    write = in_process.run(
        "dsh-memory",
        "--root",
        str(memory),
        "write",
        "handbook/pool.md",
        "-",
        input="# 连接池\n数据库连接池耗尽会导致登录超时。\n",
    )
    assert write.returncode == 0, write.stderr
    return {
        "hide": hide,
        "work": work,
        "db": tmp_path / "k.db",
        "memory": memory,
        "asked": tmp_path / "icu-asked",
    }


def run(setup: dict[str, Path], argv: list[str], hide: bool) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ICU_ASKED": str(setup["asked"])}
    env.pop("PYTHONWARNINGS", None)
    if hide:
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(setup["hide"]), env.get("PYTHONPATH")])
        )
    return commands.run(argv[0], *argv[1:], cwd=setup["work"], env=env)


def test_compound_warns_once_and_still_finds_the_chinese_lesson(setup: dict[str, Path]) -> None:
    done = run(setup, ["dsh-compound", "recall", "连接池耗尽"], hide=True)
    assert done.returncode == 0, done.stderr
    assert [hit["id"] for hit in json.loads(done.stdout)["results"]] == ["pool-exhausted"]
    assert done.stderr.count(FALLBACK_WARNING) == 1
    assert setup["asked"].read_text().splitlines()[0] == "icu"


@pytest.mark.parametrize(
    "argv",
    [
        ["dsh-knowledge", "--db", "{db}", "search", "连接池耗尽"],
        ["dsh-memory", "--root", "{memory}", "search", "连接池耗尽"],
    ],
)
def test_knowledge_and_memory_need_no_segmenter(setup: dict[str, Path], argv: list[str]) -> None:
    filled = [arg.format(**setup) for arg in argv]
    run(setup, filled, hide=False)  # the first search builds memory's index: warm it
    with_icu = run(setup, filled, hide=False)
    without = run(setup, filled, hide=True)
    assert without.returncode == 0, without.stderr
    assert without.stdout == with_icu.stdout and "连接池" in without.stdout
    assert without.stderr == "" and FALLBACK_WARNING not in without.stderr
    assert not setup["asked"].exists()  # ICU was never even asked for
