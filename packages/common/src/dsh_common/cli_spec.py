"""One declaration per command: its options and arguments, read by every parser.

A product declares each program once, in a typer-free module (``dsh_<pkg>.cli_spec``), as a
:class:`Program` of :class:`Command` objects holding :class:`Option` and :class:`Argument`
objects: name, kind, default, help, metavar. Every parser reads that one declaration:

* the Typer command line builds each command's parameters from it
  (:func:`dsh_common.cli.typer_commands.command`), so the function only names them;
* the launchers' fast path (:mod:`dsh_common.fastpath`) derives its tables from it: which
  options a command takes, which are integers, the positional query, the defaults;
* the argv rewriter (:func:`dsh_common.cli.run_app` and the fast path alike) takes the
  global options, the options that may come before the command, the options a command
  keeps for itself and the ``--flag``/``--negation`` pairs from it;
* the hooks and MCP servers parse their own arguments with the names it declares
  (:meth:`Command.parse_known`, :meth:`Command.words`).

Adding an option is one line here and reaches every parser. ``tests/test_cli_declarations.py``
fails when a Typer command and its declaration disagree.

Kept small and free of ``typing`` and ``dataclasses`` at run time: hooks and the fast path
import it at every start.
"""

from __future__ import annotations

# Not typing.TYPE_CHECKING: importing typing costs every agent hook ~2 ms of start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence
    from typing import Any

#: What an option's or argument's value is: text, a whole number, a number, a flag (an
#: option alone, no value) or a file system path (``pathlib.Path`` for the command).
KINDS = ("str", "int", "float", "bool", "path")


class Option:
    """``--name VALUE`` (or a flag, ``kind="bool"``) of a command or of the program.

    ``dest`` is the parameter's name in the command's function (default: the name without
    dashes, ``-`` as ``_``). Without ``required``, ``default`` or ``default_factory`` the
    value is None when the option is not given. ``negation`` (``"--apply"`` for
    ``"--dry-run"``) makes a ``true|false`` option work as a flag and names its opposite.
    ``hidden`` options are parsed but not listed in ``--help`` (written by ``setup``).
    """

    # A plain class, not a dataclass: importing dataclasses costs start-up time.
    __slots__ = (
        "default",
        "default_factory",
        "dest",
        "help",
        "hidden",
        "kind",
        "metavar",
        "multiple",
        "name",
        "negation",
        "required",
        "show_default",
    )

    def __init__(
        self,
        name: str,
        help: str,
        *,
        dest: str | None = None,
        kind: str = "str",
        default: Any = None,
        default_factory: Callable[[], Any] | None = None,
        required: bool = False,
        multiple: bool = False,
        metavar: str | None = None,
        show_default: bool | str = True,
        negation: str | None = None,
        hidden: bool = False,
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"{name}: unknown kind {kind!r}")
        self.name = name
        self.help = help
        self.dest = dest if dest is not None else name.lstrip("-").replace("-", "_")
        self.kind = kind
        self.default = False if kind == "bool" and default is None else default
        self.default_factory = default_factory
        self.required = required
        self.multiple = multiple
        self.metavar = metavar
        self.show_default = show_default
        self.negation = negation
        self.hidden = hidden

    @property
    def takes_value(self) -> bool:
        """Whether a word follows the option (every kind but a flag)."""
        return self.kind != "bool"

    def but(self, **changes: Any) -> Option:
        """The same option with some attributes changed (another help, another default)."""
        given = {slot: getattr(self, slot) for slot in Option.__slots__ if slot != "name"}
        given.update(changes)
        return Option(self.name, **given)

    def __repr__(self) -> str:
        return f"Option({self.name!r})"


class Argument:
    """A positional argument: optional unless ``required``; ``multiple`` takes every word."""

    __slots__ = ("dest", "help", "kind", "metavar", "multiple", "required")

    def __init__(
        self,
        dest: str,
        help: str,
        *,
        kind: str = "str",
        metavar: str | None = None,
        required: bool = False,
        multiple: bool = False,
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"{dest}: unknown kind {kind!r}")
        self.dest = dest
        self.help = help
        self.kind = kind
        self.metavar = metavar
        self.required = required
        self.multiple = multiple

    default = None
    default_factory = None

    def but(self, **changes: Any) -> Argument:
        """The same argument with some attributes changed (another help)."""
        given = {slot: getattr(self, slot) for slot in Argument.__slots__ if slot != "dest"}
        given.update(changes)
        return Argument(self.dest, **given)

    def __repr__(self) -> str:
        return f"Argument({self.dest!r})"


