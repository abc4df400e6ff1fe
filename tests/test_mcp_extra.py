"""``<product> mcp`` without the ``[mcp]`` extra: one error, in each product's own envelope."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from dsh_test_support import commands

# What an installation without the extra looks like to Python: the SDK cannot be imported.
NO_SDK = 'import sys\nsys.modules["mcp"] = None\nsys.modules["mcp_types"] = None\n'


def without_sdk(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "sitecustomize.py").write_text(NO_SDK)
    return {**os.environ, "PYTHONPATH": str(tmp_path), "HOME": str(tmp_path)}


@pytest.mark.parametrize(
    ("program", "envelope"),
    [("dsh-compound", {}), ("dsh-memory", {"ok": False}), ("dsh-knowledge", {})],
)
def test_mcp_without_the_extra_says_how_to_install_it(
    program: str, envelope: dict[str, bool], tmp_path: Path
) -> None:
    done = commands.run(program, "mcp", env=without_sdk(tmp_path))
    assert (done.returncode, done.stdout) == (1, "")
    assert json.loads(done.stderr) == {
        **envelope,
        "error": {
            "code": "mcp-unavailable",
            "message": f"the MCP server needs the mcp extra: pip install '{program}[mcp]'",
        },
    }


def test_the_shared_mcp_module_imports_without_the_sdk(tmp_path: Path) -> None:
    probe = (
        "import sys, dsh_common.mcp_stdio as m\n"
        "try:\n    m.import_server('dsh_common.no_such_module', 'dsh-x')\n"
        "except ModuleNotFoundError as exc:\n    print('not ours:', exc.name)\n"
        "try:\n    m.import_server('dsh_memory.mcp_server', 'dsh-memory')\n"
        "except m.McpUnavailableError as exc:\n    print(exc.code)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        env=without_sdk(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    # Any other missing module is a bug and stays one; only the SDK is the extra.
    assert done.stdout.splitlines() == ["not ours: dsh_common.no_such_module", "mcp-unavailable"]
