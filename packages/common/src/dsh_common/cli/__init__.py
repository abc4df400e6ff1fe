"""What every dsh command-line program shares: JSON out, JSON errors, no tracebacks.

Success prints one JSON document to stdout and exits 0. A foreseeable failure prints
``{"error": {"code": "...", "message": "..."}}`` to stderr and exits 1 - including argument
errors, which the argument parser would otherwise print as plain usage text with exit 2.
Products whose contract fixes another error envelope (dsh-memory's,
docs/compatibility/memory.md) pass their own ``render_error``.

This module imports neither typer nor click at import time (the typer-free fast paths use
it): it recognises Click's exceptions by class name, which works for Click itself and for
the copy that recent Typer releases vendor. Only :func:`add_setup_command`, called while a
product's CLI builds its Typer app, imports typer.

The conventions every product shares, switched on by the arguments of :func:`run_app`:

* global options (``--root``, ``--db``) are accepted before *or* after the subcommand;
* ``--version`` prints ``{"name", "version"}``; the bare command prints its help, exit 0;
* JSON is indented on a terminal and compact when piped (agents pay for every byte);
  ``DSH_JSON_INDENT=1`` forces indentation, ``DSH_JSON_INDENT=0`` forces compact output;
* ``--format text`` anywhere prints a short human summary (:mod:`dsh_common.summary`) of
  any result or error instead of JSON;
* value-taking booleans also work as flags (``--dry-run`` alone, ``--apply``).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, TextIO, overload

from dsh_common.errors import DshError

if TYPE_CHECKING:
    from dsh_common.agent_setup import Integration
    from dsh_common.agent_setup_entries import SetupOption
    from dsh_common.cli_spec import Program

ErrorRenderer = Callable[[str, str], Any]

# Chosen once per process by run_app (``--format``); emit_json reads it.
_output: dict[str, str] = {"format": "json"}

USAGE_ERROR_CODE = "invalid-arguments"
INTERNAL_ERROR_CODE = "internal-error"

# A lone surrogate cannot be written as UTF-8. Python puts U+DC80..U+DCFF in place of each
# byte of a non-UTF-8 argv entry or file name (PEP 383, "surrogateescape").
_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape_surrogate(match: re.Match[str]) -> str:
    point = ord(match.group())
    if 0xDC80 <= point <= 0xDCFF:
        return f"\\x{point - 0xDC00:02x}"  # the original byte, as Python would show it
    return f"\\u{point:04x}"


def escape_undecodable(text: str) -> str:
    """``text`` with every byte that was not UTF-8 shown as ``\\xNN`` (printable, UTF-8 safe).

    ``'/srv/\\udcffnope'`` (how Python decodes the argument ``b'/srv/\\xffnope'``) becomes
    ``'/srv/\\\\xffnope'``. Text without surrogates is returned unchanged.
    """
    return _SURROGATE.sub(_escape_surrogate, text)


def is_undecodable(text: str) -> bool:
    """True when ``text`` holds a lone surrogate, i.e. it came from bytes that were not UTF-8."""
    return _SURROGATE.search(text) is not None


def json_safe(value: Any) -> Any:
    """``value`` with :func:`escape_undecodable` applied to every string, keys included."""
    if isinstance(value, str):
        return escape_undecodable(value)
    if isinstance(value, dict):
        return {json_safe(key): json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(item) for item in value]
    return value


def default_error_document(code: str, message: str) -> dict[str, Any]:
    """``{"error": {"code", "message"}}``."""
    return {"error": {"code": code, "message": message}}


def set_output_format(name: str) -> None:
    """``"json"`` (the default) or ``"text"`` for every later :func:`emit_json`."""
    if name not in ("json", "text"):
        raise ValueError(f"unknown output format {name!r}")
    _output["format"] = name


def output_format() -> str:
    """The format :func:`emit_json` prints in: ``"json"`` or ``"text"``."""
    return _output["format"]


def _indent_for(out: TextIO) -> bool:
    forced = os.environ.get("DSH_JSON_INDENT", "").strip()
    if forced in ("0", "1"):
        return forced == "1"
    isatty = getattr(out, "isatty", None)
    try:
        return bool(isatty()) if isatty is not None else False
    except ValueError:  # a closed stream
        return False


def emit_json(value: Any, *, stream: TextIO | None = None) -> None:
    """Print ``value`` and a newline (stdout by default).

    JSON, indented when the stream is a terminal and compact otherwise; with
    ``--format text`` (see :func:`set_output_format`) the human summary instead.
    """
    out = stream if stream is not None else sys.stdout
    if _output["format"] == "text":
        from dsh_common.summary import render_summary

        out.write(escape_undecodable(render_summary(json_safe(value))))
        out.flush()
        return
    # Imported here: hooks use this module's text helpers and never print through it, and
    # orjson costs them a few milliseconds of start-up.
    from dsh_common.jsonio import dumps_bytes

    pretty = _indent_for(out)
    try:
        data = dumps_bytes(value, pretty=pretty)
    except TypeError:
        # A string from a non-UTF-8 argument or file name cannot be encoded: escape its
        # bytes rather than crash the printer (and with it the error report itself).
        data = dumps_bytes(json_safe(value), pretty=pretty)
    out.write(data.decode("utf-8") + "\n")
    out.flush()


def add_setup_command(
    app: Any,
    integration: Callable[..., Integration],
    *,
    summary: str,
    examples: Sequence[str],
    options: Sequence[SetupOption] = (),
    pass_obj: bool = False,
) -> None:
    """Register ``setup HOST [--scope user|project] [--project-dir] [--remove] [--dry-run]
    [--ranking hybrid|lexical]`` on the Typer ``app``: the one signature every product's
    ``setup`` has (declared by :func:`dsh_common.cli_spec.setup_command`), running
    :func:`dsh_common.agent_setup.run_setup` with what ``integration()`` (built only when
    the command runs) registers.

    ``options`` is the product's declared list of what setup may write into its entries
    (:class:`dsh_common.agent_setup_entries.SetupOption`): each becomes ``--flag VALUE`` of
    the command, and a value given is written where the option says (server args, hooks).
    ``--ranking`` is every product's (:mod:`dsh_common.agent_setup_ranking`).

    ``pass_obj``: call ``integration(obj)`` with the object the app's callback put in the
    Typer context (``ctx.obj``, as Click's ``pass_obj`` does), e.g. the database that a
    global ``--db`` named.
    """
    # Only here: see the module docstring (cli.typer_commands imports typer).
    from dsh_common.cli.typer_commands import command
    from dsh_common.cli_spec import setup_command as declared_setup
    from dsh_common.cli_spec import setup_parameter

    def setup_command(ctx: Any, **values: Any) -> None:
        from dsh_common.agent_setup import run_setup
        from dsh_common.agent_setup_ranking import finish, ranking_variables

        given = [(option, values[setup_parameter(option.flag)]) for option in options]
        ranking = values["ranking"]
        variables = {} if ranking is None else ranking_variables(ranking, remove=values["remove"])
        registered = integration(ctx.obj) if pass_obj else integration()
        result = run_setup(
            registered,
            values["host"],
            scope=values["scope"],
            project_dir=values["project_dir"],
            remove=values["remove"],
            dry_run=values["dry_run"],
            options=[(option, value) for option, value in given if value is not None],
            variables=variables,
        )
        if variables:
            finish(result, variables, registered.program, dry_run=values["dry_run"])
        emit_json(result)

    epilog = "\b\nExample:\n" + "\n".join(f"  {example}" for example in examples)
    command(app, declared_setup(options), help=summary, epilog=epilog)(setup_command)


#: What every search-like command says when the query is given twice, differently.
QUERY_TWICE = "give the query once: positionally or as --query, not both"


@overload
def one_query(
    positional: str | None, option: str | None, *, required: str, twice: str = ...
) -> str: ...
@overload
def one_query(
    positional: str | None, option: str | None, *, required: None = None, twice: str = ...
) -> str | None: ...
def one_query(
    positional: str | None,
    option: str | None,
    *,
    required: str | None = None,
    twice: str = QUERY_TWICE,
) -> str | None:
    """The query of a command taking ``QUERY`` or ``--query QUERY`` (the same one twice is fine).

    Two different ones are refused with ``twice`` (``invalid-arguments``). A missing query
    is refused with ``required`` when given; without it, None is returned for the command's
    own method to judge (dsh-memory answers with a ``*-invalid-request`` code,
    docs/compatibility/memory.md).
    """
    if positional is not None and option is not None and positional != option:
        raise DshError(twice, code=USAGE_ERROR_CODE)
    query = option if option is not None else positional
    if query is None and required is not None:
        raise DshError(required, code=USAGE_ERROR_CODE)
    return query


def list_counts(shown: int, total: int) -> dict[str, Any]:
    """``{"total": total, "truncated": shown < total}`` for a list result cut to a limit.

    Every list result says how many matched in all and whether it was cut, so a caller
    never mistakes the first page for everything.
    """
    return {"total": total, "truncated": shown < total}


def emit_error(
    code: str,
    message: str,
    *,
    render_error: ErrorRenderer = default_error_document,
    stream: TextIO | None = None,
) -> int:
    """Print an error document to stderr; return exit code 1 for the caller to use."""
    emit_json(render_error(code, message), stream=stream if stream is not None else sys.stderr)
    return 1


def undecodable_argument(
    arguments: Sequence[str],
    *,
    path_options: Collection[str] = (),
    usage_error_code: str = USAGE_ERROR_CODE,
    refuse_values: bool = True,
) -> tuple[str, str] | None:
    """``(code, message)`` for the first argument holding bytes that were not UTF-8, else None.

    The value of an option in ``path_options`` (``--root X`` or ``--root=X``) is
    ``invalid-path``; any other such argument is ``usage_error_code`` - unless
    ``refuse_values`` is false, for a product whose methods judge their own option values
    (dsh-memory answers ``search-invalid-request`` for a malformed query).
    """
    previous = ""
    for argument in arguments:
        option, equals, value = argument.partition("=")
        if equals and option.startswith("--"):
            name, shown = option, value
        else:
            name, shown = (previous if previous.startswith("--") else ""), argument
        previous = argument
        if not is_undecodable(argument):
            continue
        escaped = escape_undecodable(shown)
        if name in path_options:
            return "invalid-path", f"{name} '{escaped}' is not valid UTF-8; nothing was changed."
        if not refuse_values:
            continue
        what = f"the value of {name}" if name else "an argument"
        return usage_error_code, f"{what} is not valid UTF-8: '{escaped}'"
    return None


def prepare_arguments(
    args: Sequence[str],
    *,
    global_options: Collection[str] = (),
    flag_values: Mapping[str, Mapping[str, str]] | None = None,
    local_options: Mapping[str, Collection[str]] | None = None,
    bare_help: bool = True,
    command_options: Collection[str] = (),
    program: Program | None = None,
) -> tuple[list[str], str | None]:
    """The argv rewrites of :func:`run_app`, exposed for launchers' fast paths.

    Returns ``(arguments, format)``: ``--format`` removed, ``command_options`` written
    before the subcommand moved after it, global options hoisted in front of the
    subcommand, flag spellings expanded, ``--help`` added when no subcommand was given.
    ``format`` is None when ``--format`` was not given. With ``program`` (its
    declaration, :mod:`dsh_common.cli_spec`) the option lists are the declared ones.
    """
    if program is not None:
        global_options = program.global_names
        command_options = program.command_options
        local_options = program.local_options()
        flag_values = program.flag_values()
    from dsh_common.cli_args import (
        expand_flag_values,
        hoist_global_options,
        sink_command_options,
        subcommand_index,
        take_format,
    )

    arguments, chosen = take_format(args)
    arguments = sink_command_options(arguments, command_options, global_options)
    arguments = hoist_global_options(arguments, global_options, local_options)
    if flag_values:
        arguments = expand_flag_values(arguments, flag_values, global_options)
    if (
        bare_help
        and subcommand_index(arguments, global_options) is None
        and not any(token in ("--help", "--version") for token in arguments)
    ):
        arguments.append("--help")  # the bare command: help, exit 0
    return arguments, chosen


def run_app(
    app: Callable[..., Any],
    *,
    args: Sequence[str] | None = None,
    prog_name: str | None = None,
    usage_error_code: str = USAGE_ERROR_CODE,
    render_error: ErrorRenderer = default_error_document,
    global_options: Collection[str] = (),
    version: str | None = None,
    flag_values: Mapping[str, Mapping[str, str]] | None = None,
    local_options: Mapping[str, Collection[str]] | None = None,
    path_options: Collection[str] = (),
    refuse_undecodable_values: bool = True,
    bare_help: bool = True,
    command_options: Collection[str] = (),
    program: Program | None = None,
) -> int:
    """Run a Typer/Click app and turn every failure into a JSON error; return the exit code.

    Commands print their own result with :func:`emit_json`. ``DshError`` becomes its code,
    a parser error becomes ``usage_error_code``, anything unexpected ``internal-error`` (with
    the traceback only when ``DSH_DEBUG=1``, for developers). An argument that is not
    valid UTF-8 is refused (see :func:`undecodable_argument`) before any command runs, so it
    can change nothing: no result of ours could name it faithfully in JSON.

    The shared conventions (see the module docstring): ``global_options`` names the
    value-taking options of the app's callback that may also follow the subcommand;
    ``version`` enables ``--version``; ``flag_values`` maps a subcommand to
    ``{"--dry-run": "--apply"}`` for options that take ``true|false``; ``local_options``
    maps a subcommand to the global option names it defines itself (left in place after
    it). ``command_options`` names the value-taking options the app's commands define
    themselves (``--workspace``) that may also be written before the subcommand.
    ``--format text|json`` is always on; the bare command prints help unless
    ``bare_help`` is false (a single-command program such as ``dsh-memory-sync``, whose bare
    invocation is its main job).

    ``program`` is the app's declaration (:mod:`dsh_common.cli_spec`): given, the option
    lists above are derived from it (and ``prog_name`` defaults to its name), so the
    launchers' fast path, which reads the same declaration, rewrites the arguments alike.
    """
    if program is not None:
        prog_name = prog_name if prog_name is not None else program.name
        global_options = program.global_names
        command_options = program.command_options
        local_options = program.local_options()
        flag_values = program.flag_values()
        path_options = program.path_options
    raw = list(args) if args is not None else sys.argv[1:]
    _describe_conventions(app, [*global_options, *command_options], version is not None)
    refused = undecodable_argument(
        raw,
        path_options=path_options,
        usage_error_code=usage_error_code,
        refuse_values=refuse_undecodable_values,
    )
    if refused is not None:
        set_output_format("json")
        return emit_error(*refused, render_error=render_error)
    arguments, chosen = prepare_arguments(
        raw,
        global_options=global_options,
        flag_values=flag_values,
        local_options=local_options,
        bare_help=bare_help,
        command_options=command_options,
    )
    set_output_format(chosen or "json")
    if version is not None and _asks_version(arguments, global_options):
        emit_json({"name": prog_name, "version": version})
        return 0
    return guarded(
        lambda: app(args=arguments, prog_name=prog_name, standalone_mode=False),
        usage_error_code=usage_error_code,
        render_error=render_error,
    )


def guarded(
    call: Callable[[], Any],
    *,
    usage_error_code: str = USAGE_ERROR_CODE,
    render_error: ErrorRenderer = default_error_document,
) -> int:
    """Run ``call`` and turn every failure into an error document; return the exit code.

    What :func:`run_app` does around the parser, shared with launchers' fast paths so a
    failure reads the same whichever path ran the command.
    """
    try:
        result = call()
    except DshError as exc:
        return emit_error(exc.code, exc.message, render_error=render_error)
    except KeyboardInterrupt:
        emit_error("interrupted", "interrupted", render_error=render_error)
        return 130
    except BrokenPipeError:  # the reader went away (`| head`); nothing left to tell it
        return 1
    except Exception as exc:
        kinds = _click_kinds(exc)
        if "Abort" in kinds:
            emit_error("interrupted", "interrupted", render_error=render_error)
            return 130
        if "ClickException" in kinds:
            message = str(exc.format_message())  # type: ignore[attr-defined]
            ctx = getattr(exc, "ctx", None)
            if "UsageError" in kinds and ctx is not None:
                message += f" (see '{ctx.command_path} --help')"
            return emit_error(usage_error_code, message, render_error=render_error)
        if os.environ.get("DSH_DEBUG") == "1":
            raise
        return emit_error(
            INTERNAL_ERROR_CODE,
            f"unexpected {type(exc).__name__}: {exc}",
            render_error=render_error,
        )
    return result if isinstance(result, int) and not isinstance(result, bool) else 0


def _describe_conventions(app: Any, global_options: Collection[str], versioned: bool) -> None:
    # The rewritten options are not the parser's, so its help would not mention them: say
    # so at the end of the program's own help (a Typer app keeps it in ``info.epilog``).
    info = getattr(app, "info", None)
    if info is None or isinstance(getattr(info, "epilog", None), str):
        return
    parts = ["--format text for a short summary instead of JSON"]
    if versioned:
        parts.append("--version")
    if global_options:
        parts.append(f"{', '.join(global_options)} before or after the command")
    info.epilog = "Every command also takes: " + "; ".join(parts) + "."


def _asks_version(arguments: Sequence[str], global_options: Collection[str]) -> bool:
    from dsh_common.cli_args import subcommand_index

    where = subcommand_index(arguments, global_options)
    before = arguments if where is None else arguments[:where]
    return "--version" in before


def _click_kinds(exc: BaseException) -> set[str]:
    """Names of the Click exception classes ``exc`` derives from.

    Matched by name because recent Typer releases vendor their own copy of Click
    (``typer._click``): ``isinstance`` against an imported ``click`` would miss them.
    """
    return {
        cls.__name__
        for cls in type(exc).__mro__
        if cls.__module__.split(".")[0] in ("click", "typer")
    }


def main_exit(code: int) -> NoReturn:
    """``sys.exit`` for console-script entry points (kept here so cli.py files stay tiny)."""
    sys.exit(code)