class Command:
    """One command: its name (``"vectors build"`` for a subgroup's; None for a program that
    is a single command), its parameters in the order ``--help`` lists them, and whether
    words it does not declare pass through to it (``passthrough``: a hook's arguments)."""

    __slots__ = ("name", "params", "passthrough")

    def __init__(
        self, name: str | None, *params: Option | Argument, passthrough: bool = False
    ) -> None:
        self.name = name
        self.params = params
        self.passthrough = passthrough
        dests = [param.dest for param in params]
        if len(set(dests)) != len(dests):
            raise ValueError(f"{name}: a parameter name is declared twice: {dests}")

    @property
    def options(self) -> tuple[Option, ...]:
        return tuple(param for param in self.params if isinstance(param, Option))

    @property
    def arguments(self) -> tuple[Argument, ...]:
        return tuple(param for param in self.params if isinstance(param, Argument))

    def option(self, name: str) -> Option:
        """The option called ``name`` (``"--db"``); KeyError when the command has none."""
        for option in self.options:
            if option.name == name:
                return option
        raise KeyError(f"{self.name} has no option {name}")

    @property
    def value_names(self) -> tuple[str, ...]:
        """The names of the options that take a value, in declaration order."""
        return tuple(option.name for option in self.options if option.takes_value)

    @property
    def flag_names(self) -> tuple[str, ...]:
        """The names of the flags (options that take no value)."""
        return tuple(option.name for option in self.options if not option.takes_value)

    def complete(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """Every parameter's value by ``dest``: the ``given`` one, else its default (a
        ``default_factory`` is called only then, as the parser calls it)."""
        values: dict[str, Any] = {}
        for param in self.params:
            if param.dest in given:
                values[param.dest] = given[param.dest]
            elif param.default_factory is not None:
                values[param.dest] = param.default_factory()
            else:
                values[param.dest] = param.default
        return values

    def parse_known(self, args: Sequence[str]) -> dict[str, Any]:
        """The declared options found in ``args``, by ``dest``, forgiving everything else.

        For a hook's arguments, which must never fail: for each option its first
        ``--name VALUE`` or ``--name=VALUE`` (a flag: present or not); words that are not
        declared are skipped; an option not given has its default.
        """
        values: dict[str, Any] = {}
        for option in self.options:
            value = option.default
            for index, word in enumerate(args):
                if not option.takes_value:
                    if word == option.name:
                        value = True
                        break
                elif word == option.name and index + 1 < len(args):
                    value = args[index + 1]
                    break
                elif word.startswith(option.name + "="):
                    value = word.split("=", 1)[1]
                    break
            values[option.dest] = value
        return values

    def words(self, values: Mapping[str, Any]) -> list[str]:
        """The options of ``values`` (by ``dest``) written back as words, in declaration
        order: ``--name VALUE`` for each value given, ``--name`` for each flag set, nothing
        for None or False. What a command that hands its options on to another one passes."""
        out: list[str] = []
        for option in self.options:
            value = values.get(option.dest)
            if value is None or value is False:
                continue
            if not option.takes_value:
                out.append(option.name)
            elif option.multiple:
                for item in value:
                    out += [option.name, str(item)]
            else:
                out += [option.name, str(value)]
        return out

    def __repr__(self) -> str:
        return f"Command({self.name!r})"


class Program:
    """A command-line program: its commands and the conventions of its argument list.

    ``global_options`` are the program's own (``--root``), written before or after the
    command; a command that declares an option of the same name keeps it for itself after
    its name (``import --root NEW``). ``command_options`` name options that commands
    declare themselves (``--workspace``) and that may also be written before the command.
    ``path_options`` name the options whose value is a path (undecodable bytes there are
    ``invalid-path``).
    """

    __slots__ = ("command_options", "commands", "global_options", "name", "path_options")

    def __init__(
        self,
        name: str,
        commands: Iterable[Command],
        *,
        global_options: Sequence[Option] = (),
        command_options: Sequence[str] = (),
        path_options: Sequence[str] = (),
    ) -> None:
        self.name = name
        self.commands = {command.name: command for command in commands}
        self.global_options = tuple(global_options)
        self.command_options = tuple(command_options)
        self.path_options = tuple(path_options)

    def __getitem__(self, name: str | None) -> Command:
        return self.commands[name]

    @property
    def global_names(self) -> tuple[str, ...]:
        """The names of the value-taking global options (the rewriter moves these)."""
        return tuple(option.name for option in self.global_options if option.takes_value)

    def local_options(self) -> dict[str, tuple[str, ...]]:
        """Per command, the global option names it declares itself (left after it)."""
        names = self.global_names
        local: dict[str, tuple[str, ...]] = {}
        for command in self.commands.values():
            own = tuple(option.name for option in command.options if option.name in names)
            if own and command.name is not None:
                local[command.name] = own
        return local

    def flag_values(self) -> dict[str, dict[str, str]]:
        """Per command, ``{"--dry-run": "--apply"}`` for its options that have a negation."""
        pairs: dict[str, dict[str, str]] = {}
        for command in self.commands.values():
            own = {o.name: o.negation for o in command.options if o.negation is not None}
            if own and command.name is not None:
                pairs[command.name] = own
        return pairs

    def global_command(self) -> Command:
        """The global options as a command of their own (what the program's callback takes)."""
        return Command(None, *self.global_options)

    def __repr__(self) -> str:
        return f"Program({self.name!r})"


def setup_command(options: Sequence[Any] = ()) -> Command:
    """``setup HOST [--scope] [--project-dir] [--remove] [--dry-run] [--ranking]``: the one
    signature every product's ``setup`` has, plus ``options``, the product's declared
    :class:`dsh_common.agent_setup_entries.SetupOption` list (each ``--flag VALUE``, its
    parameter named ``option_<flag>``). See :func:`dsh_common.cli.add_setup_command`."""
    return Command(
        "setup",
        Argument("host", "claude-code or codex.", required=True),
        Option("--scope", "user (default) or project.", default="user"),
        Option("--project-dir", "Project root (default: cwd)."),
        Option("--remove", "Undo exactly our entries.", kind="bool"),
        Option("--dry-run", "Print the diff; write nothing.", kind="bool"),
        Option(
            "--ranking",
            "hybrid or lexical: DSH_RANKING for the server and hooks (hybrid also warms the "
            "model's weight cache; needs the [semantic] extra).",
            metavar="hybrid|lexical",
        ),
        *(
            Option(
                option.flag,
                option.help,
                dest=setup_parameter(option.flag),
                metavar=option.metavar,
            )
            for option in options
        ),
    )


def setup_parameter(flag: str) -> str:
    """The parameter name of a declared setup option (``--db`` -> ``option_db``)."""
    return "option_" + flag.lstrip("-").replace("-", "_")


__all__ = [
    "KINDS",
    "Argument",
    "Command",
    "Option",
    "Program",
    "setup_command",
    "setup_parameter",
]
