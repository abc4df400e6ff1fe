"""dsh-knowledge: local, evidence-backed project knowledge for coding agents."""

from __future__ import annotations

from dsh_knowledge.errors import (
    DatabaseBusyError,
    GitProvenanceError,
    HealthBatchError,
    InvalidSupersedeError,
    InvalidTransitionError,
    KnowledgeError,
    NotFoundError,
    SchemaTooNewError,
    ScopeChangeError,
    StorageError,
    ValidationError,
)

__version__ = "0.1.0"

__all__ = [
    "DatabaseBusyError",
    "GitProvenanceError",
    "HealthBatchError",
    "InvalidSupersedeError",
    "InvalidTransitionError",
    "KnowledgeError",
    "NotFoundError",
    "SchemaTooNewError",
    "ScopeChangeError",
    "StorageError",
    "ValidationError",
    "__version__",
]
