"""Each distribution stands alone: built as a wheel, installed into a fresh virtual
environment with nothing else from the workspace, imported, and its command run.

The products depend on dsh-common by version range, so each is installed together with
the dsh-common wheel built from this same checkout (and their third-party dependencies
from the package index), never with the workspace's editable installs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = sorted(p.parent for p in (ROOT / "packages").glob("*/pyproject.toml"))


def _uv() -> str:
    found = os.environ.get("UV") or shutil.which("uv")
    if found is None:
        pytest.fail("uv is required (make installs it into .tools/bin)")
    return found


def _metadata(package_dir: Path) -> dict[str, object]:
    project: dict[str, object] = tomllib.loads((package_dir / "pyproject.toml").read_text())[
        "project"
    ]
    return project


def _clean_env() -> dict[str, str]:
    # Nothing from the workspace's environment may leak into the fresh one.
    return {
        k: v
        for k, v in os.environ.items()
        if k not in {"VIRTUAL_ENV", "PYTHONPATH", "UV_PROJECT_ENVIRONMENT"}
    }


@pytest.fixture(scope="session")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("dist")
    built: dict[str, Path] = {}
    for package_dir in PACKAGES:
        name = str(_metadata(package_dir)["name"])
        subprocess.run(
            [_uv(), "build", "--wheel", "--out-dir", str(out), str(package_dir)],
            check=True,
            capture_output=True,
            env=_clean_env(),
            timeout=600,
        )
        (wheel,) = out.glob(f"{name.replace('-', '_')}-*.whl")
        built[name] = wheel
    return built


@pytest.mark.parametrize("package_dir", PACKAGES, ids=lambda p: p.name)
def test_distribution_installs_and_runs_alone(
    package_dir: Path, wheels: dict[str, Path], tmp_path: Path
) -> None:
    project = _metadata(package_dir)
    name = str(project["name"])
    venv = tmp_path / "venv"
    env = _clean_env()
    subprocess.run(
        [_uv(), "venv", "--quiet", "--python", sys.executable, str(venv)],
        check=True,
        env=env,
        timeout=300,
    )
    python = venv / "bin" / "python"
    to_install = {str(wheels[name]), str(wheels["dsh-common"])}
    subprocess.run(
        [_uv(), "pip", "install", "--quiet", "--python", str(python), *sorted(to_install)],
        check=True,
        env=env,
        timeout=600,
    )
    module = name.replace("-", "_")
    probe = (
        "import importlib, json, sys; m = importlib.import_module(sys.argv[1]);"
        "print(json.dumps({'file': m.__file__, 'version': getattr(m, '__version__', None)}))"
    )
    done = subprocess.run(
        [str(python), "-c", probe, module],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    imported = json.loads(done.stdout)
    assert imported["file"].startswith(str(venv)), "imported from the workspace, not the wheel"
    assert imported["version"] == project["version"]
    installed = subprocess.run(
        [_uv(), "pip", "list", "--python", str(python), "--format", "json"],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    dsh_names = {p["name"] for p in json.loads(installed.stdout) if p["name"].startswith("dsh")}
    assert dsh_names == ({name, "dsh-common"} if name != "dsh-common" else {"dsh-common"})
    scripts = project.get("scripts", {})
    assert isinstance(scripts, dict)
    for command in scripts:
        helped = subprocess.run(
            [str(venv / "bin" / command), "--help"],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=120,
        )
        assert helped.returncode == 0, helped.stderr
        assert "Usage" in helped.stdout
