"""What ``dsh-knowledge``'s commands take, declared once (:mod:`dsh_common.cli_spec`).

The Typer command line (:mod:`dsh_knowledge.cli`) builds its parameters from here; the
launcher's fast path (:mod:`dsh_knowledge.launcher`), the argument rewrites, the prompt
hook's arguments (:mod:`dsh_knowledge.hooks`) and the MCP server's
(:mod:`dsh_knowledge.agent_config`) read the same declaration. Typer-free: the fast path
and the hook import it at every start.
"""

from __future__ import annotations

from dsh_common.cli_spec import Argument, Command, Option, Program, setup_command

WORKSPACE = Option("--workspace", "Workspace.")
PROJECT = Option("--project", "Project.")
WORKSPACE_WIDE = Option("--workspace-wide", "Only items without a project.", kind="bool")
LIMIT = Option("--limit", "At most N items.", kind="int")
ITEM_ID = Argument("item_id", "Item id.", metavar="ID", required=True)
ITEM_IDS = Argument("item_ids", "Item ids.", metavar="ID...", required=True, multiple=True)
QUERY = Option("--query", "The same, as an option.")
TYPE = Option("--type", "Type filter.", dest="knowledge_type")
SESSION_ID = Option("--session-id", "Session evidence id (else $DSH_KNOWLEDGE_SESSION_ID).")

