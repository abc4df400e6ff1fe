"""Session consolidation: which agent sessions are new, their redacted transcripts, the
consolidating agent run on a staging copy, and the background start of ``dsh-memory-sync``.

Re-exports nothing: importing one module of the group loads only what that module needs.
"""
