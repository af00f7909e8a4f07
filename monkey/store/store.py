"""The session store: sessions, their events and their conversation in the shared SQLite file.

:meth:`SessionStore.open` upgrades the ``store`` tables (refusing a database from a newer
monkey, reporting a damaged one, never overwriting it), then works through aiosqlite in
WAL mode with a busy timeout and short ``BEGIN IMMEDIATE`` transactions, so several monkey
processes share the file without "database is locked".

A :class:`~monkey.store.recorder.Recorder` is the event sink of one session;
:meth:`SessionStore.load` rebuilds a session's conversation for ``--continue`` /
``--resume``, checking both hash chains and saying what it had to repair.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from monkey import events as ev
from monkey.db import (
    BUSY_TIMEOUT_MS,
    DatabaseError,
    connect,
    connect_readonly,
    db_path,
    explain,
    migrate,
    migrate_version,
)
from monkey.messages import INTERRUPTED, Message
from monkey.store.chain import ChainCheck, check_chain, unpack
from monkey.store.lock import lock_folder, session_locked
from monkey.store.conversation import NOT_RUN, Node, decode_message
from monkey.store.schema import COMPONENT, MIGRATIONS

__all__ = ["SessionStore", "SessionInfo", "Restored", "StoreError"]


def _needs_immutable(path: Path) -> bool:
    """Whether a read-only open needs ``immutable=1`` (it cannot make the ``-shm`` file it wants)."""
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return True
    return False


class StoreError(Exception):
    """The session store cannot do what was asked; the message says why, for a person."""


_SESSION_COLUMNS = (
    "id, workspace, title, backend, model, created, updated, status, parent, turns, events, "
    "input_tokens, output_tokens, cost_usd, pid"
)


@dataclass
class SessionInfo:
    """One row of ``sessions``."""

    id: str
    workspace: str
    title: str
    backend: str
    model: str
    created: float
    updated: float
    status: str
    """``active`` while a process writes it, then how it ended (``completed``, ``error`` ...)."""
    parent: str | None
    turns: int
    events: int
    input_tokens: int
    output_tokens: int
    cost_usd: float
    pid: int
    """The process that last wrote the session (0 once it let go); for people: the lock decides."""
    owned: bool = False
    """Whether a process holds the session's lock now (see :mod:`monkey.store.lock`)."""

    @property
    def state(self) -> str:
        """``status``, or ``interrupted`` for an active session that no process owns any more."""
        if self.status == "active" and not self.owned:
            return "interrupted"
        return self.status

    def to_dict(self) -> dict[str, Any]:
        """The row as JSON-ready data (``state`` included)."""
        out = {k: getattr(self, k) for k in _SESSION_COLUMNS.split(", ")}
        out["state"] = self.state
        return out


@dataclass
class Restored:
    """A session's conversation as rebuilt from the store."""

    info: SessionInfo
    messages: list[Message]
    """Exactly what the model is sent next (in-context nodes, repaired if needed)."""
    nodes: list[Node]
    """The stored in-context nodes that ``messages`` keeps, in order."""
    dropped: list[int] = field(default_factory=list)
    """Node numbers taken out of context by the repair (altered, unreadable, orphaned)."""
    summaries: set[str] = field(default_factory=set)
    events_check: ChainCheck = field(default_factory=ChainCheck)
    nodes_check: ChainCheck = field(default_factory=ChainCheck)
    problems: list[str] = field(default_factory=list)
    """What is damaged, one line each."""
    repairs: list[str] = field(default_factory=list)
    """What was done about it (or about an interrupted turn), one line each."""
    interrupted: list[tuple[str, str]] = field(default_factory=list)
    """``(call id, tool)`` of each call stored as started whose result was never stored: it is
    given to the model as 'interrupted: may have run' (see :data:`~monkey.messages.INTERRUPTED`)."""
    archived: dict[str, Message] = field(default_factory=dict)
    """Tool results out of context (compacted), by call id: ``memory_read`` still gives them back."""

    @property
    def damaged(self) -> bool:
        """Whether either chain is broken or a node could not be used."""
        return bool(self.problems)


