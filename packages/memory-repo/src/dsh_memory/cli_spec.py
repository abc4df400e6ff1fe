"""What ``dsh-memory``'s and ``dsh-memory-sync``'s commands take, declared once.

(:mod:`dsh_common.cli_spec`.) The Typer command lines (:mod:`dsh_memory.cli`) build their
parameters from here; the launcher's fast path (:mod:`dsh_memory.launcher`), the argument
rewrites and the session-start hook's arguments (:mod:`dsh_memory.hooks`) read the same
declaration. Typer-free: the fast path and the hook import it at every start.

Option values are taken as strings and handed to the method (``"21"`` becomes 21,
``"true"`` becomes True), so malformed values come back as the method's own
``*-invalid-request`` code, never as a parser error.
"""

from __future__ import annotations

from dsh_common.cli_spec import Argument, Command, Option, Program, setup_command

ROOT = Option(
    "--root",
    "Memory root (default $DSH_MEMORY_ROOT, $DSH_HOME/storages/memory, ~/.dsh/storages/memory).",
)
CONFIRMATION = "Must be exactly {}."
PREVIEW_ID = Option("--preview-id", "The preview.")
SCOPE = Option("--scope", "active (default), archive or all.")
RANKING = Option(
    "--ranking",
    "lexical (default, or $DSH_RANKING) or hybrid (by meaning too; [semantic] extra).",
)


def _confirmation(word: str) -> Option:
    return Option("--confirmation", CONFIRMATION.format(word))


PROGRAM = Program(
    "dsh-memory",
    [
        Command("init"),
        Command("get-settings"),
        Command(
            "set-enabled",
            Option(
                "--enabled",
                "true or false; --enabled alone or --disabled also work.",
                negation="--disabled",
            ),
        ),
        Command("status"),
        Command("health"),
        Command("clear", _confirmation("DELETE_MEMORY")),
        Command("legacy-records"),
        Command(
            "migrate-legacy",
            Option(
                "--dry-run",
                "Plan only (also --dry-run true); --apply or --dry-run false applies.",
                negation="--apply",
            ),
        ),
        Command(
            "runs",
            Option("--limit", "How many (default 20)."),
            Option("--operation", "Exact match."),
            Option("--status", "Exact match."),
        ),
        Command(
            "rollback",
            Option("--run-id", "The run to undo."),
            _confirmation("ROLLBACK_MEMORY"),
        ),
        Command(
            "search",
            Argument("text", "Words to find.", metavar="[QUERY]"),
            Option("--query", "Words to find."),
            Option("--limit", "Default 20."),
            SCOPE,
            RANKING,
        ),
        Command(
            "context",
            Argument("text", "Optional words.", metavar="[QUERY]"),
            Option("--query", "Optional words."),
            Option("--limit", "1-20, default 10."),
            SCOPE,
            RANKING,
        ),
        Command("vectors"),
        Command("previews"),
        Command("apply-preview", PREVIEW_ID),
        Command("discard-preview", PREVIEW_ID),
        Command(
            "write",
            Argument("path", "Payload path, e.g. handbook/uv.md.", required=True),
            Option("--file", "Read the content from this file."),
            Argument("source", "- to read the content from stdin."),
        ),
        Command("remove", Argument("path", "Payload path to remove.", required=True)),
        Command("adopt"),
        Command("recover", _confirmation("RECOVER_MEMORY")),
        Command(
            "remote",
            Argument("action", "Nothing to show it; set URL; remove.", metavar="[set|remove]"),
            Argument(
                "url", "A path, file://, https://, ssh:// or user@host:path.", metavar="[URL]"
            ),
        ),
        Command("pull"),
        Command("push"),
        Command("export", Option("--bundle", "Bundle file to create.")),
        Command(
            "import",
            Option("--bundle", "Bundle file to read."),
            # After `import`, --root names the root to create, not the one to use.
            Option("--root", "New memory root.", dest="new_root"),
        ),
        Command("prompt-section"),
        Command("mcp"),
        Command(
            "hook",
            Argument("event", "session-start.", required=True),
            # Written by setup into the hook's command line: the section then names the
            # tools as that host shows them (dsh_memory.hooks).
            Option("--mcp-server", "The MCP server's name in the host.", hidden=True),
            Option("--host", "claude-code or codex.", hidden=True),
            passthrough=True,
        ),
        setup_command(),
        Command(
            "ui",
            ROOT.but(dest="ui_root"),
            Option("--port", "Port on 127.0.0.1 (default: a free one).", kind="int", default=0),
            Option("--no-browser", "Print the URL only; do not open a browser.", kind="bool"),
        ),
    ],
    global_options=[ROOT],
    path_options=("--root",),
)

SYNC_PROGRAM = Program(
    "dsh-memory-sync",
    [
        Command(
            None,
            ROOT,
            Option("--sessions-dir", "DSH logs (default $DSH_HOME/sessions)."),
            Option("--claude-projects", "Default ~/.claude/projects."),
            Option("--codex-sessions", "Default ~/.codex/sessions."),
            Option("--agent", "dsh (default), claude, codex or command."),
            Option("--agent-command", "The program to run (implies --agent command)."),
            Option("--timeout", "Agent time limit (s).", kind="float", default=1800.0),
            Option("--json", "No progress on stderr.", kind="bool", dest="json_output"),
            Option("--dry-run", "Report; write nothing.", kind="bool"),
            Option("--scan-only", "Only list the candidates (no agent).", kind="bool"),
            Option("--preview", "Store the result as preview ID."),
            Option("--apply-preview", "Apply preview ID."),
            Option("--discard-preview", "Discard preview ID."),
            Option("--remote", "Pull from the Git remote before, push after.", kind="bool"),
        )
    ],
    path_options=("--root", "--sessions-dir", "--claude-projects", "--codex-sessions"),
)
