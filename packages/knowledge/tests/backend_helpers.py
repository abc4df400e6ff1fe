"""Helpers for tests that run on both backends."""

from __future__ import annotations

import importlib.util
import sqlite3


def integrity_errors() -> tuple[type[BaseException], ...]:
    """The driver errors a violated CHECK or key raises, whichever backend raised it."""
    found: list[type[BaseException]] = [sqlite3.IntegrityError]
    if importlib.util.find_spec("psycopg") is not None:
        import psycopg

        found.append(psycopg.IntegrityError)
    return tuple(found)


def external_write(db: str, *statements: tuple[str, tuple[object, ...]]) -> None:
    """Run ``statements`` (``?`` placeholders) through a connection of its own, as another
    tool would: the Node tool on an SQLite file, ``psql`` on a PostgreSQL database."""
    if db.startswith(("postgresql://", "postgres://")):
        import psycopg

        with psycopg.connect(db, autocommit=False) as other:
            for sql, params in statements:
                other.execute(sql.replace("?", "%s"), params)  # type: ignore[arg-type]
        return
    other = sqlite3.connect(db)
    other.execute("PRAGMA foreign_keys = ON")
    for sql, params in statements:
        other.execute(sql, params)
    other.commit()
    other.close()