def _late_results(event_rows: list[Any]) -> tuple[dict[str, Message], set[str]]:
    """Tool results of the last turn that are stored as events, by call id, and the calls of the
    last turn stored as started (``tool_started``)."""
    found: dict[str, Message] = {}
    started: set[str] = set()
    for _, kind, data, _ in reversed(event_rows):
        if kind == "turn_started":
            break
        if kind not in ("tool_result", "tool_started"):
            continue
        try:
            event = ev.decode(bytes(data) if not isinstance(data, str) else data)
        except ev.DecodeError:
            continue
        if isinstance(event, ev.ToolStarted):
            started.add(event.call_id)
        elif isinstance(event, ev.ToolResult) and event.call_id not in found:
            found[event.call_id] = Message(
                role="tool",
                tool_call_id=event.call_id,
                name=event.name,
                content=event.output,
                is_error=not event.ok,
                images=list(event.images),
            )
    return found, started


def _pair(
    messages: list[tuple[Node | None, Message]],
    repairs: list[str],
    late: dict[str, Message] | None = None,
    started: set[str] | None = None,
    interrupted: list[tuple[str, str]] | None = None,
) -> list[tuple[Node | None, Message]]:
    """Drop tool results without their call and give calls without a result one: for the last
    message, the result stored as an event if there is one (a kill came before its node was
    written), 'interrupted: may have run' for a call stored as started (noted in
    ``interrupted``), else a 'not run' one."""
    out: list[tuple[Node | None, Message]] = []
    open_calls: dict[str, Any] = {}
    order: list[Any] = []
    closed = orphans = recovered = 0
    cut: list[tuple[str, str]] = [] if interrupted is None else interrupted

    def close_group(last: bool = False) -> None:
        nonlocal closed, recovered
        for call in order:
            if call.id in open_calls:
                if last and late and call.id in late:
                    out.append((None, late[call.id]))
                    recovered += 1
                    continue
                if last and started and call.id in started:
                    out.append(
                        (
                            None,
                            Message(
                                role="tool",
                                tool_call_id=call.id,
                                name=call.name,
                                is_error=True,
                                content=f"{INTERRUPTED}: monkey was stopped while {call.name} ran, "
                                "before its result was recorded",
                            ),
                        )
                    )
                    cut.append((call.id, call.name))
                    continue
                out.append(
                    (None, Message(role="tool", tool_call_id=call.id, name=call.name, content=NOT_RUN, is_error=True))
                )
                closed += 1
        open_calls.clear()
        order.clear()

    for node, message in messages:
        if message.role == "tool":
            if open_calls.pop(message.tool_call_id, None) is None:
                orphans += 1
                continue
            out.append((node, message))
            continue
        close_group()
        out.append((node, message))
        for call in message.tool_calls:
            open_calls[call.id] = call
            order.append(call)
    close_group(last=True)
    if recovered:
        repairs.append(f"{recovered} tool result(s) of the interrupted turn recovered from its events")
    if cut:
        repairs.append(
            f"{len(cut)} tool call(s) stopped while running, before their result was recorded, "
            f"given to the model as {INTERRUPTED!r}"
        )
    if closed:
        repairs.append(f"{closed} tool call(s) that never started marked {NOT_RUN!r}")
    if orphans:
        repairs.append(f"{orphans} tool result(s) whose call was lost left out")
    return out


def _delete(ids: list[str]) -> list[tuple[str, Any, bool]]:
    """Statements that delete sessions with their events, nodes and summary rows."""
    params = [(i,) for i in ids]
    return [
        (f"DELETE FROM {table} WHERE {key} = ?", params, True)
        for table, key in (
            ("events", "session_id"),
            ("nodes", "session_id"),
            ("search_docs", "session_id"),
            ("session_links", "session_id"),
            ("stat_slots", "session_id"),
            ("stat_samples", "session_id"),
            ("control", "session_id"),
            ("sessions", "id"),
        )
    ]


