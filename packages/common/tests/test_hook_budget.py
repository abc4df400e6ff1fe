"""Every hook answers within its wall-clock budget, whatever its work does.

The runaway cases are real: an endless Python loop, one that swallows the first
interruption, and a regular expression backtracking inside C (where no Python code runs
until it returns). Each runs in its own interpreter, as a hook process does.
"""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap
import time
from collections.abc import Mapping
from typing import Any

import pytest

from dsh_common.agent_hooks import (
    BUDGET_ENVIRONMENT,
    DEFAULT_BUDGET_SECONDS,
    budget_seconds,
    run_hook,
)


def test_an_endless_handler_is_cut_at_the_budget_silently(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(BUDGET_ENVIRONMENT, "0.3")

    def endless(payload: Mapping[str, Any], args: list[str]) -> str:
        while True:
            pass

    out = io.StringIO()
    code = run_hook(
        "session-start", {"session-start": endless}, stdin=io.BytesIO(b"{}"), stdout=out
    )
    assert (code, out.getvalue()) == (0, "")


def test_the_budget_is_disarmed_after_the_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    import signal

    monkeypatch.setenv(BUDGET_ENVIRONMENT, "0.1")
    before = signal.getsignal(signal.SIGALRM)
    out = io.StringIO()
    handlers = {"session-start": lambda payload, args: "ok"}
    assert run_hook("session-start", handlers, stdout=out, stdin=io.BytesIO(b"{}")) == 0
    assert "ok" in out.getvalue()
    # A timer left armed would raise here (or kill the process) well within this sleep.
    time.sleep(0.4)
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) == before


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("", DEFAULT_BUDGET_SECONDS),
        ("2.5", 2.5),
        ("0", DEFAULT_BUDGET_SECONDS),
        ("-1", DEFAULT_BUDGET_SECONDS),
        ("soon", DEFAULT_BUDGET_SECONDS),
        ("nan", DEFAULT_BUDGET_SECONDS),
        ("inf", DEFAULT_BUDGET_SECONDS),
    ],
)
def test_the_budget_setting(raw: str, expected: float) -> None:
    assert budget_seconds({BUDGET_ENVIRONMENT: raw}) == expected


RUNAWAY = textwrap.dedent(
    """
    import io, itertools, re, sys
    from dsh_common.agent_hooks import run_hook

    def swallowing(payload, args):
        while True:
            try:
                while True:
                    pass
            except Exception:
                pass  # a broad except must not keep the hook alive

    def backtracking(payload, args):
        re.match(r"(a+)+$", "a" * 64 + "b")  # exponential backtracking

    def stuck_in_c(payload, args):
        # Hours of one C loop that never checks for signals (nor lets a thread run).
        return str(any(itertools.repeat(0, 10**13)))

    handler = {"swallowing": swallowing, "backtracking": backtracking,
               "stuck-in-c": stuck_in_c}[sys.argv[1]]
    sys.exit(run_hook("session-start", {"session-start": handler}, stdin=io.BytesIO(b"{}")))
    """
)


@pytest.mark.parametrize("kind", ["swallowing", "backtracking", "stuck-in-c"])
def test_a_hook_that_never_yields_still_ends(kind: str) -> None:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", RUNAWAY, kind],
        capture_output=True,
        text=True,
        timeout=60,
        env={**__import__("os").environ, BUDGET_ENVIRONMENT: "0.3"},
        check=False,
    )
    assert done.stdout == ""
    assert done.stderr == ""
    # Work that returns to the interpreter ends silently with 0; work stuck in C that
    # never looks at signals is ended by the C watchdog (faulthandler's exit status is 1).
    assert done.returncode == (1 if kind == "stuck-in-c" else 0)
    assert time.monotonic() - started < 30  # far below either host's hook timeout
