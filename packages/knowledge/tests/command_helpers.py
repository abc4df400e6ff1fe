"""``dsh-knowledge`` for the tests of what it refuses: run in process, or as the installed
console script where the test needs a process (arguments that are not UTF-8, a hook); the
JSON it prints, and a file's digest to show nothing changed."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

from dsh_test_support import commands, in_process


def run(*args: str | bytes, process: bool = False) -> subprocess.CompletedProcess[Any]:
    """``dsh-knowledge ARGS``: in process, or (``process``) the console script with bytes
    output."""
    if process:
        return commands.run("dsh-knowledge", *args, text=False)
    return in_process.run("dsh-knowledge", *args)


def ok(*args: str | bytes, process: bool = False) -> Any:
    done = run(*args, process=process)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def fails(*args: str | bytes, process: bool = False) -> dict[str, str]:
    """The error of a command refused as documented: exit 1, nothing on stdout, a code
    other than ``internal-error`` and a message."""
    done = run(*args, process=process)
    assert done.returncode == 1, done.stdout
    assert not done.stdout, done.stdout
    error: dict[str, str] = json.loads(done.stderr)["error"]
    assert error["message"]
    assert error["code"] != "internal-error", error
    return error


def add(db: str | Path, content: str, *extra: str) -> dict[str, Any]:
    item: dict[str, Any] = ok(
        "--db", str(db), "add", "--workspace", "/w", "--type", "fact", "--content", content, *extra
    )
    return item


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
