"""Argument-list rewrites that give every dsh command the same surface, before parsing.

Typer (Click) only accepts a group's options before the subcommand, and a boolean option
is either a flag or takes a value, never both. Scripts already rely on each spelling, so
instead of changing the parsers we rewrite ``argv`` into the spelling the parser knows:

* :func:`hoist_global_options` moves ``--root X`` (or ``--root=X``) written after the
  subcommand to the front, so ``dsh-memory status --root X`` means ``dsh-memory --root X
  status``;
* :func:`sink_command_options` does the opposite for the options every command defines
  itself (``--workspace``): written before the subcommand, they move right after it, so
  ``dsh-compound --workspace W recall q`` means ``dsh-compound recall --workspace W q``;
* :func:`expand_flag_values` lets ``--dry-run`` stand alone (``--dry-run true``) and adds
  its opposite ``--apply`` (``--dry-run false``) for the commands that take the value form;
* :func:`take_format` removes ``--format json|text`` wherever it is written.

Everything after ``--`` is left alone: it is data, not options.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

FORMATS = ("json", "text")


def _name(arg: str) -> str:
    return arg.split("=", 1)[0] if arg.startswith("--") else arg


def hoist_global_options(
    args: Sequence[str],
    options: Collection[str],
    local_options: Mapping[str, Collection[str]] | None = None,
) -> list[str]:
    """``args`` with every occurrence of the value-taking ``options`` moved to the front.

    Relative order is kept (a repeated option: the last one still wins in Click), and so is
    everything else. An option written last without its value is moved as is, so the
    parser still reports the missing value in its own words. ``local_options`` names, per
    subcommand, options of the same name that the subcommand defines itself (``import
    --root NEW``): after that subcommand they stay where they are.
    """
    if not options:
        return list(args)
    where = subcommand_index(args, options)
    command = args[where] if where is not None else None
    keep = (local_options or {}).get(command or "", ())
    front: list[str] = []
    rest: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            rest.extend(args[index:])
            break
        if _name(arg) in options and not (
            where is not None and index > where and _name(arg) in keep
        ):
            if "=" in arg or index + 1 >= len(args):
                front.append(arg)
                index += 1
            else:
                front.extend(args[index : index + 2])
                index += 2
            continue
        rest.append(arg)
        index += 1
    return front + rest


def sink_command_options(
    args: Sequence[str],
    options: Collection[str],
    global_options: Collection[str] = (),
) -> list[str]:
    """``args`` with the value-taking ``options`` written before the subcommand moved to
    just after it (in their order); everything else stays where it is.

    Before the subcommand both ``options`` and ``global_options`` take a value, so a value
    is never mistaken for the subcommand. Without a subcommand nothing moves (the parser
    reports the bare options in its own words); a subcommand that does not define such an
    option refuses it as usual.
    """
    if not options:
        return list(args)
    taking_values = {*options, *global_options}
    moved: list[str] = []
    before: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--" or not arg.startswith("-"):
            break
        width = 1 if "=" in arg or _name(arg) not in taking_values else 2
        (moved if _name(arg) in options else before).extend(args[index : index + width])
        index += width
    if index >= len(args) or args[index] == "--" or not moved:
        return list(args)
    return [*before, args[index], *moved, *args[index + 1 :]]


def subcommand_index(args: Sequence[str], global_options: Collection[str]) -> int | None:
    """Position of the subcommand in ``args`` (after :func:`hoist_global_options`), or None."""
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            return None
        if _name(arg) in global_options:
            index += 1 if "=" in arg else 2
            continue
        if arg.startswith("-"):
            index += 1
            continue
        return index
    return None


def expand_flag_values(
    args: Sequence[str],
    flags: Mapping[str, Mapping[str, str]],
    global_options: Collection[str] = (),
) -> list[str]:
    """Rewrite ``--flag`` alone to ``--flag true`` and its opposite to ``--flag false``.

    ``flags`` maps a subcommand to ``{"--dry-run": "--apply"}``: only that subcommand's
    arguments are touched, so another command's real boolean flag of the same name is not.
    ``--dry-run false`` / ``--dry-run=true`` / ``--dry-run maybe`` reach the parser as
    written (the command reports a wrong word itself).
    """
    where = subcommand_index(args, global_options)
    if where is None or args[where] not in flags:
        return list(args)
    options = flags[args[where]]
    opposites = {negation: option for option, negation in options.items()}
    out = list(args[: where + 1])
    index = where + 1
    while index < len(args):
        arg = args[index]
        if arg == "--":
            out.extend(args[index:])
            break
        following = args[index + 1] if index + 1 < len(args) else None
        if arg in options and (following is None or following.startswith("--")):
            out.extend([arg, "true"])
        elif arg in opposites:
            out.extend([opposites[arg], "false"])
        else:
            out.append(arg)
            if arg in options and following is not None:
                out.append(following)  # the value form, as written
                index += 1
        index += 1
    return out


def take_format(
    args: Sequence[str], formats: Collection[str] = FORMATS
) -> tuple[list[str], str | None]:
    """Remove ``--format json|text`` (or ``--format=…``) and return ``(args, format)``.

    Any other value is left in place: a command may have a ``--format`` of its own, and
    if it has not, the parser refuses the unknown option as usual. ``formats`` names the
    values taken (a command's own, such as dsh-compound check's ``github``, to look for it
    before parsing).
    """
    out: list[str] = []
    chosen: str | None = None
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            out.extend(args[index:])
            break
        if arg == "--format" and index + 1 < len(args) and args[index + 1] in formats:
            chosen = args[index + 1]
            index += 2
            continue
        if arg.startswith("--format=") and arg.split("=", 1)[1] in formats:
            chosen = arg.split("=", 1)[1]
            index += 1
            continue
        out.append(arg)
        index += 1
    return out, chosen
