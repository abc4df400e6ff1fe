"""Every command of every CLI shows an example in its ``--help``, read from the command list
each program prints, so a new command without one fails here.

The help users see: Typer's, run in process, and for ``hook`` the console script's (its
launcher answers ``hook`` itself, before the parser is loaded).
"""

from __future__ import annotations

import pytest
from dsh_test_support import commands, in_process


def _help(program: str, *command: str) -> str:
    run = commands.run if command[:1] == ("hook",) else in_process.run
    done = run(program, *command, "--help")
    assert done.returncode == 0, done.stderr
    return done.stdout


def _commands(program: str) -> list[str]:
    text = _help(program)
    listing = text.split("Commands:\n", 1)[1].split("\n\n", 1)[0]
    return [line.split()[0] for line in listing.splitlines() if line.strip()]


@pytest.mark.parametrize("program", ["dsh-compound", "dsh-knowledge", "dsh-memory"])
def test_every_command_help_ends_with_an_example(program: str) -> None:
    names = _commands(program)
    assert len(names) >= 9
    missing = [name for name in names if "Example" not in _help(program, name)]
    assert missing == [], f"{program}: no example in --help of {missing}"
    # The hook's own help (it bypasses the parser) names the program in its example.
    assert f"| {program} hook " in _help(program, "hook")
