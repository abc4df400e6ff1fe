"""Typer commands built from their declarations (:mod:`dsh_common.cli_spec`).

A command function names its parameters, with the Python types its body works with, and
:func:`command` gives Typer everything else from the declaration: each parameter's option
name, help, default, metavar. The function's own parameter names must be the declared ones,
in order (checked when the command is registered); ``tests/test_cli_declarations.py``
checks that their types agree too.

    @command(app, PROGRAM["recall"], epilog="...")
    def recall_command(workspace: str, text: str | None, query: str | None, ...) -> None:
        \"\"\"Rank records ...\"\"\"

This module imports typer; the package's ``__init__`` does not, so the fast paths can use it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from dsh_common.cli_spec import Argument, Command, Option, Program

F = TypeVar("F", bound=Callable[..., Any])

_TYPES: dict[str, type] = {"str": str, "int": int, "float": float, "bool": bool, "path": Path}


def python_type(param: Option | Argument) -> Any:
    """The type Typer converts the parameter's value to (``str | None``, ``list[str]`` ...)."""
    base: Any = _TYPES[param.kind]
    if param.multiple:
        base = list[base]
    if param.kind == "bool" or param.required or param.default_factory is not None:
        return base
    if param.default is None:
        return base | None
    return base


def parameter_info(param: Option | Argument) -> Any:
    """The ``typer.Option`` or ``typer.Argument`` of a declared parameter."""
    if isinstance(param, Argument):
        return typer.Argument(metavar=param.metavar, help=param.help)
    return typer.Option(
        param.name,
        help=param.help,
        metavar=param.metavar,
        show_default=param.show_default,
        default_factory=param.default_factory,
        hidden=param.hidden,
    )


def signature(spec: Command, *, context: bool) -> inspect.Signature:
    """The signature Typer reads: ``ctx`` first when ``context``, then each parameter."""
    keyword = inspect.Parameter.POSITIONAL_OR_KEYWORD
    parameters = []
    if context:
        parameters.append(inspect.Parameter("ctx", keyword, annotation=typer.Context))
    for param in spec.params:
        given = param.required or param.default_factory is not None
        parameters.append(
            inspect.Parameter(
                param.dest,
                keyword,
                annotation=Annotated[python_type(param), parameter_info(param)],
                default=inspect.Parameter.empty if given else param.default,
            )
        )
    return inspect.Signature(parameters)


def _declare(function: Callable[..., Any], spec: Command) -> None:
    """Give ``function`` the signature Typer reads, after checking it names the parameters."""
    code = function.__code__
    names = list(code.co_varnames[: code.co_argcount + code.co_kwonlyargcount])
    context = names[:1] == ["ctx"]
    takes_all = bool(code.co_flags & inspect.CO_VARKEYWORDS)
    declared = [param.dest for param in spec.params]
    if names[int(context) :] != declared and not (takes_all and len(names) == int(context)):
        raise TypeError(
            f"{function.__qualname__}({', '.join(names)}) does not take the parameters "
            f"declared for {spec.name!r}: {', '.join(declared)}"
        )
    # Typer reads the parameters from the signature: one per declared parameter. (It
    # reads the type of a parameter without Typer metadata, ctx, from the annotations.)
    function.__signature__ = signature(spec, context=context)  # type: ignore[attr-defined]
    if context:
        function.__annotations__["ctx"] = typer.Context


def command(
    app: typer.Typer,
    spec: Command,
    *,
    epilog: str | None = None,
    help: str | None = None,
) -> Callable[[F], F]:
    """Register the decorated function on ``app`` as the declared command ``spec``.

    The command's help is the function's docstring (or ``help``). A ``passthrough``
    command also receives the words it does not declare, in ``ctx.args``.
    """

    def register(function: F) -> F:
        _declare(function, spec)
        settings = (
            {"allow_extra_args": True, "ignore_unknown_options": True} if spec.passthrough else None
        )
        name = None if spec.name is None else spec.name.rsplit(" ", 1)[-1]
        app.command(name, help=help, epilog=epilog, context_settings=settings)(function)
        return function

    return register


def callback(app: typer.Typer, program: Program) -> Callable[[F], F]:
    """Register the decorated function as ``app``'s callback taking the program's global
    options (``ctx`` first)."""

    def register(function: F) -> F:
        _declare(function, program.global_command())
        app.callback()(function)
        return function

    return register


__all__ = ["callback", "command", "parameter_info", "python_type", "signature"]
