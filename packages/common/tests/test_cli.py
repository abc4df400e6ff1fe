"""The JSON CLI convention, through a real Typer app run by ``run_app``: in this process
for what a command prints, as a real process where argv bytes that are not UTF-8 matter."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from dsh_test_support import in_process

from dsh_common.cli import emit_json, escape_undecodable, json_safe
from dsh_common.errors import DshError, InvalidJsonError
from dsh_common.jsonio import dumps, dumps_bytes, loads

from . import greet_app

GREET_APP = Path(__file__).with_name("greet_app.py")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    """The demo app's command line, run in this process (what a process would print)."""
    return in_process.run_main(greet_app.main, "demo", *args)


def _process(*args: str | bytes) -> subprocess.CompletedProcess[str]:
    """The demo app as a real process: argv bytes reach it as a shell passes them."""
    return subprocess.run(
        [sys.executable, str(GREET_APP), *args], capture_output=True, text=True, timeout=60
    )


def test_success_prints_json_to_stdout() -> None:
    done = _run("greet", "--name", "ada")
    assert done.returncode == 0
    assert json.loads(done.stdout) == {"hello": "ada", "times": 1}
    assert done.stderr == ""


@pytest.mark.parametrize(
    "args",
    [("greet",), ("greet", "--name", "x", "--times", "9"), ("nope",), ("greet", "--bogus")],
)
def test_argument_errors_are_json_with_exit_1(args: tuple[str, ...]) -> None:
    done = _run(*args)
    assert done.returncode == 1
    assert done.stdout == ""
    error = json.loads(done.stderr)["error"]
    assert error["code"] == "invalid-arguments"
    assert "Usage:" not in done.stderr
    assert error["message"]


def test_dsh_error_keeps_its_code() -> None:
    done = _run("greet", "--name", "bad")
    assert done.returncode == 1
    assert json.loads(done.stderr) == {"error": {"code": "bad-name", "message": "bad name"}}


def test_unexpected_error_has_no_traceback() -> None:
    done = _run("greet", "--name", "crash")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert json.loads(done.stderr)["error"]["code"] == "internal-error"


def test_custom_error_envelope() -> None:
    done = _run("--envelope", "greet")
    assert done.returncode == 1
    assert json.loads(done.stderr) == {"ok": False, "error": {"code": "invalid-arguments"}}


def test_help_still_works() -> None:
    done = _run("greet", "--help")
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


def test_non_utf8_argument_is_refused_before_the_command_runs(tmp_path: Path) -> None:
    target = os.fsencode(tmp_path) + b"/\xffnope"
    done = _process("touch", "--path", target)
    assert done.returncode == 1
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    assert json.loads(done.stderr) == {
        "error": {
            "code": "invalid-arguments",
            "message": f"the value of --path is not valid UTF-8: '{tmp_path}/\\xffnope'",
        }
    }
    assert not os.path.lexists(target)  # nothing was created under the undecodable name


def test_non_utf8_argument_uses_the_product_envelope() -> None:
    done = _process("--envelope", "greet", b"--n\xe9me", "x")
    assert done.returncode == 1
    assert json.loads(done.stderr) == {"ok": False, "error": {"code": "invalid-arguments"}}


def test_error_quoting_a_non_utf8_file_name_is_printed_escaped(tmp_path: Path) -> None:
    directory = tmp_path / "names"
    directory.mkdir()
    (Path(os.fsdecode(os.fsencode(directory) + b"/caf\xe9.md"))).touch()
    done = _run("listing", "--dir", str(directory))
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert json.loads(done.stderr) == {
        "error": {"code": "bad-name", "message": "cannot use caf\\xe9.md"}
    }


def test_escape_undecodable_shows_bytes_and_keeps_valid_text() -> None:
    assert escape_undecodable(os.fsdecode(b"/srv/\xffnope")) == "/srv/\\xffnope"
    assert escape_undecodable("连接池 é") == "连接池 é"
    assert escape_undecodable("\ud800") == "\\ud800"  # a surrogate no byte maps to
    assert json_safe({"k\udcff": ["\udcfe", 1, ("\udcfd",)]}) == {"k\\xff": ["\\xfe", 1, ["\\xfd"]]}


def test_emit_json_never_crashes_on_undecodable_text() -> None:
    stream = io.StringIO()
    emit_json({"path": os.fsdecode(b"a\xffb")}, stream=stream)
    assert json.loads(stream.getvalue()) == {"path": "a\\xffb"}


def test_undecodable_path_option_is_invalid_path_in_both_spellings() -> None:
    from dsh_common.cli import undecodable_argument

    bad = os.fsdecode(b"/srv/\xffx")
    for argv in (["--root", bad, "init"], [f"--root={bad}", "init"]):
        found = undecodable_argument(argv, path_options=("--root",))
        assert found is not None
        assert found[0] == "invalid-path"
        assert "\\xffx" in found[1]


def test_undecodable_values_pass_when_the_product_judges_them() -> None:
    from dsh_common.cli import undecodable_argument

    bad = os.fsdecode(b"q\xff")
    argv = ["search", "--query", bad]
    assert undecodable_argument(argv, refuse_values=False) is None
    assert undecodable_argument(argv) == (
        "invalid-arguments",
        "the value of --query is not valid UTF-8: 'q\\xff'",
    )
