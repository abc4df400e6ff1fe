"""dsh-knowledge: local, evidence-backed project knowledge for coding agents.

The public API is importable from here; modules load on first use (PEP 562), so
``import dsh_knowledge`` - and the ``dsh-knowledge --help`` start-up - stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dsh_common.lazy import lazy_exports
from dsh_knowledge.errors import (
    DatabaseBusyError,
    GitProvenanceError,
    HealthBatchError,
    HealthGuidanceInputError,
    InvalidSupersedeError,
    InvalidTransitionError,
    KnowledgeError,
    MigrationError,
    NotFoundError,
    PostgresDriverMissingError,
    SchemaTooNewError,
    ScopeChangeError,
    StorageError,
    StorageUnavailableError,
    ValidationError,
)

if TYPE_CHECKING:
    from dsh_knowledge.authoring import AddedItem, add_item, update_item
    from dsh_knowledge.context_block import build_context
    from dsh_knowledge.extraction import extract_candidates
    from dsh_knowledge.freshness import check_freshness
    from dsh_knowledge.guidance import create_health_guidance
    from dsh_knowledge.health import check_health
    from dsh_knowledge.privacy import PrivacyRejectedError, contains_sensitive_content
    from dsh_knowledge.provenance import attach_git_provenance, capture_git_provenance
    from dsh_knowledge.provenance_update import capture_missing_provenance
    from dsh_knowledge.repository import KnowledgeRepository
    from dsh_knowledge.retrieval import (
        MAX_RETRIEVAL_RESULTS,
        RETRIEVAL_SCORING,
        are_conservative_duplicates,
        retrieve_relevant_knowledge,
    )
    from dsh_knowledge.review import review_candidates
    from dsh_knowledge.store import SCHEMA_VERSION, KnowledgeStore
    from dsh_knowledge.tools import ToolContext, call_tool

__version__ = "0.1.0"

_LAZY = {
    "KnowledgeStore": "store",
    "SCHEMA_VERSION": "store",
    "KnowledgeRepository": "repository",
    "retrieve_relevant_knowledge": "retrieval",
    "are_conservative_duplicates": "retrieval",
    "RETRIEVAL_SCORING": "retrieval",
    "MAX_RETRIEVAL_RESULTS": "retrieval",
    "capture_git_provenance": "provenance",
    "attach_git_provenance": "provenance",
    "check_freshness": "freshness",
    "check_health": "health",
    "create_health_guidance": "guidance",
    "build_context": "context_block",
    "ToolContext": "tools",
    "call_tool": "tools",
    "PrivacyRejectedError": "privacy",
    "contains_sensitive_content": "privacy",
    "extract_candidates": "extraction",
    "review_candidates": "review",
    "capture_missing_provenance": "provenance_update",
    "add_item": "authoring",
    "update_item": "authoring",
    "AddedItem": "authoring",
}


__getattr__ = lazy_exports(
    __name__, {name: f"dsh_knowledge.{module}" for name, module in _LAZY.items()}
)


__all__ = [
    "MAX_RETRIEVAL_RESULTS",
    "RETRIEVAL_SCORING",
    "SCHEMA_VERSION",
    "AddedItem",
    "DatabaseBusyError",
    "GitProvenanceError",
    "HealthBatchError",
    "HealthGuidanceInputError",
    "InvalidSupersedeError",
    "InvalidTransitionError",
    "KnowledgeError",
    "KnowledgeRepository",
    "KnowledgeStore",
    "MigrationError",
    "NotFoundError",
    "PostgresDriverMissingError",
    "PrivacyRejectedError",
    "SchemaTooNewError",
    "ScopeChangeError",
    "StorageError",
    "StorageUnavailableError",
    "ToolContext",
    "ValidationError",
    "__version__",
    "add_item",
    "are_conservative_duplicates",
    "attach_git_provenance",
    "build_context",
    "call_tool",
    "capture_git_provenance",
    "capture_missing_provenance",
    "check_freshness",
    "check_health",
    "contains_sensitive_content",
    "create_health_guidance",
    "extract_candidates",
    "retrieve_relevant_knowledge",
    "review_candidates",
    "update_item",
]
