"""Run a product's command the way its users do: the installed console script, a process.

Users and agent hosts run ``dsh-compound``, ``dsh-knowledge``, ``dsh-memory``: the
launcher script the package installs, which takes the typer-free fast path for hooks and
frequent reads before it hands anything else to the Typer command line. ``python -m
dsh_x.cli`` skips that launcher, so a test of a command's behaviour runs the script next
to this interpreter (:func:`program`) instead. A test that only checks a command's output
can run it in this process with :mod:`dsh_test_support.in_process`, which has the same
signature.

:func:`run` answers a ``subprocess.CompletedProcess`` (text by default, bytes with
``text=False``); stdin is empty unless ``input`` is given, never the terminal's.
:func:`runner` binds a program once per test module
(``dsh_compound = commands.runner("dsh-compound")``).
:func:`ok` and :func:`error` read the JSON convention every product shares.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, overload

#: The folder of this interpreter's console scripts (the workspace's ``.venv/bin``).
BIN = Path(sys.executable).parent
#: The three products' console scripts.
PRODUCTS = ("dsh-compound", "dsh-knowledge", "dsh-memory")
#: Generous: a command that hangs fails its test on this instead of stalling the run.
TIMEOUT = 120


def program(name: str) -> Path:
    """The console script ``name`` installed next to this interpreter."""
    path = BIN / name
    if not path.is_file():
        raise FileNotFoundError(f"{name} is not installed in {BIN}: run `make setup`")
    return path


@overload
def run(
    name: str,
    *args: str | bytes,
    input: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | str | None = None,
    timeout: float = TIMEOUT,
    prefix: Sequence[str] = (),
    text: Literal[True] = True,
    **popen: Any,
) -> subprocess.CompletedProcess[str]: ...
@overload
def run(
    name: str,
    *args: str | bytes,
    input: bytes | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | str | None = None,
    timeout: float = TIMEOUT,
    prefix: Sequence[str] = (),
    text: Literal[False],
    **popen: Any,
) -> subprocess.CompletedProcess[bytes]: ...
def run(
    name: str,
    *args: str | bytes,
    input: str | bytes | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | str | None = None,
    timeout: float = TIMEOUT,
    prefix: Sequence[str] = (),
    text: bool = True,
    **popen: Any,
) -> subprocess.CompletedProcess[str] | subprocess.CompletedProcess[bytes]:
    """``name ARGS`` through its console script, as a process; never raises on its exit.

    ``args`` may be bytes (an argument that is not UTF-8, as a shell can pass one);
    ``env`` replaces the environment (default: this process's, the test's hermetic one -
    see :func:`environ` to change a few variables); ``prefix`` runs the script under
    another program (``unshare``, ``setpriv``); ``popen`` goes to ``subprocess.run``.
    """
    return subprocess.run(
        [*prefix, str(program(name)), *args],
        input=input,
        stdin=subprocess.DEVNULL if input is None else None,
        env=None if env is None else dict(env),
        cwd=cwd,
        capture_output=True,
        text=text,
        timeout=timeout,
        check=False,
        **popen,
    )


def runner(name: str) -> Callable[..., subprocess.CompletedProcess[str]]:
    """:func:`run` bound to the program ``name`` (text results)."""
    return functools.partial(run, name)


def environ(**changes: str | None) -> dict[str, str]:
    """This process's environment with ``changes``: a value sets, None removes."""
    result = dict(os.environ)
    for name, value in changes.items():
        if value is None:
            result.pop(name, None)
        else:
            result[name] = value
    return result


def stdout_json(result: subprocess.CompletedProcess[Any]) -> Any:
    """The JSON document a command printed on stdout."""
    return json.loads(result.stdout)


def stderr_json(result: subprocess.CompletedProcess[Any]) -> Any:
    """The JSON document a command printed on stderr (an error)."""
    return json.loads(result.stderr)


def ok(result: subprocess.CompletedProcess[Any]) -> Any:
    """The result of a command that succeeded: exit 0, nothing on stderr, JSON on stdout."""
    assert result.returncode == 0, result.stderr
    assert not result.stderr, result.stderr
    return stdout_json(result)


def error(result: subprocess.CompletedProcess[Any]) -> dict[str, str]:
    """``{"code", "message"}`` of a command that failed as every product fails: exit 1,
    nothing on stdout, exactly ``{"error": {"code", "message"}}`` on stderr (so no
    traceback either)."""
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    assert not result.stdout, result.stdout
    document = stderr_json(result)
    assert set(document) == {"error"}, document
    assert set(document["error"]) == {"code", "message"}, document
    return dict(document["error"])
