"""monkey's one SQLite database file, shared by the session store and the checkpoint journal.

Each part of monkey that keeps tables here is a *component* (``store``, ``journal``) with
its own ordered list of migrations. The ``schema_migrations`` table records the version of
each component, so parts evolve independently in the same file. A database written by a
newer monkey (a component version above what this code knows) is refused with a clear
message, never modified.

The file as a whole has one schema version too, ``PRAGMA user_version``: :data:`FILE_SCHEMA`,
the sum of every component's migrations. A monkey refuses a file whose version is above the
one it knows before it reads or writes anything, whichever component it opens, so an older
monkey never writes into the tables of a newer one.

The first time a process opens the file it runs ``PRAGMA quick_check`` (a few milliseconds
for a database of a few MB; ``python tools/bench.py`` is not needed to see it), so a
damaged file is reported at open and never written to. Failures are told as a person needs
them (:func:`explain`): "no space left on device: N KB free in DIR", a read-only file or
folder, a damaged file. :func:`connect_readonly` opens for reading even where nothing can
be written (a full disk, a read-only home), so read commands still work.

Connections use WAL mode and a busy timeout, so several monkey processes can share the
file; keep transactions short.
"""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
from collections.abc import Sequence
from pathlib import Path

__all__ = [
    "DB_NAME",
    "db_path",
    "connect",
    "connect_readonly",
    "migrate",
    "DatabaseError",
    "BUSY_TIMEOUT_MS",
    "FILE_SCHEMA",
    "explain",
    "check_file",
    "migrate_version",
    "no_space",
    "os_error_text",
    "empty_notice",
]

DB_NAME = "monkey.db"
BUSY_TIMEOUT_MS = 30_000
FILE_SCHEMA = 7
"""The file's schema version: the store's migrations plus the journal's. Add one with every
migration of any component (``tests/store/test_db_errors.py`` checks the sum)."""
FULL_BELOW = 1 << 20
"""Bytes free under which a failed write is told as a full disk."""
_checked: set[str] = set()

Migration = str | Sequence[str]
"""One migration: SQL statements run in one transaction."""


class DatabaseError(Exception):
    """The database cannot be used (corrupt, newer than this monkey, unwritable)."""


def db_path(home: Path) -> Path:
    """The database file in the monkey home."""
    return home / DB_NAME


def _free_kb(folder: Path) -> int | None:
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        return shutil.disk_usage(folder).free // 1024
    except OSError:
        return None


def no_space(folder: Path) -> str:
    """``no space left on device: N KB free in DIR``."""
    free = _free_kb(folder)
    return f"no space left on device: {free if free is not None else '?'} KB free in {folder}"


def os_error_text(exc: OSError, folder: Path) -> str:
    """An OSError writing monkey's files, in one line: a full disk, a read-only file system, or its own text."""
    where = Path(exc.filename).parent if exc.filename else folder
    if exc.errno == errno.ENOSPC:
        return no_space(where)
    if exc.errno == errno.EROFS:
        return f"cannot write {exc.filename or folder}: the file system is read-only"
    return str(exc)


def _read_only(folder: Path) -> bool:
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY) or not os.access(folder, os.W_OK)
    except OSError:
        return False


def explain(exc: BaseException, path: Path) -> str:
    """What went wrong with the database at ``path``, in one line a person can act on.

    A full disk ("no space left on device: N KB free in DIR"), a read-only file, folder or
    file system, a damaged file; else the error's own text.
    """
    text = str(exc)
    low = text.lower()
    folder = path.parent
    code = exc.errno if isinstance(exc, OSError) else None
    free = _free_kb(folder)
    low_space = free is not None and free * 1024 < FULL_BELOW
    if code == errno.ENOSPC or (low_space and ("full" in low or "disk i/o" in low or "unable to open" in low)):
        return no_space(folder)
    if "full" in low:
        return f"the disk is full or the database reached its size limit ({text}; {free} KB free in {folder})"
    if (
        code in (errno.EROFS, errno.EACCES, errno.EPERM)
        or "readonly" in low
        or "read-only" in low
        or (("disk i/o" in low or "unable to open" in low) and _read_only(folder))
    ):
        return f"the monkey database {path} cannot be written: its folder or file is read-only"
    if "malformed" in low or "not a database" in low or "damaged" in low:
        return f"the monkey database {path} is damaged ({text}); it was left as it is (move it away to start afresh)"
    return f"the monkey database {path}: {text}"


