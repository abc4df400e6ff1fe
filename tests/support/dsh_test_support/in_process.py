"""Run a command line in this process: the same stdout, stderr and exit code, no process.

Starting a Python process and importing Typer costs a few hundred milliseconds; a test
that only checks what a command prints and its exit code pays that for nothing. Here the
product's Typer entry point (``dsh_x.cli:main``, which ends in
``sys.exit(dsh_common.cli.run_app(...))``) runs in the test's process with everything a
process would have of its own swapped in for the call: ``sys.argv``, stdin, stdout and
stderr (UTF-8 text over bytes, stderr with ``backslashreplace`` as Python's own, neither a
terminal - so JSON is compact, as when piped), the environment and the working directory.
``SystemExit`` becomes the exit code as the interpreter turns it into one; any other
exception is printed to stderr as a traceback with exit code 1, as the interpreter would.

This is the parser path (``python -m dsh_x.cli``), not the console script's launcher: the
launcher's fast path ends the process with ``os._exit`` and cannot run here. Tests of the
launcher, of exit behaviour, crashes, hooks, agents, timing, signals, resource limits,
terminals or argv bytes use :mod:`dsh_test_support.commands`; the fast path's output is
proven byte-identical to the parser's by ``tests/test_fast_path.py``, and this runner's to
the console script's by ``tests/test_toolkit.py``. What a process keeps for its lifetime
stays between runs here (the loaded sentence encoder, mapped recall caches, the memo of
hashed evidence, a module's own state): a test about a first use or a cold start needs a
process too.

:func:`run` takes a product by its program name (:func:`runner` binds it once per test
module: ``dsh_compound = in_process.runner("dsh-compound")``); :func:`run_main` any
``main()``; :func:`run_app` a Typer app with :func:`dsh_common.cli.run_app`'s keyword
arguments.
"""

from __future__ import annotations

import functools
import importlib
import io
import os
import subprocess
import sys
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

#: Each product's Typer entry point, by the name of its console script.
PROGRAMS = {
    "dsh-compound": "dsh_compound.cli:main",
    "dsh-knowledge": "dsh_knowledge.cli:main",
    "dsh-memory": "dsh_memory.cli:main",
    "dsh-memory-sync": "dsh_memory.cli.sync:main",
}


def entry_point(name: str) -> Callable[[], object]:
    """The ``main`` function behind the program ``name`` (see :data:`PROGRAMS`)."""
    module, _, function = PROGRAMS[name].partition(":")
    found: Callable[[], object] = getattr(importlib.import_module(module), function)
    return found


def run(
    name: str,
    *args: str | bytes,
    input: str | bytes | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | str | None = None,
) -> subprocess.CompletedProcess[str]:
    """``name ARGS`` in this process; the result a process would have given."""
    return run_main(entry_point(name), name, *args, input=input, env=env, cwd=cwd)


def runner(name: str) -> Callable[..., subprocess.CompletedProcess[str]]:
    """:func:`run` bound to the program ``name``."""
    return functools.partial(run, name)


def run_app(
    app: Any,
    prog_name: str,
    *args: str | bytes,
    input: str | bytes | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | str | None = None,
    **options: Any,
) -> subprocess.CompletedProcess[str]:
    """A Typer ``app`` run by :func:`dsh_common.cli.run_app` with ``options``, in process."""
    from dsh_common.cli import run_app as run_typer_app

    def main() -> None:
        sys.exit(run_typer_app(app, prog_name=prog_name, **options))

    return run_main(main, prog_name, *args, input=input, env=env, cwd=cwd)


def run_main(
    main: Callable[[], object],
    prog_name: str,
    *args: str | bytes,
    input: str | bytes | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Call ``main()`` with ``sys.argv = [prog_name, *args]`` and this module's stand-ins
    for a process; ``args`` given as bytes are decoded as the interpreter decodes argv
    (``os.fsdecode``). The environment (default: unchanged) and the working directory are
    restored afterwards, whatever happened."""
    argv = [prog_name, *(os.fsdecode(arg) for arg in args)]
    data = input.encode("utf-8") if isinstance(input, str) else (input or b"")
    stdin = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")
    out_bytes, err_bytes = io.BytesIO(), io.BytesIO()
    stdout = io.TextIOWrapper(out_bytes, encoding="utf-8", write_through=True)
    stderr = io.TextIOWrapper(
        err_bytes, encoding="utf-8", errors="backslashreplace", write_through=True
    )
    saved_streams = (sys.stdin, sys.stdout, sys.stderr)
    saved_argv = sys.argv
    saved_env = dict(os.environ) if env is not None else None
    saved_cwd = os.getcwd() if cwd is not None else None
    sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
    sys.argv = argv
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        if cwd is not None:
            os.chdir(cwd)
        code = _exit_code(main, stderr)
        stdout.flush()
        stderr.flush()
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        sys.argv = saved_argv
        if saved_env is not None:
            os.environ.clear()
            os.environ.update(saved_env)
        if saved_cwd is not None:
            os.chdir(saved_cwd)
    return subprocess.CompletedProcess(
        argv, code, out_bytes.getvalue().decode("utf-8"), err_bytes.getvalue().decode("utf-8")
    )


def _exit_code(main: Callable[[], object], stderr: io.TextIOWrapper) -> int:
    """Run ``main`` and turn how it ended into an exit code, as the interpreter does."""
    try:
        main()
    except SystemExit as exit_:
        if exit_.code is None:
            return 0
        if isinstance(exit_.code, int):
            return exit_.code
        print(exit_.code, file=stderr)
        return 1
    except Exception:
        traceback.print_exc(file=stderr)
        return 1
    return 0
