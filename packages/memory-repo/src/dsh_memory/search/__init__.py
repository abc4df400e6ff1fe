"""Search and context: the text model and ranking, the bilingual glossary, the search index
and its updates, hybrid ranking's vectors, and the ``memory.search``/``memory.context`` reads.

Re-exports nothing: importing one module of the group loads only what that module needs.
"""