def empty_notice(path: Path) -> list[str]:
    """What to tell when the database file is there but empty (0 bytes: cut short by a full disk, a crash
    or a person): SQLite would set it up afresh without a word, and earlier sessions would seem gone."""
    try:
        if not path.is_file() or path.stat().st_size:
            return []
    except OSError:
        return []
    return [
        f"the monkey database {path} was empty (0 bytes); it is set up afresh, so no earlier session or "
        "checkpoint is in it (a backup of the file, if you have one, holds them)"
    ]


def connect(path: Path, *, readonly: bool = False) -> sqlite3.Connection:
    """A connection with WAL, a busy timeout and foreign keys; the folder is created if needed.

    The file's schema version is checked (see :data:`FILE_SCHEMA`) and, once per process, its
    pages (``PRAGMA quick_check``): a newer or damaged file raises :class:`DatabaseError`
    before anything is written.
    """
    if readonly:
        return connect_readonly(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DatabaseError(f"cannot open the monkey database: {explain(exc, path)}") from None
    conn = None
    try:
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        check_file(conn, path)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
    except sqlite3.Error as exc:
        if conn is not None:
            conn.close()
        raise DatabaseError(f"cannot open the monkey database: {explain(exc, path)}") from None
    except DatabaseError:
        if conn is not None:
            conn.close()
        raise
    return conn


def connect_readonly(path: Path) -> sqlite3.Connection:
    """A connection that only reads, also where nothing can be written (a full disk, a read-only home).

    Tries a read-only open first, then an immutable one (which needs no ``-shm`` file; it does
    not see a write another process has not checkpointed yet).
    """
    if not path.exists():
        raise DatabaseError(f"there is no monkey database at {path} yet")
    last: BaseException | None = None
    for query in ("mode=ro", "immutable=1"):
        conn = None
        try:
            conn = sqlite3.connect(
                f"file:{path}?{query}", uri=True, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None
            )
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            check_file(conn, path)
            return conn
        except sqlite3.Error as exc:
            if conn is not None:
                conn.close()
            last = exc
        except DatabaseError:
            if conn is not None:
                conn.close()
            raise
    raise DatabaseError(f"cannot read the monkey database: {explain(last or OSError(), path)}")


def check_file(conn: sqlite3.Connection, path: Path) -> None:
    """Refuse a file from a newer monkey, and (once per process and file) a damaged one."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > FILE_SCHEMA:
        raise DatabaseError(
            f"the monkey database {path} was written by a newer monkey (file schema {version}, this monkey "
            f"knows {FILE_SCHEMA}); upgrade monkey to use it; nothing was read or written"
        )
    key = str(path.resolve())
    if key in _checked:
        return
    rows = conn.execute("PRAGMA quick_check").fetchall()
    if [tuple(r) for r in rows] != [("ok",)]:
        first = "; ".join(str(r[0]) for r in rows[:3])
        raise DatabaseError(
            f"the monkey database {path} is damaged (quick_check: {first}); it was left as "
            "it is and nothing was written (move it away to start afresh)"
        )
    _checked.add(key)


def migrate_version(conn: sqlite3.Connection, component: str) -> int:
    """The version of ``component``'s tables in the file (0 when it has none), without changing anything."""
    try:
        row = conn.execute("SELECT version FROM schema_migrations WHERE component = ?", (component,)).fetchone()
    except sqlite3.OperationalError:  # no schema_migrations table yet
        return 0
    return row[0] if row else 0


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
                row = conn.execute("SELECT version FROM schema_migrations WHERE component = ?", (component,)).fetchone()
                version = row[0] if row else 0
                if version > len(migrations):
                    raise DatabaseError(
                        f"the monkey database{where} was written by a newer monkey "
                        f"({component} schema {version}, this monkey knows {len(migrations)}); "
                        "upgrade monkey to use it"
                    )
                if version == len(migrations):
                    if conn.execute("PRAGMA user_version").fetchone()[0] < FILE_SCHEMA:
                        conn.execute(f"PRAGMA user_version = {FILE_SCHEMA}")
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
    except sqlite3.Error as exc:
        raise DatabaseError(f"cannot prepare the monkey database: {explain(exc, Path(path or 'monkey.db'))}") from None
