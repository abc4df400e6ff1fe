"""`make demo` tells a short story: it runs, stays short, and every step is a `$` line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _demo(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "demo.py"), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_demo_is_a_short_story() -> None:
    out = _demo()
    lines = out.splitlines()
    assert len(lines) < 150
    commands = [line for line in lines if line.startswith("$ ")]
    assert len(commands) >= 14
    for tool in ("dsh-compound", "dsh-knowledge", "dsh-memory"):
        assert any(line.startswith(f"$ {tool} ") for line in commands), tool
    assert "needsReview: login-timeout" in out
    assert "status: potentially_stale" in out
    assert "marker: [DPSK MEMORY: UNTRUSTED CONTEXT]" in out
    assert lines[-5] == "# Summary"
    assert not any(line.startswith("{") for line in lines)  # no raw JSON by default


def test_demo_verbose_shows_the_full_json() -> None:
    out = _demo("--verbose")
    assert '  "digest": "' in out
    assert len(out.splitlines()) > 150
