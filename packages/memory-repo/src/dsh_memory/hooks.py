"""``dsh-memory hook session-start``: the memory prompt section for Claude Code and Codex.

The section is the contract's (docs/compatibility/memory.md: static instructions plus the bounded
``summary.md`` snapshot
under ``[DPSK MEMORY: UNTRUSTED CONTEXT]``), with the tool names the host actually has:
``setup`` registers the hook as ``hook session-start --mcp-server dsh-memory --host <host>``.
Claude Code names MCP tools ``mcp__<server>__<tool>``, so the section names
``mcp__dsh-memory__memory_search``; Codex shows them as tool ``memory_search`` in the
namespace ``mcp__dsh_memory`` (hyphens become underscores), and the section says so.
Without ``--mcp-server`` no tool is wired, and the section points at the CLI instead.
Nothing is printed when memory is disabled (``memory.enabled: false``) or when no memory
repository exists at the root (nothing to search yet: the section would send the agent to
tools that find nothing). The instructions are in the user's language: Chinese when the
locale (``LC_ALL``, ``LC_MESSAGES``, ``LANG``) is ``zh*``, English otherwise.

It may also start a background ``dsh-memory-sync`` (see :mod:`dsh_memory.sync.autosync`, off by
default). Reached from the launcher without typer; nothing here blocks the agent.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dsh_common.agent_hooks import hook_main
from dsh_memory.errors import render_error

TOOL_NAMES = ("memory_search", "memory_context")
_CLI_HINT = (
    "(no MCP tools are wired in this host: run `dsh-memory search --query <words>` or "
    "`dsh-memory context --query <words>` in a shell instead)"
)


def tool_name(server: str, tool: str, host: str | None) -> str:
    """How ``host`` shows MCP tool ``tool`` of ``server`` to the model."""
    if host == "codex":
        return f"{tool}` (namespace `mcp__{server.replace('-', '_')}`)"
    return f"mcp__{server}__{tool}`"


def wire_tool_names(
    section: str, server: str | None, host: str | None = None, language: str = "zh"
) -> str:
    """The section with each tool named as the host exposes it (or a CLI hint)."""
    from dsh_memory.prompt import TOOLS_JOINED  # noqa: PLC0415

    if server is None:
        joined = TOOLS_JOINED[language]
        return section.replace(joined, f"{joined} {_CLI_HINT}", 1)
    for name in TOOL_NAMES:
        section = section.replace(f"`{name}`", "`" + tool_name(server, name, host))
    return section


def memory_exists(root: Path) -> bool:
    """Whether ``root`` holds a memory repository: a Git repository with the scaffold's
    ``.sync/.gitignore`` (two lstat calls: the hook runs at every session start)."""
    return (root / ".git").exists() and (root / ".sync" / ".gitignore").is_file()


def _options(args: list[str]) -> dict[str, Any]:
    """The options setup writes into the hook's command line, as declared for ``hook``
    (``dsh_memory.cli_spec``), by name; anything else is ignored (a hook never fails)."""
    from dsh_memory.cli_spec import PROGRAM  # noqa: PLC0415 - lazy: start-up time

    return PROGRAM["hook"].parse_known(args)


def session_start(payload: Mapping[str, Any], args: list[str]) -> str | None:
    """The prompt section (nothing when disabled or when there is no memory repository);
    may start a background sync."""
    from dsh_memory.errors import MemoryRepoError  # noqa: PLC0415
    from dsh_memory.prompt import locale_is_chinese  # noqa: PLC0415
    from dsh_memory.service import MemoryService  # noqa: PLC0415

    service = MemoryService()
    try:
        if not memory_exists(service.root):
            return None  # nothing to search yet (and nothing for a sync to start from)
    except MemoryRepoError:
        return None  # no usable root
    language = "zh" if locale_is_chinese(os.environ) else "en"
    section = service.prompt_section(language)
    if not section:
        return None
    try:
        from dsh_memory.sync.autosync import maybe_start_sync  # noqa: PLC0415

        maybe_start_sync(service.root, service.settings_file)
    except Exception:  # noqa: S110 - the context must still reach the agent
        pass
    options = _options(args)
    # Stored text is already escaped by prompt_section (no fence can be closed from inside).
    return wire_tool_names(section, options["mcp_server"], options["host"], language)


HANDLERS = {"session-start": session_start}


def main(argv: list[str]) -> int:
    """``dsh-memory hook <event>``; ``argv`` is what follows ``hook``."""
    return hook_main(argv, HANDLERS, render_error=render_error, program="dsh-memory")