class SessionStore:
    """The sessions in one database file."""

    def __init__(self, path: Path, conn: Any) -> None:
        self.path = path
        self.conn = conn
        """The aiosqlite connection (autocommit; transactions are explicit)."""
        self.lock = asyncio.Lock()
        """Held for each write transaction, so recorders sharing the connection never interleave."""
        self._synced = False
        """Whether commits are synced to the disk now (``PRAGMA synchronous``)."""

    # -- opening -----------------------------------------------------------------------

    @classmethod
    async def open(cls, path: Path | None = None, *, readonly: bool = False) -> SessionStore:
        """Open (creating or upgrading) the store in ``path``, default the monkey home's database.

        ``readonly``: for commands that only read; when the file cannot be written (a full
        disk, a read-only home) it is read as it is, without upgrading it.
        """
        import aiosqlite

        if path is None:
            from monkey.config import monkey_home

            path = db_path(monkey_home())
        target = str(path)
        try:
            sync = connect(path)
            try:
                migrate(sync, COMPONENT, MIGRATIONS, path=path)
            finally:
                sync.close()
        except DatabaseError as exc:
            if not readonly or "newer monkey" in str(exc) or "damaged" in str(exc):
                raise StoreError(str(exc)) from None
            try:  # a read command on a file nothing can be written to: read it as it is
                sync = connect_readonly(path)
                try:
                    version = migrate_version(sync, COMPONENT)
                finally:
                    sync.close()
            except DatabaseError as again:
                raise StoreError(str(again)) from None
            if version != len(MIGRATIONS):
                raise StoreError(f"{exc}; and it cannot be read as it is (store schema {version})") from None
            immutable = "immutable=1" if _needs_immutable(path) else "mode=ro"
            target = f"file:{path}?{immutable}"
        except OSError as exc:
            raise StoreError(f"cannot open the monkey database {path}: {exc.strerror or exc}") from None
        try:
            conn = await aiosqlite.connect(
                target, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, uri=target.startswith("file:")
            )
            await conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            await conn.execute("PRAGMA synchronous = NORMAL")
            # the store deletes a session's rows itself (see _delete): no per-row foreign-key checks
            await conn.execute("PRAGMA foreign_keys = OFF")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the monkey database {path}: {exc}") from None
        return cls(path, conn)

    async def close(self) -> None:
        """Close the connection."""
        await self.conn.close()

    async def __aenter__(self) -> SessionStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def error(self, exc: BaseException, doing: str) -> StoreError:
        """A clear :class:`StoreError` for an sqlite failure while ``doing`` something."""
        return StoreError(f"cannot {doing}: {explain(exc, self.path)}")

    async def fetchall(self, sql: str, params: tuple[Any, ...] = (), *, doing: str = "read sessions") -> list[Any]:
        """Rows of a query; sqlite failures become :class:`StoreError`."""
        try:
            async with self.conn.execute(sql, params) as cur:
                return list(await cur.fetchall())
        except sqlite3.Error as exc:
            raise self.error(exc, doing) from None

    async def write(self, statements: list[tuple[str, Any, bool]], *, doing: str, sync: bool = False) -> None:
        """Run ``(sql, params, many)`` statements in one ``BEGIN IMMEDIATE`` transaction.

        Every commit reaches the operating system (it survives the process being killed);
        with ``sync`` it is also synced to the disk (it survives a power cut).
        The transaction runs whole on the connection's own thread: the write lock is never held
        while this process's event loop runs, so a synchronous connection of this process that
        waits for the lock on the loop (the checkpoint journal) cannot wait out the busy timeout.
        """
        pragma = f"PRAGMA synchronous = {'FULL' if sync else 'NORMAL'}" if sync != self._synced else ""

        def transaction(conn: sqlite3.Connection) -> None:
            if pragma:
                conn.execute(pragma)
            conn.execute("BEGIN IMMEDIATE")
            try:
                for sql, params, many in statements:
                    if many:
                        conn.executemany(sql, params)
                    else:
                        conn.execute(sql, params)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

        async with self.lock:
            try:
                await _on_connection_thread(self.conn, transaction)
            except sqlite3.Error as exc:
                raise self.error(exc, doing) from None
            self._synced = sync

    # -- sessions ----------------------------------------------------------------------

    @property
    def locks(self) -> Path:
        """The folder of the session lock files (see :mod:`monkey.store.lock`)."""
        return lock_folder(self.path)

    def _info(self, row: Any) -> SessionInfo:
        info = SessionInfo(*row)
        if info.status == "active":
            info.owned = session_locked(self.locks, info.id)
        return info

    async def list_sessions(self, workspace: str | None = None, *, limit: int | None = None) -> list[SessionInfo]:
        """Sessions a person started (not sub-agents'), most recently updated first; only ``workspace``'s when given."""
        sql = f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE parent IS NULL"
        params: tuple[Any, ...] = ()
        if workspace is not None:
            sql += " AND workspace = ?"
            params = (workspace,)
        sql += " ORDER BY updated DESC, id DESC"
        if limit:
            sql += f" LIMIT {int(limit)}"
        return [self._info(row) for row in await self.fetchall(sql, params)]

    async def children(self, session_id: str) -> list[SessionInfo]:
        """The sub-agents' sessions ``session_id`` started, oldest first."""
        rows = await self.fetchall(
            f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE parent = ? ORDER BY created, id", (session_id,)
        )
        return [self._info(row) for row in rows]

    async def get(self, session_id: str) -> SessionInfo | None:
        """One session by its exact id."""
        rows = await self.fetchall(f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,))
        return self._info(rows[0]) if rows else None

    async def find(self, ref: str) -> SessionInfo:
        """A session by id or unique id prefix; :class:`StoreError` when none or several match."""
        found = await self.get(ref)
        if found is not None:
            return found
        like = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        rows = await self.fetchall(
            f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id LIKE ? ESCAPE '\\' ORDER BY updated DESC LIMIT 6",
            (like,),
        )
        if not rows:
            raise StoreError(f"no session {ref!r} (monkey sessions list --all shows them)")
        if len(rows) > 1:
            ids = ", ".join(r[0] for r in rows[:5])
            raise StoreError(f"{ref!r} matches several sessions ({ids}); give more of the id")
        return self._info(rows[0])

    async def latest(self, workspace: str) -> SessionInfo | None:
        """The most recently updated session of ``workspace``."""
        found = await self.list_sessions(workspace, limit=1)
        return found[0] if found else None

    async def event_lines(self, session_id: str, types: tuple[str, ...] = ()) -> list[bytes]:
        """The session's events as stored: the JSON objects ``stream-json`` printed, in order.

        ``types`` keeps only events of those types (all of them when empty).
        """
        if not types:
            rows = await self.fetchall("SELECT data, n FROM events WHERE session_id = ? ORDER BY seq", (session_id,))
        else:
            marks = ", ".join("?" * len(types))
            rows = await self.fetchall(
                f"SELECT data, n FROM events WHERE session_id = ? AND type IN ({marks}) ORDER BY seq",
                (session_id, *types),
            )
        out: list[bytes] = []
        for data, n in rows:
            if n == 1:
                out.append(bytes(data))
            else:  # a run of deltas (see monkey.store.schema)
                out += bytes(data).split(b"\n")
        return out

    async def rename(self, session_id: str, title: str) -> None:
        """Give a session a title of its own (it replaces the first prompt's)."""
        await self.write(
            [("UPDATE sessions SET title = ? WHERE id = ?", (title, session_id), False)], doing="rename the session"
        )

    async def delete(self, session_id: str) -> bool:
        """Delete a session with its events and nodes, and its sub-agents' sessions; returns whether it existed."""
        exists = await self.get(session_id) is not None
        if exists:
            rows = await self.fetchall(
                "WITH RECURSIVE tree(id) AS (SELECT ? UNION SELECT s.id FROM sessions s JOIN tree t ON s.parent = t.id) "
                "SELECT id FROM tree",
                (session_id,),
            )
            await self.write(_delete([r[0] for r in rows]), doing="delete the session")
        return exists

    async def prune(self, older_than_days: float, *, now: float | None = None) -> list[str]:
        """Delete sessions not updated for ``older_than_days`` days (never one being written)."""
        cutoff = (now if now is not None else time.time()) - older_than_days * 86400
        rows = await self.fetchall("SELECT id, status FROM sessions WHERE updated < ?", (cutoff,))
        ids = [r[0] for r in rows if not (r[1] == "active" and session_locked(self.locks, r[0]))]
        if ids:
            await self.write(_delete(ids), doing="prune sessions")
        return ids

    # -- resume ------------------------------------------------------------------------

    async def load(self, session_id: str) -> Restored:
        """Rebuild a session's conversation, checking its chains; see :class:`Restored`."""
        info = await self.get(session_id)
        if info is None:
            raise StoreError(f"no session {session_id!r}")
        node_rows = await self.fetchall(
            "SELECT seq, kind, in_context, tokens, data, hash FROM nodes WHERE session_id = ? ORDER BY seq",
            (session_id,),
            doing="read the session",
        )
        event_rows = list(
            unpack(
                await self.fetchall(
                    "SELECT seq, type, data, hash, n FROM events WHERE session_id = ? ORDER BY seq",
                    (session_id,),
                    doing="read the session",
                )
            )
        )
        events_check = check_chain(event_rows)
        nodes_check = check_chain((r[0], r[1], r[4], r[5]) for r in node_rows)
        restored = Restored(info=info, messages=[], nodes=[], events_check=events_check, nodes_check=nodes_check)
        if info.events > events_check.last_seq:  # the chain cannot see rows cut off its end
            events_check.missing.append((events_check.last_seq + 1, info.events))
        if not events_check.ok:
            restored.problems.append(events_check.describe("events"))
        if not nodes_check.ok:
            restored.problems.append(nodes_check.describe("conversation nodes"))
        altered = set(nodes_check.altered)
        kept: list[tuple[Node | None, Message]] = []
        unreadable = 0
        for seq, kind, in_context, tokens, data, _ in node_rows:
            if kind == "summary":
                try:
                    restored.summaries.add(decode_message(data).content)
                except (msgspec.DecodeError, msgspec.ValidationError):
                    pass
            if not in_context:
                if kind == "tool" and seq not in altered:
                    try:
                        gone = decode_message(data)
                    except (msgspec.DecodeError, msgspec.ValidationError):
                        continue
                    if gone.tool_call_id:
                        restored.archived[gone.tool_call_id] = gone
                continue
            if seq in altered:
                restored.dropped.append(seq)
                continue
            try:
                message = decode_message(data)
            except (msgspec.DecodeError, msgspec.ValidationError):
                unreadable += 1
                restored.dropped.append(seq)
                continue
            kept.append((Node(seq, kind, message, tokens), message))
        if unreadable:
            restored.problems.append(f"{unreadable} conversation node(s) could not be read")
        if altered & {r[0] for r in node_rows if r[2]}:
            restored.repairs.append(f"{len(altered)} altered node(s) left out of the conversation")
        before = {id(node) for node, _ in kept if node is not None}
        late, started = _late_results(event_rows)
        paired = _pair(kept, restored.repairs, late, started, restored.interrupted)
        restored.messages = [m for _, m in paired]
        restored.nodes = [n for n, _ in paired if n is not None]
        lost = before - {id(node) for node in restored.nodes}
        restored.dropped += [n.seq for n, _ in kept if n is not None and id(n) in lost]
        return restored

    async def continue_point(self, session_id: str) -> tuple[int, bytes]:
        """``(last seq, last hash)`` of a session's events, to go on appending."""
        rows = await self.fetchall(
            "SELECT seq, hash FROM events WHERE session_id = ? ORDER BY seq DESC LIMIT 1", (session_id,)
        )
        return (rows[0][0], bytes(rows[0][1])) if rows else (0, b"")


Count = Callable[[Message], int]


async def _on_connection_thread(conn: Any, fn: Callable[[sqlite3.Connection], Any]) -> Any:
    """Run ``fn(sqlite3 connection)`` on aiosqlite's thread for ``conn``, in one piece.

    aiosqlite has no public call for this; ``_execute`` is how each of its own methods queues
    work on that thread, and ``_conn`` its sqlite3 connection (both in 0.20, the oldest allowed, to 0.22).
    """
    return await conn._execute(lambda: fn(conn._conn))
