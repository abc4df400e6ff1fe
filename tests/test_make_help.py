"""The Makefile's targets: `make help` lists every one, and `make setup` installs the agent
CLIs the tests drive."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The tests that drive the real Claude Code and Codex CLIs, each naming the npm packages it
# looks for in .tools/agent-clis (and installs there itself when they are missing).
AGENT_CLI_TESTS = (
    ROOT / "tests" / "agents" / "conftest.py",
    ROOT / "packages" / "memory-repo" / "tests" / "test_real_agents.py",
)


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_help_lists_every_phony_target() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    declared = set(re.search(r"^\.PHONY:(.*)$", makefile, re.M)[1].split())  # type: ignore[index]
    done = subprocess.run(
        ["make", "--no-print-directory", "-C", str(ROOT), "help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    listed = {line.split("\t")[0] for line in done.stdout.splitlines() if "\t" in line}
    assert listed == declared


def test_make_setup_installs_the_agent_cli_versions_the_tests_drive() -> None:
    # After `make setup` the agent tests need no network only if setup installed exactly
    # the versions they look for.
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    installed = re.search(r"^AGENT_CLIS \?= (.*)$", makefile, re.M)
    assert installed is not None, "the Makefile no longer names the agent CLIs"
    assert re.search(r"^setup:.*\n(?:\t.*\n)*\t.*\bagent-clis\b", makefile, re.M)
    for test in AGENT_CLI_TESTS:
        wanted = re.search(r"^PACKAGES = \((.*)\)$", test.read_text(encoding="utf-8"), re.M)
        assert wanted is not None, f"{test.relative_to(ROOT)} no longer names its packages"
        assert re.findall(r'"([^"]+)"', wanted[1]) == installed[1].split(), test
