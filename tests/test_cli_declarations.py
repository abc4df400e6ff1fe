"""Every parser of a command reads its one declaration (``dsh_<pkg>.cli_spec``).

Each product declares its programs once (:mod:`dsh_common.cli_spec`): the Typer command
line builds its parameters from the declaration, the launchers' fast path derives its
tables from it, the hooks and dsh-knowledge's MCP server parse the options declared for
them. These tests compare what each parser really accepts with the declaration, so a
command that gains, loses or changes an option anywhere but in ``cli_spec`` fails here:

* the Typer command (the Click command Typer builds, and the function's own annotations)
  against the declared command: names, option strings, kinds, defaults, required, help;
* the fast path: exactly the declared string and integer options of each command it takes
  over, with the values the Typer command would receive;
* the hooks and the MCP server: exactly the options declared for them, from the hook's own
  argument list and as the Typer ``hook`` command hands them on.
"""

from __future__ import annotations

import importlib
import inspect
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.main
from dsh_test_support import in_process

from dsh_common.cli.typer_commands import python_type
from dsh_common.cli_spec import Argument, Command, Option, Program
from dsh_common.fastpath import FAST_KINDS, run_fast

#: (program, its declaration, its Typer app, its launcher or None).
PROGRAMS = [
    ("dsh-compound", "dsh_compound.cli_spec:PROGRAM", "dsh_compound.cli:app", "dsh_compound"),
    ("dsh-knowledge", "dsh_knowledge.cli_spec:PROGRAM", "dsh_knowledge.cli:app", "dsh_knowledge"),
    ("dsh-memory", "dsh_memory.cli_spec:PROGRAM", "dsh_memory.cli.memory:app", "dsh_memory"),
    ("dsh-memory-sync", "dsh_memory.cli_spec:SYNC_PROGRAM", "dsh_memory.cli.sync:app", None),
]
LAUNCHERS = [(name, spec, package) for name, spec, _, package in PROGRAMS if package]

#: Click's names of the value types Typer gives a parameter, as declared kinds.
KINDS = {
    "text": "str",
    "str": "str",
    "integer": "int",
    "int": "int",
    "float": "float",
    "boolean": "bool",
    "bool": "bool",
    "path": "path",
}


def _load(target: str) -> Any:
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def _typer_commands(app: typer.Typer, program: Program) -> dict[str | None, Any]:
    """Every command of ``app`` as Click runs it, by its declared name (``"vectors build"``;
    None for a program that is a single command)."""
    root = typer.main.get_command(app)
    found: dict[str | None, Any] = {}

    def walk(command: Any, path: str) -> None:
        for name, sub in command.commands.items():
            full = f"{path} {name}".strip()
            if hasattr(sub, "commands"):
                walk(sub, full)
            else:
                found[full] = sub

    if hasattr(root, "commands"):
        walk(root, "")
    else:
        found[None] = root
    assert found, f"{program.name}: no command found in its Typer app"
    return found


def _declared(param: Option | Argument) -> tuple[Any, ...]:
    default = param.default_factory if param.default_factory is not None else param.default
    if isinstance(param, Argument):
        return (
            param.dest,
            "argument",
            (),
            param.kind,
            default,
            param.required,
            param.multiple,
            param.help,
            param.metavar,
        )
    return (
        param.dest,
        "option",
        (param.name,),
        param.kind,
        default,
        param.required,
        param.multiple,
        param.help,
        param.metavar,
        param.hidden,
        param.show_default,
    )


def _typer(param: Any) -> tuple[Any, ...]:
    kind = KINDS[param.type.name]
    if param.param_type_name == "argument":
        return (
            param.name,
            "argument",
            (),
            kind,
            param.default,
            param.required,
            param.nargs == -1,
            param.help,
            param.metavar,
        )
    assert param.is_flag == (kind == "bool"), param.name
    default = getattr(param.default, "__wrapped__", param.default)
    return (
        param.name,
        "option",
        tuple(param.opts),
        kind,
        default,
        param.required,
        param.multiple,
        param.help,
        param.metavar,
        param.hidden,
        param.show_default,
    )


def _cases() -> Iterator[Any]:
    for name, spec, app, _ in PROGRAMS:
        yield pytest.param(spec, app, id=name)


