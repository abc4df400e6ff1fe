"""Re-generate the READMEs' example outputs from real runs (`make readme-examples`).

An example is a fenced block right after an HTML comment that starts `<!-- readme-example`.
Each `$ ` line of the block (and the lines that continue it after a trailing backslash) is a
command; the lines up to the next command are its output, which this script rewrites from a
real run. Every README runs its examples in order, in one bash process, in a fresh sandbox:

    <sandbox>/work   the current directory (setup lines make it a git repository, …)
    <sandbox>/home   HOME; DSH_HOME is <sandbox>/home/.dsh; git's global config is in it

The commands of this checkout's environment come first on PATH. The comment may add lines:

    setup: SHELL LINE         run before the block's commands; its output is not shown
    bind K NAME PATH          after the block's K-th command, export NAME = the field PATH
                              (dot-separated, list indexes as numbers) of its JSON output
    json: compact             print this block's JSON compact (default: indented)

A command may exit non-zero only when its line says so (`# exit 1`). Values that differ
from run to run are normalised, the same way each time, so the check below is exact:

    the sandbox path              -> /tmp/example
    today's date and its times    -> 2026-01-02T03:04:05 (fractions as 0s), 20260102T030405Z:
                                     one fixed time, so equal-looking times may differ
    the process id in a run id    -> 4242;   "pid"/"*duration*"/"*Ms" numbers -> 0
    UUIDs                         -> 00000000-0000-4000-8000-00000000000N
    40- and 64-hex digests/ids    -> N repeated (1111…, 2222…), numbered by first appearance

The pages of the documentation site (``docs/**/*.md``) are checked the same way: their
examples are re-run, and a `$ ` command outside an example block is refused there too.

`--check` rewrites nothing: it prints the difference and exits 1 when an example's output
no longer matches what its command prints, or when a README shows a `$ ` command outside
an example block.
"""

from __future__ import annotations

import datetime as dt
import difflib
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
READMES = (
    "README.md",
    *(f"packages/{name}/README.md" for name in ("common", "compound", "memory-repo", "knowledge")),
)
MARKER = "<!-- readme-example"
SITE_PAGES = "docs"
_END = "\x1fREADME-EXAMPLE-END"
# Seconds one command may take (README_EXAMPLES_TIMEOUT overrides it, for the tests).
COMMAND_TIMEOUT = float(os.environ.get("README_EXAMPLES_TIMEOUT", "120"))
SANDBOX_NAME = "/tmp/example"  # noqa: S108 - a name printed in READMEs, never opened


@dataclass
class Command:
    lines: list[str]  # as written, prompt and continuation lines included
    output: list[str]  # as written

    @property
    def shell(self) -> str:
        text = "\n".join(self.lines)
        return text[2:] if text.startswith("$ ") else text


@dataclass
class Example:
    start: int  # index of the first line inside the fence
    end: int  # index of the closing fence
    head: list[str]  # lines inside the fence before the first command
    commands: list[Command]
    setup: list[str] = field(default_factory=list)
    binds: list[tuple[int, str, str]] = field(default_factory=list)
    compact: bool = False


def parse(lines: list[str]) -> tuple[list[Example], list[int]]:
    """The examples of a README, and the line numbers of `$ ` commands outside them."""
    examples: list[Example] = []
    stray: list[int] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith(MARKER):
            comment: list[str] = [line[len(MARKER) :]]
            while "-->" not in comment[-1]:
                index += 1
                comment.append(lines[index])
            comment[-1] = comment[-1].split("-->")[0]
            index += 1
            if not lines[index].startswith("```"):
                raise SystemExit(f"line {index + 1}: a fenced block must follow {MARKER}")
            start = index + 1
            end = start
            while not lines[end].startswith("```"):
                end += 1
            examples.append(_example(start, end, lines[start:end], comment))
            index = end + 1
            continue
        if line.startswith("```"):
            index += 1
            while index < len(lines) and not lines[index].startswith("```"):
                if lines[index].startswith("$ "):
                    stray.append(index + 1)
                index += 1
        index += 1
    return examples, stray


