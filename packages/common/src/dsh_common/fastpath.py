"""Run an agent's most frequent commands without importing the argument parser.

Every agent call is a new process, and importing typer costs ~100 ms before a command
does anything. A launcher hands ``argv`` to :func:`run_fast` with a small table of the
commands it may take over (search, recall, retrieve, context, status): exactly their
options, each as a string or a plain non-negative integer. Anything else - an unknown or
repeated option, ``--help``, ``--``, a value that needs conversion rules, a second
positional argument - returns None and the launcher runs the full Typer command line, so
every message about a malformed command line is still the parser's. Both paths print
through :func:`dsh_common.cli.emit_json` and :func:`dsh_common.cli.guarded`, so results and
errors are byte-identical (tests compare them).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
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

_NATURAL = re.compile(r"[0-9]{1,9}")


class FastCommand:
    """One command the fast path may run.

    ``options`` maps each long option to ``"str"`` or ``"int"`` (digits only: anything
    else is left to the parser's own conversion and messages). ``positional`` names the
    key of the one optional positional argument, or None. ``run(values)`` gets the parsed
    values by option name (``"--query"``), the positional under its key, and the global
    options under their names; it prints its result and returns the exit code.
    """

    # A plain class, not a dataclass: importing dataclasses costs start-up time.
    __slots__ = ("options", "positional", "run")

    def __init__(
        self,
        options: Mapping[str, str],
        run: Callable[[dict[str, Any]], int | None],
        positional: str | None = None,
    ) -> None:
        self.options = options
        self.run = run
        self.positional = positional


def parse(
    arguments: Sequence[str],
    commands: Mapping[str, FastCommand],
    global_options: Collection[str],
) -> tuple[FastCommand, dict[str, Any]] | None:
    """``(command, values)`` when ``arguments`` is plain enough for the fast path."""
    values: dict[str, Any] = {}
    index = 0
    while index < len(arguments) and arguments[index] in global_options:
        if index + 1 >= len(arguments) or arguments[index] in values:
            return None
        values[arguments[index]] = arguments[index + 1]
        index += 2
    if index >= len(arguments) or arguments[index] not in commands:
        return None
    command = commands[arguments[index]]
    for argument in arguments[index + 1 :]:
        pending = values.pop("\0pending", None)
        if pending is not None:
            if not _accept(command, values, pending, argument):
                return None
            continue
        if argument.startswith("-"):
            name, equals, value = argument.partition("=")
            if name not in command.options or name in values:
                return None
            if equals:
                if not _accept(command, values, name, value):
                    return None
            else:
                values["\0pending"] = name
        elif command.positional is not None and command.positional not in values:
            values[command.positional] = argument
        else:
            return None
    if "\0pending" in values:
        return None  # an option without its value: the parser says so
    return command, values


def _accept(command: FastCommand, values: dict[str, Any], name: str, value: str) -> bool:
    if command.options[name] == "int":
        if not _NATURAL.fullmatch(value):
            return False
        values[name] = int(value)
        return True
    if value.startswith("-"):
        return False  # "--query --limit": let the parser decide what it means
    values[name] = value
    return True


def run_fast(
    argv: Sequence[str],
    commands: Mapping[str, FastCommand],
    *,
    global_options: Collection[str] = (),
    usage_error_code: str = USAGE_ERROR_CODE,
    render_error: ErrorRenderer = default_error_document,
    command_options: Collection[str] = (),
) -> int | None:
    """Run ``argv`` on the fast path and return its exit code, or None to use the parser.

    ``global_options`` and ``command_options`` mean what they mean for
    :func:`dsh_common.cli.run_app`; pass the same ones, so both paths rewrite alike.
    """
    if any(is_undecodable(argument) for argument in argv):
        return None
    arguments, chosen = prepare_arguments(
        argv, global_options=global_options, command_options=command_options
    )
    parsed = parse(arguments, commands, global_options)
    if parsed is None:
        return None
    command, values = parsed
    set_output_format(chosen or "json")

    def call() -> int:
        code = command.run(values)
        return 0 if code is None else code

    return guarded(call, usage_error_code=usage_error_code, render_error=render_error)


__all__ = ["FastCommand", "default_error_document", "parse", "run_fast"]