PROGRAM = Program(
    "dsh-knowledge",
    [
        # The items (dsh_knowledge.cli.items).
        Command(
            "add",
            WORKSPACE.but(
                help="Workspace scope; a directory is stored as its canonical path (default: "
                "the git top level of the current directory, else the directory)."
            ),
            TYPE.but(help="fact, decision or lesson."),
            Option("--content", "The knowledge text."),
            PROJECT.but(help="Project scope (omit: workspace-wide)."),
            Option(
                "--evidence",
                'One evidence object as JSON, repeatable: {"type","source","locator"?,'
                '"timestamp"?,"gitProvenance"?}. timestamp defaults to now.',
                multiple=True,
            ),
            Option(
                "--repo",
                "Git repository of the file evidence: attach gitProvenance (commit and path) "
                "to each file evidence whose source is a clean, tracked file present in HEAD, "
                "and add a provenanceCapture report to the output (default: the workspace, "
                "when it is the top level of a git work tree and file evidence is given).",
            ),
            Option(
                "--jsonl",
                "Add many items in one transaction: one JSON object per line with "
                '"type", "content" and optional "project", "evidence" (- reads stdin).',
                kind="path",
            ),
        ),
        Command("get", ITEM_ID),
        Command("verify", ITEM_IDS),
        Command("archive", ITEM_IDS),
        Command(
            "supersede",
            ITEM_ID.but(help="The verified item to replace."),
            Option("--by", "The verified replacement item id.", required=True),
        ),
        Command(
            "update",
            ITEM_ID,
            Option("--content", "New knowledge text."),
            TYPE.but(help="New type: fact, decision or lesson."),
            Option(
                "--evidence", "Replace all evidence: one JSON object, repeatable.", multiple=True
            ),
        ),
        Command(
            "list",
            WORKSPACE,
            PROJECT,
            WORKSPACE_WIDE,
            TYPE,
            Option("--status", "Status filter."),
            Option("--origin", "explicit or automatic."),
            LIMIT,
        ),
        Command(
            "search",
            Argument("text", "Literal text to find in content.", metavar="[QUERY]"),
            QUERY,
            WORKSPACE,
            PROJECT,
            LIMIT,
        ),
        Command(
            "retrieve",
            Argument("text", "What you are looking for, in words.", metavar="[QUERY]"),
            QUERY,
            WORKSPACE.but(
                help="Workspace (default: the git top level of the current directory, else it)."
            ),
            PROJECT.but(help="Project: its items rank first."),
            LIMIT.but(help="At most N (<= 100)."),
            Option("--prefer", "Preferred type, repeatable, in order.", multiple=True),
            Option("--status", "candidate or verified only."),
            Option(
                "--ranking",
                "lexical (default) or hybrid: by meaning too, across languages (needs the "
                "[semantic] extra; default $DSH_RANKING).",
            ),
        ),
        # Keeping the store true to the code (dsh_knowledge.cli.curation).
        Command(
            "freshness",
            ITEM_ID,
            Option(
                "--repo",
                "The Git work tree to compare with (default: its top level).",
                kind="path",
            ),
        ),
        Command(
            "health",
            Argument("item_ids", "1 to 16 item ids.", metavar="ID...", multiple=True),
            Option(
                "--repo",
                "The Git work tree to check against (default: the workspace).",
                kind="path",
            ),
            Option("--guidance", "Add advisory guidance per result.", kind="bool"),
            Option(
                "--all",
                "Every candidate and verified item of the workspace, in batches of 16 "
                "(progress on stderr).",
                kind="bool",
                dest="all_items",
            ),
            WORKSPACE.but(help="With --all: the workspace (default: cwd's)."),
        ),
        Command(
            "review",
            WORKSPACE,
            PROJECT,
            WORKSPACE_WIDE,
            Option("--origin", "explicit or automatic (default both)."),
            Option("--repo", "Git work tree: add live health per item.", kind="path"),
            LIMIT.but(help="At most N candidates."),
        ),
        Command(
            "extract",
            Option(
                "--transcript",
                "Claude Code transcript or DSH session log.",
                kind="path",
                required=True,
            ),
            SESSION_ID.but(help="Session id (default: the one the file names)."),
            WORKSPACE.but(help="Workspace (default: the file's cwd)."),
            PROJECT.but(help="Project (else $DSH_KNOWLEDGE_PROJECT)."),
        ),
        Command(
            "provenance",
            ITEM_IDS,
            Option("--repo", "Git work tree (default: current directory).", kind="path"),
        ),
        # The store as a whole (dsh_knowledge.cli.store_admin).
        Command(
            "import",
            Option(
                "--from",
                "The store to copy from: an SQLite file or a PostgreSQL URL.",
                dest="source",
                required=True,
            ),
            Option("--dry-run", "Report what would be copied; write nothing.", kind="bool"),
            Option(
                "--workspace-map",
                "Re-scope items of workspace OLD (or a folder below it) to NEW; repeatable.",
                metavar="OLD=NEW",
                multiple=True,
            ),
        ),
        Command("vectors build"),
        Command("vectors status"),
        # Agent delivery (dsh_knowledge.cli.agents): the MCP server and the hook parse the
        # same options themselves (dsh_knowledge.agent_config).
        Command(
            "mcp",
            Option(
                "--db", "SQLite file or postgresql:// URL (else $DSH_KNOWLEDGE_DB, else default)."
            ),
            PROJECT.but(help="Default project (else $DSH_KNOWLEDGE_PROJECT)."),
            WORKSPACE.but(help="Session workspace (default: the cwd)."),
            SESSION_ID,
        ),
        Command(
            "hook",
            Argument("event", "user-prompt-submit or stop", required=True),
            Option("--db", "SQLite file or postgresql:// URL."),
            PROJECT,
            Option("--auto-extract", "stop: extract candidates (opt-in).", kind="bool"),
        ),
        setup_command(),
    ],
    global_options=[
        Option(
            "--db",
            "SQLite file or postgresql:// URL (default $DSH_KNOWLEDGE_DB, else "
            "$DSH_HOME/knowledge/knowledge.sqlite, ~/.dsh when unset).",
        )
    ],
    # Defined by each command, also accepted before it: --workspace W search q.
    command_options=("--workspace", "--project"),
    # Undecodable bytes in these are invalid-path.
    path_options=("--db", "--repo", "--workspace", "--from"),
)