def _example(start: int, end: int, body: list[str], comment: list[str]) -> Example:
    head: list[str] = []
    commands: list[Command] = []
    continued = False
    for line in body:
        if continued or line.startswith("$ "):
            if continued:
                commands[-1].lines.append(line)
            else:
                commands.append(Command([line], []))
            continued = line.endswith("\\")
        elif commands:
            commands[-1].output.append(line)
        else:
            head.append(line)
    example = Example(start, end, head, commands)
    for raw in comment:
        line = raw.strip()
        if line.startswith("setup:"):
            example.setup.append(line[len("setup:") :].strip())
        elif line.startswith("bind "):
            _, position, name, path = line.split(maxsplit=3)
            example.binds.append((int(position), name, path))
        elif line == "json: compact":
            example.compact = True
        elif line:
            raise SystemExit(f"unknown {MARKER} line: {line!r}")
    return example


class Shell:
    """One bash process for a README: variables and the directory persist between commands."""

    def __init__(self, sandbox: Path) -> None:
        self.sandbox = sandbox
        work, home = sandbox / "work", sandbox / "home"
        work.mkdir()
        home.mkdir()
        (home / ".gitconfig").write_text(
            "[user]\n\tname = Example\n\temail = example@example.invalid\n"
            "[init]\n\tdefaultBranch = main\n"
        )
        env = {
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}/usr/local/bin:/usr/bin:/bin",
            "HOME": str(home),
            "DSH_HOME": str(home / ".dsh"),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "TZ": "UTC",
            "DSH_JSON_INDENT": "1",
            "TERM": "dumb",
        }
        self.script = sandbox / "command.sh"
        self.process = subprocess.Popen(
            ["bash", "--noprofile", "--norc"],
            cwd=work,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            encoding="utf-8",
            errors="replace",
            start_new_session=True,
        )
        # A reader thread, so a command that never ends is a clear failure, not a hang.
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None  # noqa: S101 - Popen(stdout=PIPE)
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put("")

    def run(self, command: str) -> tuple[int, str]:
        """Exit code and output (stdout and stderr, in order) of ``command``."""
        if self.process.stdin is None:
            raise SystemExit("the shell has no pipes")
        # Sourced from a file with stdin closed: a command cannot read the script itself.
        self.script.write_text(command + "\n", encoding="utf-8")
        self.process.stdin.write(f". {self.script} </dev/null; printf '\\n{_END} %d\\n' $?\n")
        self.process.stdin.flush()
        output: list[str] = []
        while True:
            try:
                line = self.lines.get(timeout=COMMAND_TIMEOUT)
            except queue.Empty:
                # The whole group: the shell and whatever it started.
                os.killpg(self.process.pid, signal.SIGKILL)
                raise SystemExit(
                    f"no end after {COMMAND_TIMEOUT} s (waiting for input?): {command}"
                ) from None
            if not line:
                raise SystemExit(f"the shell ended while running: {command}")
            if line.startswith(_END):
                # The marker's own leading newline, then the output's last one (if any).
                text = "".join(output)[:-1]
                return int(line.split()[1]), text[:-1] if text.endswith("\n") else text
            output.append(line)

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=30)


class Normaliser:
    """Replaces the values that change from run to run, consistently within one README."""

    def __init__(self, sandbox: Path) -> None:
        self.paths = sorted({str(sandbox), os.path.realpath(sandbox)}, key=len, reverse=True)
        today = dt.datetime.now(dt.UTC).date()
        days = {today + dt.timedelta(days=d) for d in (-1, 0, 1)}
        self.dates = [(d.isoformat(), d.strftime("%Y%m%d")) for d in days]
        self.seen: dict[str, str] = {}

    def _numbered(self, value: str, kind: str) -> str:
        key = f"{kind}:{value}"
        if key not in self.seen:
            count = sum(1 for k in self.seen if k.startswith(f"{kind}:")) + 1
            if kind == "uuid":
                self.seen[key] = f"00000000-0000-4000-8000-{count:012x}"
            else:
                self.seen[key] = (f"{count:x}" * len(value))[: len(value)]
        return self.seen[key]

    def __call__(self, text: str) -> str:
        for path in self.paths:
            text = text.replace(path, SANDBOX_NAME)
        for iso, compact in self.dates:
            text = text.replace(iso, "2026-01-02").replace(compact, "20260102")
        # One fixed time: which instants coincide (same millisecond, same second) is itself
        # a matter of timing, so numbering distinct ones would not give the same text twice.
        text = re.sub(
            r"2026-01-02T\d\d:\d\d:\d\d(\.\d+)?",
            lambda m: "2026-01-02T03:04:05" + ("." + "0" * (len(m[1]) - 1) if m[1] else ""),
            text,
        )
        # A time cut short (a text summary's ellipsis): the fixed time, cut the same way.
        text = re.sub(
            r"2026-01-02T(\d[\d:]{0,7})(?![\d:])",
            lambda m: "2026-01-02T" + "03:04:05"[: len(m[1])],
            text,
        )
        text = re.sub(r"20260102T\d{6}Z", "20260102T030405Z", text)
        text = re.sub(r"(20260102T\d{6}Z-[a-z]+(?:-[a-z]+)*)-\d+\b", r"\1-4242", text)
        text = re.sub(
            r'("(?:pid|[A-Za-z_]*(?:duration|elapsed)[A-Za-z_]*|[A-Za-z]+Ms)":\s*)\d+',
            r"\g<1>0",
            text,
        )
        text = re.sub(
            r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b",
            lambda m: self._numbered(m[0], "uuid"),
            text,
        )
        return re.sub(
            r"\b[0-9a-f]{64}\b|\b[0-9a-f]{40}\b", lambda m: self._numbered(m[0], "hex"), text
        )


