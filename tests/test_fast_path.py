"""The launchers' fast path prints exactly what the Typer command line prints.

Each argv runs twice as a real process: through the console script (its launcher takes
the fast path when it can) and through ``python -m dsh_<pkg>.cli`` (always the parser - the
one place the tests start the Typer path as a process, to compare it with the launcher).
stdout, stderr and the exit code must be byte-identical, for successes, library errors
and command lines the fast path hands back to the parser. A second check proves the
fast path really ran: typer was never imported.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from dsh_test_support import commands, home
from dsh_test_support.gitcmd import commit_all, init

LESSON = {
    "id": "pool-timeout",
    "title": "连接池耗尽导致超时",
    "tags": ["db"],
    "problem": "Tests time out.",
    "rootCause": "The pool holds 2.",
    "resolution": "Use 10.",
    "whenToUse": "A test hangs on the database.",
    "verification": {"command": "make test", "result": "passed"},
    "files": ["app.py"],
}
RECORD = "---\nschema_version: 1\nid: project/release\ntype: procedure\n---\nrelease checklist\n"


def _environment(world: dict[str, str]) -> dict[str, str]:
    """The toolkit's hermetic environment with HOME at the world's base, DSH_HOME its home."""
    return home.environ(Path(world["base"]), dsh_home=Path(world["home"]))


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    base = tmp_path_factory.mktemp("fast")
    dsh_home, repo = base / "home", base / "repo"
    # Built before any test's own home: the toolkit's environment, passed to every command.
    # dsh-memory init commits; the hardened git runner reads the identity from config only.
    env = home.make_home(base, dsh_home=dsh_home).environ
    init(repo, env=env)
    (repo / "app.py").write_text("POOL = 10\n")
    (repo / "draft.json").write_text(json.dumps(LESSON, ensure_ascii=False))

    def run(program: str, *argv: str) -> None:
        done = commands.run(program, *argv, env=env, cwd=repo)
        assert done.returncode == 0, done.stderr

    run("dsh-compound", "capture", "--input", "draft.json")
    run("dsh-knowledge", "add", "--type", "fact", "--content", "the pool holds 10")
    run("dsh-knowledge", "add", "--type", "lesson", "--content", "连接池太小导致测试超时")
    # No stored vectors: a hybrid retrieve encodes these two on demand, on both paths.
    run("dsh-memory", "init")
    memory = dsh_home / "storages" / "memory"
    (memory / "handbook" / "release.md").write_text(RECORD)
    commit_all(memory, "record", env=env)
    # Reads record usage and build indexes: each run starts from this same snapshot.
    shutil.copytree(dsh_home, base / "snapshot", symlinks=True)
    # The model's weight cache (88 MB) stays out of the snapshot: hybrid cases copy it in.
    weights = base / "weights"
    warm = "from dsh_common import embedding; embedding.warm()"
    subprocess.run(
        [sys.executable, "-c", warm],
        env={**env, "DSH_HOME": str(weights)},
        check=True,
        capture_output=True,
    )
    return {"repo": str(repo), "home": str(dsh_home), "base": str(base)}


def _restore(world: dict[str, str], *, weights: bool = False) -> None:
    shutil.rmtree(world["home"])
    shutil.copytree(Path(world["base"]) / "snapshot", world["home"], symlinks=True)
    if weights:
        source = Path(world["base"]) / "weights" / "cache" / "embedding"
        target = Path(world["home"]) / "cache" / "embedding"
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        shutil.copytree(source, target)


CASES = {
    "dsh-compound": [
        ["recall", "pool"],
        ["recall", "--query", "连接池"],
        ["recall", "pool", "--limit", "2"],
        ["recall", "--query=pool", "--limit=1"],
        ["recall", "pool", "--limit", "11"],
        ["recall", "pool", "--limit", "x"],
        ["recall"],
        ["recall", "a", "--query", "b"],
        ["recall", "pool", "--format", "text"],
        ["recall", "pool", "--bogus"],
        ["recall", "--help"],
        ["recall", "pool", "--workspace", "/nonexistent"],
        ["recall", "a", "b"],
        ["recall", "pool", "--ranking", "lexical"],
        ["recall", "--query", "连接池", "--ranking=hybrid"],
        ["recall", "pool", "--ranking", "bm25"],
        ["recall", "pool", "--ranking"],
    ],
    "dsh-knowledge": [
        ["retrieve", "pool"],
        ["retrieve", "--query", "pool", "--limit", "1"],
        ["retrieve", "pool", "--limit", "0"],
        ["retrieve", "pool", "--limit", "abc"],
        ["retrieve", "pool", "--status", "verified"],
        ["retrieve", "pool", "--status", "nope"],
        ["retrieve"],
        ["search", "pool"],
        ["search", "pool", "--limit", "1"],
        ["search", "--query", "pool", "--workspace", "."],
        ["search", "pool", "--limit", "-1"],
        ["retrieve", "pool", "--format", "text"],
        ["retrieve", "pool", "--prefer", "fact"],
        ["retrieve", "pool", "--ranking", "hybrid"],
        ["retrieve", "pool", "--ranking", "lexical"],
        ["retrieve", "--query=database pool too small", "--ranking=hybrid", "--limit", "1"],
        ["retrieve", "pool", "--ranking", "fast"],
        ["retrieve", "pool", "--ranking", "hybrid", "--format", "text"],
    ],
    "dsh-memory": [
        ["status"],
        ["search", "release"],
        ["search", "--query", "release", "--limit", "1"],
        ["search", "release", "--limit", "abc"],
        ["search"],
        ["context", "release"],
        ["context", "--limit", "21"],
        ["search", "release", "--scope", "nope"],
        ["status", "--root", "/nonexistent"],
        ["search", "x", "--format", "text"],
        ["status", "--help"],
        ["search", "a", "--query", "b"],
        ["pull"],
        ["push"],
        ["pull", "--root", "/nonexistent"],
        ["push", "--format", "text"],
        ["search", "release", "--ranking", "hybrid"],
        ["context", "release", "--ranking=lexical"],
        ["search", "release", "--ranking", "nope"],
        ["context", "--ranking", "hybrid"],
    ],
}
MODULE = {
    "dsh-compound": "dsh_compound",
    "dsh-knowledge": "dsh_knowledge",
    "dsh-memory": "dsh_memory",
}


def _both(world: dict[str, str], tool: str, argv: list[str]) -> tuple[object, object]:
    env = _environment(world)
    outs = []
    for command in ([str(commands.program(tool))], [sys.executable, "-m", f"{MODULE[tool]}.cli"]):
        _restore(world, weights=any("hybrid" in argument for argument in argv))
        done = subprocess.run(
            [*command, *argv], capture_output=True, env=env, cwd=world["repo"], timeout=120
        )
        # context records the time of use: the one field that may differ between runs
        stdout = re.sub(rb'"last_usage":"[^"]*"', b'"last_usage":"<now>"', done.stdout)
        outs.append((done.returncode, stdout, done.stderr))
    return outs[0], outs[1]


@pytest.mark.parametrize(
    ("tool", "argv"),
    [(tool, argv) for tool, cases in CASES.items() for argv in cases],
    ids=lambda v: " ".join(v) if isinstance(v, list) else v,
)
def test_fast_and_parser_paths_print_the_same_bytes(
    world: dict[str, str], tool: str, argv: list[str]
) -> None:
    fast, parsed = _both(world, tool, argv)
    assert fast == parsed
    if "--ranking=hybrid" in argv:  # really ranked by meaning, not lexically with a warning
        assert b'"ranking":"hybrid"' in fast[1], fast


@pytest.mark.parametrize(
    ("tool", "argv"),
    [
        ("dsh-compound", ["recall", "pool"]),
        ("dsh-knowledge", ["retrieve", "pool"]),
        ("dsh-knowledge", ["retrieve", "pool", "--ranking", "hybrid"]),
        ("dsh-memory", ["status"]),
        ("dsh-memory", ["search", "release"]),
    ],
)
def test_the_fast_path_does_not_import_typer(
    world: dict[str, str], tool: str, argv: list[str]
) -> None:
    # PYTHONPROFILEIMPORTTIME (-X importtime) lists every module the console script's process
    # imports; the launcher ends a fast-path answer with os._exit, so the process cannot be
    # asked anything after main().
    env = {**_environment(world), "PYTHONPROFILEIMPORTTIME": "1"}
    done = commands.run(tool, *argv, env=env, cwd=world["repo"])
    assert done.returncode == 0, done.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "dsh_common.fastpath" in imported  # the probe sees the fast path itself
    assert "typer" not in imported
    assert json.loads(done.stdout)


@pytest.mark.parametrize("tool", ["dsh-compound", "dsh-knowledge", "dsh-memory"])
def test_a_command_handed_to_the_parser_runs_with_the_garbage_collector(tool: str) -> None:
    # The fast path switches the cyclic collector off; the parser's commands can run long.
    probe = (
        "import gc, sys; sys.argv = ['x', '--version']\n"
        f"from {MODULE[tool]}.launcher import main\n"
        "try:\n    main()\nexcept SystemExit:\n"
        "    print('GC-ON' if gc.isenabled() else 'GC-OFF', file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().endswith("GC-ON")
