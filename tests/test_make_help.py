"""`make help` lists every target the Makefile declares."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_help_lists_every_phony_target() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    declared = set(re.search(r"^\.PHONY:(.*)$", makefile, re.M)[1].split())  # type: ignore[index]
    done = subprocess.run(
        ["make", "--no-print-directory", "-C", str(ROOT), "help"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    listed = {line.split("\t")[0] for line in done.stdout.splitlines() if "\t" in line}
    assert listed == declared
