"""The JSON CLI convention, through a real Typer app run as a real process."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dsh_common.errors import DshError, InvalidJsonError
from dsh_common.jsonio import dumps, dumps_bytes, loads

APP = textwrap.dedent(
    '''
    import sys
    from typing import Annotated
    import typer
    from dsh_common.cli import emit_json, run_app
    from dsh_common.errors import DshError

    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)

    @app.command()
    def greet(name: Annotated[str, typer.Option("--name")],
              times: Annotated[int, typer.Option(min=1, max=3)] = 1) -> None:
        """Say hello."""
        if name == "bad":
            raise DshError("bad name", code="bad-name")
        if name == "crash":
            raise RuntimeError("boom")
        emit_json({"hello": name, "times": times})

    @app.command()
    def other() -> None:
        """Another command."""

    if __name__ == "__main__":
        envelope = len(sys.argv) > 1 and sys.argv[1] == "--envelope"
        args = sys.argv[2:] if envelope else sys.argv[1:]
        def envelope_error(code, message):
            return {"ok": False, "error": {"code": code}}
        kwargs = {"render_error": envelope_error} if envelope else {}
        sys.exit(run_app(app, args=args, prog_name="demo", **kwargs))
    '''
)


@pytest.fixture
def app_script(tmp_path: Path) -> Path:
    script = tmp_path / "app.py"
    script.write_text(APP)
    return script


def _run(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, timeout=60
    )


def test_success_prints_json_to_stdout(app_script: Path) -> None:
    done = _run(app_script, "greet", "--name", "ada")
    assert done.returncode == 0
    assert json.loads(done.stdout) == {"hello": "ada", "times": 1}
    assert done.stderr == ""


@pytest.mark.parametrize(
    "args",
    [("greet",), ("greet", "--name", "x", "--times", "9"), (), ("nope",), ("greet", "--bogus")],
)
def test_argument_errors_are_json_with_exit_1(app_script: Path, args: tuple[str, ...]) -> None:
    done = _run(app_script, *args)
    assert done.returncode == 1
    assert done.stdout == ""
    error = json.loads(done.stderr)["error"]
    assert error["code"] == "invalid-arguments"
    assert "Usage:" not in done.stderr
    assert error["message"]


def test_dsh_error_keeps_its_code(app_script: Path) -> None:
    done = _run(app_script, "greet", "--name", "bad")
    assert done.returncode == 1
    assert json.loads(done.stderr) == {"error": {"code": "bad-name", "message": "bad name"}}


def test_unexpected_error_has_no_traceback(app_script: Path) -> None:
    done = _run(app_script, "greet", "--name", "crash")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert json.loads(done.stderr)["error"]["code"] == "internal-error"


def test_custom_error_envelope(app_script: Path) -> None:
    done = _run(app_script, "--envelope", "greet")
    assert done.returncode == 1
    assert json.loads(done.stderr) == {"ok": False, "error": {"code": "invalid-arguments"}}


def test_help_still_works(app_script: Path) -> None:
    done = _run(app_script, "greet", "--help")
    assert done.returncode == 0
    assert "Say hello." in done.stdout


def test_dumps_matches_json_stringify() -> None:
    value = {"b": 1, "a": ["连接池", "é", True, None], "n": 2.5}
    assert dumps(value) == '{"b":1,"a":["连接池","é",true,null],"n":2.5}'
    assert dumps_bytes(value, pretty=True).startswith(b'{\n  "b": 1')


def test_loads_raises_a_typed_error() -> None:
    with pytest.raises(InvalidJsonError) as caught:
        loads(b"{nope", what="draft")
    assert caught.value.code == "invalid-json"
    assert "draft" in caught.value.message
    assert isinstance(caught.value, ValueError)


def test_error_to_json_has_exactly_code_and_message() -> None:
    error = DshError("m", code="c", details={"x": 1})
    assert error.to_json() == {"code": "c", "message": "m"}
