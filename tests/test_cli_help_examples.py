"""Every command of every CLI shows an example in its ``--help`` (issue #12), read from the
command list each program prints, so a new command without one fails here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


def _help(*args: str) -> str:
    done = subprocess.run(
        [str(BIN / args[0]), *args[1:], "--help"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def _commands(program: str) -> list[str]:
    text = _help(program)
    listing = text.split("Commands:\n", 1)[1].split("\n\n", 1)[0]
    return [line.split()[0] for line in listing.splitlines() if line.strip()]


@pytest.mark.parametrize("program", ["dsh-compound", "dsh-knowledge", "dsh-memory"])
def test_every_command_help_ends_with_an_example(program: str) -> None:
    commands = _commands(program)
    assert len(commands) >= 9
    missing = [name for name in commands if "Example" not in _help(program, name)]
    assert missing == [], f"{program}: no example in --help of {missing}"
    # The hook's own help (it bypasses the parser) names the program in its example.
    assert f"| {program} hook " in _help(program, "hook")
