"""The transactional write path: Git plumbing transactions, the commit pipeline, the run
journal, and every writer that goes through them (sync apply, previews, edits, clear,
rollback, recover, bundle import), with the validation and crash points they share.

Re-exports nothing: importing one module of the group loads only what that module needs.
"""
