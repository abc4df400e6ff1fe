"""exit_now: the answer is complete, the code kept, and exit handlers still run when present."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def run(script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )


def test_buffered_output_to_a_pipe_is_flushed_and_the_code_kept() -> None:
    # Far more than one pipe buffer, on both streams: os._exit alone would drop the tail.
    done = run(
        "import sys\n"
        "from dsh_common.quick_exit import exit_now\n"
        "sys.stdout.write('x' * 200_000 + 'END\\n')\n"
        "sys.stderr.write('e' * 50_000 + 'ERR\\n')\n"
        "exit_now(3)\n"
        "print('not reached')\n"
    )
    assert done.returncode == 3
    assert done.stdout == "x" * 200_000 + "END\n"
    assert done.stderr == "e" * 50_000 + "ERR\n"


def test_registered_exit_handlers_still_run(tmp_path: Path) -> None:
    marker = tmp_path / "handler-ran"
    done = run(
        "import atexit, pathlib\n"
        "from dsh_common.quick_exit import exit_now\n"
        f"atexit.register(pathlib.Path({str(marker)!r}).write_text, 'yes')\n"
        "exit_now(0)\n"
    )
    assert done.returncode == 0, done.stderr
    assert marker.read_text() == "yes"


def test_a_stream_that_cannot_be_flushed_takes_the_ordinary_exit() -> None:
    done = run(
        "import sys\nfrom dsh_common.quick_exit import exit_now\nsys.stdout.close()\nexit_now(4)\n"
    )
    assert done.returncode == 4
    assert done.stderr == ""


def test_the_interpreter_teardown_is_skipped(tmp_path: Path) -> None:
    # The witness: a file left open with buffered data. The ordinary shutdown finalises it
    # (and so writes the data); os._exit skips that - which is why the commands close theirs.
    script = (
        "import sys\n"
        "from dsh_common.quick_exit import exit_now\n"
        f"left_open = open({str(tmp_path)!r} + '/' + sys.argv[1], 'w')\n"
        "left_open.write('finalised')\n"
        "exit_now(0) if sys.argv[1] == 'quick' else sys.exit(0)\n"
    )
    for mode in ("quick", "ordinary"):
        done = subprocess.run(
            [sys.executable, "-c", script, mode], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
    assert (tmp_path / "quick").read_text() == ""
    assert (tmp_path / "ordinary").read_text() == "finalised"


def test_an_answer_ends_the_process_with_the_collector_off_while_it_ran() -> None:
    done = run(
        "import gc\n"
        "from dsh_common.quick_exit import answer_or_continue\n"
        "def answer():\n"
        "    print('collector', gc.isenabled())\n"
        "    return 4\n"
        "answer_or_continue(answer)\n"
        "print('not reached')\n"
    )
    assert (done.returncode, done.stdout) == (4, "collector False\n")


def test_no_answer_returns_to_the_parser_with_the_collector_back_on() -> None:
    done = run(
        "import gc\n"
        "from dsh_common.quick_exit import answer_or_continue\n"
        "answer_or_continue(lambda: None)\n"
        "print('parser', gc.isenabled())\n"
    )
    assert (done.returncode, done.stdout) == (0, "parser True\n")
