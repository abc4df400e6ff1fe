"""Run an agent's most frequent commands without importing the argument parser.

Every agent call is a new process, and importing typer costs ~100 ms before a command
does anything. A launcher hands ``argv`` to :func:`run_fast` with the program's declaration
(:mod:`dsh_common.cli_spec`) and a runner for each command it may take over (search,
recall, retrieve, context, status). The fast path's tables come from the declaration: a
command's options that take a string or a plain non-negative integer, its one optional
positional argument, the global options, the defaults. Anything else - an unknown or
repeated option, a flag or a list option, ``--help``, ``--``, a value that needs conversion
rules, a second positional argument, a missing required option - returns None and the
launcher runs the full Typer command line, so every message about a malformed command line
is still the parser's. Both paths print through :func:`dsh_common.cli.emit_json` and
:func:`dsh_common.cli.guarded`, so results and errors are byte-identical (tests compare
them).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from dsh_common.cli import (
    USAGE_ERROR_CODE,
    ErrorRenderer,
    default_error_document,
    guarded,
    is_undecodable,
    prepare_arguments,
    set_output_format,
)
from dsh_common.cli_spec import Command, Option, Program

_NATURAL = re.compile(r"[0-9]{1,9}")

#: The kinds of value the fast path converts itself (an int: digits only; anything else is
#: left to the parser's own conversion and messages).
FAST_KINDS = ("str", "int")

Runner = Callable[[dict[str, Any]], "int | None"]


class FastCommand:
    """One declared command the fast path may run, and the runner that runs it.

    ``options`` maps each option the fast path takes (see :data:`FAST_KINDS`) to its
    declaration; ``positional`` is the ``dest`` of the command's one optional positional
    argument, or None. ``run(values)`` gets every parameter's value by ``dest`` (defaults
    filled in as the parser fills them), global options included; it prints its result
    and returns the exit code.
    """

    # A plain class, not a dataclass: importing dataclasses costs start-up time.
    __slots__ = ("options", "positional", "run", "spec")

    def __init__(self, spec: Command, run: Runner) -> None:
        arguments = spec.arguments
        if len(arguments) > 1 or any(a.required or a.multiple for a in arguments):
            raise ValueError(f"{spec.name}: the fast path takes one optional argument at most")
        self.spec = spec
        self.run = run
        self.positional = arguments[0].dest if arguments else None
        self.options = {
            option.name: option
            for option in spec.options
            if option.kind in FAST_KINDS and not option.multiple
        }


def parse(
    arguments: Sequence[str],
    commands: Mapping[str, FastCommand],
    global_options: Mapping[str, Option],
) -> tuple[FastCommand, dict[str, Any]] | None:
    """``(command, values)`` when ``arguments`` is plain enough for the fast path; the
    values by ``dest``, only those given."""
    values: dict[str, Any] = {}
    index = 0
    while index < len(arguments) and arguments[index] in global_options:
        dest = global_options[arguments[index]].dest
        if index + 1 >= len(arguments) or dest in values:
            return None
        values[dest] = arguments[index + 1]
        index += 2
    if index >= len(arguments) or arguments[index] not in commands:
        return None
    command = commands[arguments[index]]
    pending: Option | None = None
    for argument in arguments[index + 1 :]:
        if pending is not None:
            if not _accept(values, pending, argument):
                return None
            pending = None
            continue
        if argument.startswith("-"):
            name, equals, value = argument.partition("=")
            option = command.options.get(name)
            if option is None or option.dest in values:
                return None
            if equals:
                if not _accept(values, option, value):
                    return None
            else:
                pending = option
        elif command.positional is not None and command.positional not in values:
            values[command.positional] = argument
        else:
            return None
    if pending is not None:
        return None  # an option without its value: the parser says so
    if any(o.required and o.dest not in values for o in command.spec.options):
        return None  # the parser names what is missing
    return command, values


def _accept(values: dict[str, Any], option: Option, value: str) -> bool:
    if option.kind == "int":
        if not _NATURAL.fullmatch(value):
            return False
        values[option.dest] = int(value)
        return True
    if value.startswith("-"):
        return False  # "--query --limit": let the parser decide what it means
    values[option.dest] = value
    return True


def run_fast(
    argv: Sequence[str],
    program: Program,
    runners: Mapping[str, Runner],
    *,
    usage_error_code: str = USAGE_ERROR_CODE,
    render_error: ErrorRenderer = default_error_document,
) -> int | None:
    """Run ``argv`` on the fast path and return its exit code, or None to use the parser.

    ``runners`` maps the names of the commands the fast path may take over to their
    runners. The argument list is rewritten as :func:`dsh_common.cli.run_app` rewrites it
    for the same ``program``, so both paths read it alike.
    """
    if any(is_undecodable(argument) for argument in argv):
        return None
    arguments, chosen = prepare_arguments(argv, program=program)
    commands = {name: FastCommand(program[name], run) for name, run in runners.items()}
    globals_ = {option.name: option for option in program.global_options if option.takes_value}
    parsed = parse(arguments, commands, globals_)
    if parsed is None:
        return None
    command, given = parsed
    set_output_format(chosen or "json")

    def call() -> int:
        # Defaults are filled in here, where the parser would: a default_factory that
        # fails reports its error as the parser path does.
        values = program.global_command().complete(given)
        values.update(command.spec.complete(given))
        code = command.run(values)
        return 0 if code is None else code

    return guarded(call, usage_error_code=usage_error_code, render_error=render_error)


__all__ = ["FAST_KINDS", "FastCommand", "default_error_document", "parse", "run_fast"]