@pytest.mark.parametrize(("spec", "app"), list(_cases()))
def test_typer_commands_are_the_declared_ones(spec: str, app: str) -> None:
    program: Program = _load(spec)
    commands = _typer_commands(_load(app), program)
    assert sorted(commands, key=str) == sorted(program.commands, key=str)
    for name, declared in program.commands.items():
        built = commands[name]
        expected = [_declared(param) for param in declared.params]
        assert [_typer(param) for param in built.params] == expected, name
        # A passthrough command (a hook) hands the words it does not declare on.
        settings = built.context_settings or {}
        assert settings.get("allow_extra_args", False) == declared.passthrough, name
        assert settings.get("ignore_unknown_options", False) == declared.passthrough, name


@pytest.mark.parametrize(("spec", "app"), list(_cases()))
def test_the_global_options_are_the_declared_ones(spec: str, app: str) -> None:
    program: Program = _load(spec)
    root = typer.main.get_command(_load(app))
    if not hasattr(root, "commands"):
        assert program.global_options == ()
        return
    expected = [_declared(option) for option in program.global_options]
    assert [_typer(param) for param in root.params] == expected


def _functions(app: typer.Typer, prefix: str = "") -> Iterator[tuple[str | None, Any]]:
    for info in app.registered_commands:
        name = info.name or info.callback.__name__.replace("_", "-")
        yield (f"{prefix} {name}".strip() if prefix or info.name else None), info.callback
    for group in app.registered_groups:
        yield from _functions(group.typer_instance, f"{prefix} {group.name}".strip())


@pytest.mark.parametrize(("spec", "app"), list(_cases()))
def test_each_function_takes_the_declared_types(spec: str, app: str) -> None:
    """What the body works with (its annotations) is what Typer converts the value to."""
    program: Program = _load(spec)
    checked = 0
    for name, function in _functions(_load(app)):
        if function.__code__.co_flags & inspect.CO_VARKEYWORDS:
            continue  # setup's **values: every parameter comes from the declaration
        hints = typing.get_type_hints(function)
        hints.pop("return", None)
        hints.pop("ctx", None)
        declared = program[name]
        assert hints == {p.dest: python_type(p) for p in declared.params}, name
        checked += 1
    assert checked, f"{program.name}: no command function with parameters found"


# The fast path.


def _fast_path(package: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Program, dict[str, Any]]:
    """The declaration and the runners a launcher hands to the fast path."""
    handed: list[tuple[Program, dict[str, Any]]] = []

    def capture(argv: Any, program: Program, runners: dict[str, Any], **_: Any) -> None:
        handed.append((program, runners))

    monkeypatch.setattr("dsh_common.fastpath.run_fast", capture)
    importlib.import_module(f"{package}.launcher")._fast(["status"])
    assert len(handed) == 1
    return handed[0]


def _run_fast(program: Program, name: str, argv: list[str]) -> dict[str, Any] | None:
    """The values the fast path gives the command ``name`` for ``argv``; None when it
    hands the line back to the parser."""
    received: list[dict[str, Any]] = []

    def runner(values: dict[str, Any]) -> int:
        received.append(values)
        return 0

    code = run_fast(argv, program, {name: runner})
    if code is None:
        return None
    assert code == 0 and len(received) == 1, argv
    return received[0]


def _every_option_name(program: Program) -> set[str]:
    names = {option.name for option in program.global_options}
    for command in program.commands.values():
        names |= {option.name for option in command.options}
    return names | {"--not-declared"}


@pytest.mark.parametrize(("name", "spec", "package"), LAUNCHERS, ids=[n for n, *_ in LAUNCHERS])
def test_the_fast_path_takes_exactly_the_declared_options(
    name: str, spec: str, package: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)  # where a --workspace default is looked for
    program, runners = _fast_path(package, monkeypatch)
    assert program is _load(spec), f"{name}'s launcher hands the fast path another declaration"
    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)
    assert runners, f"{name}'s launcher takes no command over"
    everything = {option.dest for option in program.global_options}
    for command_name in runners:
        declared = program[command_name]
        dests = everything | {param.dest for param in declared.params}
        # Alone: every declared parameter, with the default the parser would give.
        bare = _run_fast(program, command_name, [command_name])
        assert bare is not None, command_name
        assert set(bare) == dests, command_name
        for option in declared.options:
            if option.default_factory is None:
                assert bare[option.dest] == option.default, (command_name, option)
        # Each option: taken when the fast path converts its kind, else left to the parser.
        accepted = set()
        for option_name in sorted(_every_option_name(program) - set(program.global_names)):
            values = _run_fast(program, command_name, [command_name, option_name, "7"])
            if values is not None:
                accepted.add(option_name)
                option = declared.option(option_name)
                assert values[option.dest] == (7 if option.kind == "int" else "7"), option
        fast = {
            option.name
            for option in declared.options
            if option.kind in FAST_KINDS and not option.multiple and option.takes_value
        }
        assert accepted == fast, command_name
        # The global options, before the command or after it (moved in front first).
        for option in program.global_options:
            for argv in ([option.name, "/g", command_name], [command_name, option.name, "/g"]):
                values = _run_fast(program, command_name, argv)
                assert values is not None and values[option.dest] == "/g", argv


