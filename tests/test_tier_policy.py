"""Under ``DSH_REQUIRE_ALL_TIERS=1`` (what CI sets) no tier may skip: a skipped test and a
module skipped while collected (an extra that is not installed) both fail the run."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SKIPPING = {
    "test_extra_missing.py": (
        "import pytest\n"
        "pytest.importorskip('no_such_extra_module', reason='the extra is not installed')\n"
        "def test_never_collected():\n    pass\n"
    ),
    "test_tool_missing.py": (
        "import pytest\n"
        "def test_needs_a_tool():\n    pytest.skip('the tool is not installed')\n"
        "def test_runs():\n    pass\n"
    ),
}


#: Both files reported (a collection error would stop the run), nothing written beside them.
PLAIN_RUN = ("--continue-on-collection-errors", "-p", "no:cacheprovider", "-p", "no:xdist")


def _run(tmp_path: Path, require: bool) -> subprocess.CompletedProcess[str]:
    shutil.copy(ROOT / "conftest.py", tmp_path / "conftest.py")
    for name, text in SKIPPING.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    if require:
        env["DSH_REQUIRE_ALL_TIERS"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", *PLAIN_RUN],
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(ROOT / "tests" / "support")},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_every_skip_fails_when_every_tier_is_required(tmp_path: Path) -> None:
    done = _run(tmp_path, require=True)
    assert done.returncode != 0, done.stdout
    assert "module skipped under DSH_REQUIRE_ALL_TIERS=1" in done.stdout
    assert "the extra is not installed" in done.stdout
    assert "skipped under DSH_REQUIRE_ALL_TIERS=1 (CI proves every tier)" in done.stdout


def test_skips_stay_skips_on_a_developer_machine(tmp_path: Path) -> None:
    done = _run(tmp_path, require=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed, 2 skipped" in done.stdout
