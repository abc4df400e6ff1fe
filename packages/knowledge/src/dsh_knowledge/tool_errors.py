"""Errors of the agent tool layer (their messages are what the agent sees, verbatim)."""

from __future__ import annotations

from dsh_knowledge.errors import KnowledgeError

__all__ = ["ToolInputError", "ToolUnavailableError"]


class ToolInputError(KnowledgeError, ValueError):
    """A tool argument is missing, of the wrong type or out of bounds."""

    code = "invalid-tool-input"


class ToolUnavailableError(KnowledgeError, RuntimeError):
    """The store or the workspace a tool needs is not available."""

    code = "tool-unavailable"