def _field(document: Any, path: str) -> Any:
    for part in path.split("."):
        document = document[int(part)] if isinstance(document, list) else document[part]
    return document


def _quote(value: str) -> str:
    return "'" + value.replace("'", "'\\''") + "'"


def run_readme(relative: str) -> tuple[str, str]:
    """The README's text as it is and as its examples' real runs make it."""
    path = ROOT / relative
    original = path.read_text(encoding="utf-8")
    lines = original.split("\n")
    examples, stray = parse(lines)
    if stray:
        raise SystemExit(
            f"{relative}: `$ ` commands outside a {MARKER} block at lines {stray}: "
            "mark the block, or drop the prompt"
        )
    if not examples:
        return original, original
    sandbox = Path(tempfile.mkdtemp(prefix="dsh-readme-"))
    shell = Shell(sandbox)
    normalise = Normaliser(sandbox)
    try:
        for example in examples:
            for line in example.setup:
                code, output = shell.run(line)
                if code != 0:
                    raise SystemExit(f"{relative}: setup failed ({code}): {line}\n{output}")
            shell.run(f"export DSH_JSON_INDENT={0 if example.compact else 1}")
            for position, command in enumerate(example.commands, start=1):
                code, output = shell.run(command.shell)
                declared = re.search(r"#.*\bexit (\d+)", command.lines[0])
                expected = int(declared[1]) if declared else 0
                if code != expected:
                    raise SystemExit(
                        f"{relative}: `{command.shell}` exited {code}, not {expected}:\n{output}"
                    )
                for bound, name, field_path in example.binds:
                    if bound == position:
                        value = str(_field(json.loads(output), field_path))
                        shell.run(f"export {name}={_quote(value)}")
                command.output = normalise(output).split("\n") if output else []
    finally:
        shell.close()
        shutil.rmtree(sandbox, ignore_errors=True)
    rebuilt = list(lines)
    for example in reversed(examples):
        body = list(example.head)
        for command in example.commands:
            body += command.lines + command.output
        rebuilt[example.start : example.end] = body
    return original, "\n".join(rebuilt)


def documents() -> list[str]:
    """Every document whose examples are checked: the READMEs, then the site's pages."""
    pages = sorted((ROOT / SITE_PAGES).rglob("*.md"))
    return [*READMES, *(page.relative_to(ROOT).as_posix() for page in pages)]


def main(arguments: list[str]) -> int:
    check = "--check" in arguments
    chosen = [a for a in arguments if not a.startswith("--")] or documents()
    stale = 0
    for relative in chosen:
        before, after = run_readme(relative)
        if before == after:
            continue
        if check:
            stale += 1
            sys.stdout.writelines(
                difflib.unified_diff(
                    before.splitlines(keepends=True),
                    after.splitlines(keepends=True),
                    f"{relative} (as written)",
                    f"{relative} (as the commands print now)",
                )
            )
        else:
            (ROOT / relative).write_text(after, encoding="utf-8")
            print(f"rewrote {relative}")
    if stale:
        print(f"\n{stale} README(s) out of date: run `make readme-examples`", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
