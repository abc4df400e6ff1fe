"""The memory repository and its files: where it lives, its payload and records, front matter,
anchored file-system writes, the writer lock, the host settings, ``init``, the usage sidecar
and the read-only status answers.

Re-exports nothing: importing one module of the group loads only what that module needs.
"""
