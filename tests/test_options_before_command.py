"""Every CLI takes its common options on either side of the command, with equal results.

Through the installed commands, fast path and full parser both: dsh-compound's
``--workspace`` (each command's own option), dsh-knowledge's ``--db`` (the program's) and
``--workspace`` / ``--project`` (each command's), dsh-memory's ``--root``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dsh_test_support import commands, in_process


@pytest.fixture
def places(tmp_path: Path) -> dict[str, Path]:
    """A lesson, a knowledge item and a memory repository (set up in process)."""
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    (work / "src" / "login.js").write_text("login()\n")
    draft = {
        "id": "login-timeout",
        "title": "Login times out",
        "tags": ["login"],
        "problem": "p",
        "rootCause": "r",
        "resolution": "s",
        "whenToUse": "login",
        "verification": {"command": "c", "result": "r"},
        "files": ["src/login.js"],
    }
    (work / "draft.json").write_text(json.dumps(draft))
    captured = in_process.run(
        "dsh-compound",
        "capture",
        "--workspace",
        str(work),
        "--input",
        str(work / "draft.json"),
        cwd=work,
    )
    assert captured.returncode == 0, captured.stderr
    db = tmp_path / "k.db"
    fact = ["--type", "fact", "--content", "Login runs on port 8080."]
    added = in_process.run(
        "dsh-knowledge",
        "--db",
        str(db),
        "add",
        "--workspace",
        str(work),
        "--project",
        "web",
        *fact,
        cwd=work,
    )
    assert added.returncode == 0, added.stderr
    memory = tmp_path / "memory"
    assert in_process.run("dsh-memory", "--root", str(memory), "init", cwd=tmp_path).returncode == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    return {"work": work, "db": db, "memory": memory, "elsewhere": elsewhere}


CASES = [
    ("dsh-compound", ["--workspace", "{work}"], ["recall", "login"]),  # fast path
    ("dsh-compound", ["--workspace={work}"], ["recall", "--", "login"]),  # parser
    ("dsh-compound", ["--workspace", "{work}"], ["check"]),
    ("dsh-compound", ["--workspace", "{work}"], ["inspect", "--id", "login-timeout"]),
    (
        "dsh-knowledge",
        ["--db", "{db}", "--workspace", "{work}", "--project", "web"],
        ["search", "port"],
    ),  # fast path
    ("dsh-knowledge", ["--workspace", "{work}", "--db", "{db}", "--project", "web"], ["list"]),
    ("dsh-memory", ["--root", "{memory}"], ["status"]),
]


@pytest.mark.parametrize(("program", "options", "command"), CASES)
def test_before_equals_after(
    places: dict[str, Path], program: str, options: list[str], command: list[str]
) -> None:
    filled = [option.format(**places) for option in options]
    split = command.index("--") if "--" in command else len(command)
    before = commands.run(program, *filled, *command, cwd=places["elsewhere"])
    after = commands.run(
        program, *command[:split], *filled, *command[split:], cwd=places["elsewhere"]
    )
    assert before.returncode == 0, before.stderr
    assert (before.stdout, before.stderr) == (after.stdout, after.stderr)
    assert json.loads(before.stdout)  # a real answer, not an empty one


def test_an_option_the_command_does_not_have_is_still_refused(places: dict[str, Path]) -> None:
    done = commands.run(
        "dsh-compound", "--workspace", str(places["work"]), "template", cwd=places["work"]
    )
    assert done.returncode == 1
    error = json.loads(done.stderr)["error"]
    assert error["code"] == "invalid-arguments" and "--workspace" in error["message"]
