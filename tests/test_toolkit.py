"""The shared test toolkit keeps its promises (tests/support/dsh_test_support).

A command run in process prints what the installed console script prints, byte for byte,
with the same exit code - else the tests converted to it would check something users never
see. The hermetic environment keeps a developer's settings out, the suite's own switches in.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from dsh_test_support import commands, gitcmd, home, in_process

CASES = [
    ("dsh-compound", ["--version"]),
    ("dsh-compound", ["template"]),
    ("dsh-compound", ["template", "--format", "text"]),
    ("dsh-compound", ["recall", "--workspace", "{tmp}", "--", "pool"]),
    ("dsh-compound", ["recall", "--workspace", "{tmp}", "--query", "x", "--limit", "11"]),
    ("dsh-compound", ["recall", "--workspace", "{tmp}", "--bogus"]),
    ("dsh-compound", ["inspect", "--workspace", "{tmp}", "--id", "Nope"]),
    ("dsh-compound", ["capture", "--help"]),
    ("dsh-compound", []),
    ("dsh-compound", ["nonexistent-command"]),
    ("dsh-knowledge", ["--version"]),
    ("dsh-knowledge", ["--db", "{tmp}/k.sqlite", "list", "--workspace", "{tmp}"]),
    ("dsh-memory", ["--root", "{tmp}/nowhere", "status", "--limit", "x"]),
    ("dsh-memory", ["search", "a", "--query", "b"]),
    ("dsh-memory-sync", ["--help"]),
    ("dsh-memory-sync", ["--bogus"]),
]


@pytest.mark.parametrize(
    ("program", "args"), CASES, ids=lambda v: (" ".join(v) or "bare") if isinstance(v, list) else v
)
def test_in_process_prints_what_the_console_script_prints(
    program: str, args: list[str], tmp_path: Path
) -> None:
    filled = [argument.format(tmp=tmp_path) for argument in args]
    process = commands.run(program, *filled, cwd=tmp_path)
    here = in_process.run(program, *filled, cwd=tmp_path)
    assert (here.returncode, here.stdout, here.stderr) == (
        process.returncode,
        process.stdout,
        process.stderr,
    )
    assert process.stdout or process.stderr  # a real answer was compared


def test_in_process_gives_stdin_and_restores_the_process(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "a.js").write_text("a\n")
    template = commands.ok(in_process.run("dsh-compound", "template"))
    template.update(id="from-stdin", files=["src/a.js"])
    before = (os.getcwd(), dict(os.environ))
    done = in_process.run(
        "dsh-compound",
        "capture",
        "--input",
        "-",
        input=json.dumps(template),
        cwd=workspace,
        env={**os.environ, "DSH_JSON_INDENT": "1"},
    )
    assert commands.ok(done)["id"] == "from-stdin"
    assert done.stdout.startswith("{\n")  # the environment given was the command's
    assert (os.getcwd(), dict(os.environ)) == before


def test_in_process_reports_a_crash_as_the_interpreter_would() -> None:
    def crash() -> None:
        raise RuntimeError("boom")

    done = in_process.run_main(crash, "crash")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("Traceback") and "RuntimeError: boom" in done.stderr


def test_ok_and_error_read_the_json_convention() -> None:
    good = subprocess.CompletedProcess([], 0, '{"a":1}\n', "")
    bad = subprocess.CompletedProcess([], 1, "", '{"error":{"code":"c","message":"m"}}\n')
    assert commands.ok(good) == {"a": 1}
    assert commands.error(bad) == {"code": "c", "message": "m"}
    with pytest.raises(AssertionError):
        commands.ok(bad)
    with pytest.raises(AssertionError):
        commands.error(good)
    with pytest.raises(AssertionError):  # a traceback beside the document is not the convention
        commands.ok(subprocess.CompletedProcess([], 0, "{}", "Traceback ..."))


def test_the_hermetic_environment_keeps_the_developers_settings_out(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    leaked = {
        "DSH_KNOWLEDGE_DB": "/home/dev/knowledge.sqlite",
        "DSH_RANKING": "hybrid",
        "DSH_MEMORY_ROOT": "/home/dev/memory",
        "PGPASSWORD": "secret",
        "PGSERVICEFILE": "/home/dev/.pg_service.conf",
        "GIT_DIR": "/home/dev/project/.git",
        "CODEX_HOME": "/home/dev/.codex",
        "PRE_COMMIT_FROM_REF": "HEAD~1",
    }
    kept = {"DSH_REQUIRE_ALL_TIERS": "1", "DSH_TEST_POSTGRES_URL": "postgresql://x/y"}
    for name, value in {**leaked, **kept}.items():
        monkeypatch.setenv(name, value)
    made = home.enter(monkeypatch, tmp_path / "home")
    assert not set(leaked) & set(os.environ)
    assert {name: os.environ[name] for name in kept} == kept
    assert os.environ["HOME"] == str(tmp_path / "home")
    assert os.environ["DSH_HOME"] == str(tmp_path / "home" / ".dsh")
    assert os.environ["GIT_CONFIG_GLOBAL"] == str(made.gitconfig)
    # Plain git and the hardened runner (which reads $HOME/.gitconfig) see one identity.
    repo = gitcmd.init(tmp_path / "repo")
    gitcmd.commit_file(repo, "a.txt", "a\n")
    assert (
        gitcmd.git(repo, "log", "--format=%an <%ae>").strip() == "dsh test <test@example.invalid>"
    )
    assert gitcmd.git(repo, "branch", "--show-current").strip() == "main"
    assert "DSH_HOME" not in home.environ(tmp_path, dsh_home=None)
