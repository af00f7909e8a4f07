"""monkey's one SQLite database file, shared by the session store and the checkpoint journal.

Each part of monkey that keeps tables here is a *component* (``store``, ``journal``) with
its own ordered list of migrations. The ``schema_migrations`` table records the version of
each component, so parts evolve independently in the same file. A database written by a
newer monkey (a component version above what this code knows) is refused with a clear
message, never modified.

Connections use WAL mode and a busy timeout, so several monkey processes can share the
file; keep transactions short.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

__all__ = ["DB_NAME", "db_path", "connect", "migrate", "DatabaseError", "BUSY_TIMEOUT_MS"]

DB_NAME = "monkey.db"
BUSY_TIMEOUT_MS = 30_000

Migration = str | Sequence[str]
"""One migration: SQL statements run in one transaction."""


class DatabaseError(Exception):
    """The database cannot be used (corrupt, newer than this monkey, unwritable)."""


def db_path(home: Path) -> Path:
    """The database file in the monkey home."""
    return home / DB_NAME


def connect(path: Path, *, readonly: bool = False) -> sqlite3.Connection:
    """A connection with WAL, a busy timeout and foreign keys; the folder is created if needed."""
    try:
        if readonly:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000,
                                   isolation_level=None)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if not readonly:
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
    except sqlite3.DatabaseError as exc:
        raise DatabaseError(f"cannot open the monkey database {path}: {exc}") from None
    return conn


def migrate(conn: sqlite3.Connection, component: str, migrations: Sequence[Migration], *, path: Path | str = "") -> int:
    """Bring ``component``'s tables to the newest version; returns that version.

    ``migrations[i]`` upgrades from version ``i`` to ``i + 1``. Each runs in its own
    ``BEGIN IMMEDIATE`` transaction, so two processes starting at once do not both apply it.
    """
    where = f" {path}" if path else ""
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (component TEXT PRIMARY KEY, version INTEGER NOT NULL)"
        )
        while True:
            conn.execute("BEGIN IMMEDIATE")
            try:
                row = conn.execute(
                    "SELECT version FROM schema_migrations WHERE component = ?", (component,)
                ).fetchone()
                version = row[0] if row else 0
                if version > len(migrations):
                    raise DatabaseError(
                        f"the monkey database{where} was written by a newer monkey "
                        f"({component} schema {version}, this monkey knows {len(migrations)}); "
                        "upgrade monkey to use it"
                    )
                if version == len(migrations):
                    conn.execute("COMMIT")
                    return version
                step = migrations[version]
                for statement in [step] if isinstance(step, str) else step:
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_migrations (component, version) VALUES (?, ?) "
                    "ON CONFLICT(component) DO UPDATE SET version = excluded.version",
                    (component, version + 1),
                )
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
    except sqlite3.DatabaseError as exc:
        raise DatabaseError(f"the monkey database{where} is damaged or unreadable: {exc}") from None
