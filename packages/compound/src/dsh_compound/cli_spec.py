"""What ``dsh-compound``'s commands take, declared once (:mod:`dsh_common.cli_spec`).

The Typer command line (:mod:`dsh_compound.cli`) builds its parameters from here, and the
launcher's fast path (:mod:`dsh_compound.launcher`) and the argument rewrites read the same
declaration. Typer-free: the fast path imports it at every start.
"""

from __future__ import annotations

from dsh_common.cli_spec import Argument, Command, Option, Program, setup_command


def default_workspace() -> str:
    """The workspace when ``--workspace`` is not given (:func:`find_workspace`)."""
    from dsh_compound.project_root import find_workspace  # noqa: PLC0415 - lazy: start-up time

    return str(find_workspace())


WORKSPACE = Option(
    "--workspace",
    "The workspace root (a directory, not a symlink).",
    default_factory=default_workspace,
    show_default="the nearest directory holding docs/solutions/dsh-compound/ up to the git "
    "top level, else the git top level, else the current directory",
)
ID = Option("--id", "The record ID (kebab-case slug).", required=True)

PROGRAM = Program(
    "dsh-compound",
    [
        Command(
            "capture",
            WORKSPACE,
            Option(
                "--input",
                "Draft JSON file inside the workspace (absolute path recommended); - reads the "
                "draft from stdin.",
                required=True,
            ),
            Option(
                "--replace",
                "Replace the existing record only if its digest is still this one (CAS).",
            ),
        ),
        Command(
            "recall",
            WORKSPACE,
            Argument("text", "Search text (or --query).", metavar="[QUERY]"),
            Option("--query", "Search text, at most 500 characters."),
            Option("--limit", "Number of results, 1-10 (default 5).", default="5"),
            Option(
                "--ranking",
                "lexical (the default, else $DSH_RANKING): keyword/substring overlap. hybrid: "
                "also by meaning, across Chinese and English (needs the [semantic] extra; "
                "encodes lessons without vectors first, with progress on a terminal).",
                metavar="lexical|hybrid",
            ),
        ),
        Command("index", WORKSPACE),
        Command("inspect", WORKSPACE, ID),
        Command(
            "check",
            WORKSPACE,
            Argument(
                "paths",
                "With --pre-commit: the files pre-commit names (relative to the current "
                "directory).",
                metavar="[PATH]...",
                multiple=True,
            ),
            Option(
                "--fail-on",
                "Exit 1 when a lesson's sources are changed or missing (changed), or when any "
                "lesson needs review (needs-review); either way also when the check is "
                "incomplete (corpus scan cut at its bounds, sources left unhashed). never, or "
                "no --fail-on: the exit code is 0.",
            ),
            Option(
                "--changed-since",
                "Only lessons whose sources (or own record) changed between REV and the work "
                "tree: what a pull request touched.",
                metavar="REV",
            ),
            Option(
                "--staged",
                "Only lessons whose sources (or own record) are in the staged changes: what "
                "the commit being made touches (the index GIT_INDEX_FILE names, when git "
                "commit set it).",
                kind="bool",
            ),
            Option(
                "--pre-commit",
                "Run as the pre-commit hook: the change is read from pre-commit's "
                "--from-ref/--to-ref, else the commit being made, else the files it names "
                "(none: every lesson).",
                kind="bool",
            ),
            Option(
                "--format",
                "json (default), text (a person's list) or github (GitHub Actions "
                "annotations, most important first).",
                dest="output",
            ),
        ),
        Command(
            "mcp",
            Option(
                "--workspace",
                "The workspace the tools work in (default: as for every command, the nearest "
                "directory holding the corpus up to the git top level, else the git top "
                "level, else the current directory).",
            ),
        ),
        Command(
            "hook",
            Argument("event", "session-start or user-prompt-submit.", required=True),
            passthrough=True,
        ),
        setup_command(),
        Command("template"),
        Command(
            "remove",
            WORKSPACE,
            ID,
            Option("--digest", "The record's current digest, from inspect (CAS).", required=True),
        ),
    ],
    # --workspace is each command's own option, and so is check's --format github (json
    # and text are everybody's): written before the command they work too.
    command_options=("--workspace", "--format"),
)