# The hooks and the MCP server.


def _accepted(parse: Any, program: Program) -> set[str]:
    """The option names ``parse`` takes without an error (alone, or with a value)."""
    found = set()
    for option_name in _every_option_name(program):
        for argv in ([option_name, "value"], [option_name]):
            try:
                parse(argv)
            except Exception:  # noqa: S112 - refused: try the other spelling
                continue
            found.add(option_name)
            break
    return found


def test_the_knowledge_hook_and_mcp_server_take_the_declared_options() -> None:
    from dsh_knowledge import hooks
    from dsh_knowledge.agent_config import parse_agent_options
    from dsh_knowledge.cli_spec import PROGRAM

    hook, mcp = PROGRAM["hook"], PROGRAM["mcp"]
    assert _accepted(hooks._options, PROGRAM) == {option.name for option in hook.options}
    assert _accepted(parse_agent_options, PROGRAM) == {option.name for option in mcp.options}
    assert hooks._options(["--project", "p", "--auto-extract"]).project == "p"
    assert hooks._options(["--auto-extract"]).auto_extract
    assert not hooks._options([]).auto_extract
    assert parse_agent_options(["--session-id=s", "--workspace", "w"]).session_id == "s"


def test_the_memory_hook_takes_the_declared_options() -> None:
    from dsh_memory import hooks
    from dsh_memory.cli_spec import PROGRAM

    hook = PROGRAM["hook"]
    nothing = hooks._options([])
    assert set(nothing) == {option.dest for option in hook.options}
    taken = {
        option_name
        for option_name in _every_option_name(PROGRAM)
        if hooks._options([option_name, "value"]) != nothing
    }
    assert taken == {option.name for option in hook.options}
    for option in hook.options:
        assert hooks._options([f"{option.name}=v"])[option.dest] == "v"


@pytest.mark.parametrize(
    ("program", "module", "argv"),
    [
        ("dsh-knowledge", "dsh_knowledge.hooks", ["stop", "--db", "x.sqlite", "--auto-extract"]),
        ("dsh-knowledge", "dsh_knowledge.hooks", ["user-prompt-submit", "--project=p"]),
        ("dsh-memory", "dsh_memory.hooks", ["session-start", "--host", "codex", "--mcp-server=m"]),
        ("dsh-memory", "dsh_memory.hooks", ["session-start", "--newer", "x", "--host", "codex"]),
    ],
)
def test_the_typer_hook_command_hands_the_hook_its_options(
    program: str, module: str, argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``python -m dsh_x.cli hook …`` (the parser path) gives the hook what the launcher
    gives it straight: the same event, the same options by name."""
    hooks = importlib.import_module(module)
    handed: list[list[str]] = []

    def capture(words: list[str]) -> int:
        handed.append(list(words))
        return 0

    monkeypatch.setattr(hooks, "main", capture)
    done = in_process.run(program, "hook", *argv)
    assert done.returncode == 0, done.stderr
    assert len(handed) == 1
    assert handed[0][0] == argv[0]
    assert hooks._options(handed[0][1:]) == hooks._options(argv[1:])


def test_the_declarations_are_cheap_to_import() -> None:
    """The fast path and the hooks import the declarations at every start: no typer, no
    click, no dataclasses; the shared classes not even typing."""
    import subprocess
    import sys

    def imported(module: str, *watched: str) -> str:
        code = f"import sys, {module}; print(sorted(m for m in {watched!r} if m in sys.modules))"
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert imported("dsh_common.cli_spec", "typer", "click", "dataclasses", "typing") == "[]"
    for package in ("dsh_compound", "dsh_knowledge", "dsh_memory"):
        assert imported(f"{package}.cli_spec", "typer", "click", "dataclasses") == "[]"


def test_a_command_function_must_name_the_declared_parameters() -> None:
    from dsh_common.cli.typer_commands import command

    app = typer.Typer()
    declared = Command("greet", Option("--name", "Who."), Argument("times", "How often."))
    with pytest.raises(TypeError, match="does not take the parameters"):

        @command(app, declared)
        def greet(times: str | None, name: str | None) -> None:  # the order is wrong
            del times, name
