"""The store as an event sink: every event of one session, written in short batches.

:meth:`Recorder.add` (also the sink call ``recorder(event)``) numbers, hashes and buffers
one event and follows it in the conversation; :meth:`Recorder.flush` writes the buffer,
the new conversation nodes and the session's totals in one transaction.

:meth:`Recorder.keep` is the one rule every driver follows before it shows an event
(durable before visible): it returns the events a sink may show, and every one of them
but the streaming deltas (:data:`STREAMING`) is committed by then, so ``kill -9`` can only
lose text a sink showed while it streamed, and that text is stored whole with its
``message_completed``. Deltas are buffered and written with the next event that is not
one, in the background every :data:`BATCH` deltas, or :data:`MAX_DELAY` seconds after the
last write. When the driver has more events ready at once, ``keep`` holds them and
commits the burst in one transaction before handing it back (group commit). The commits of
:data:`DURABLE` events are also synced to the disk (they survive a power cut); the others
reach the operating system, which is what a killed process needs.

A failed write (read-only file, full disk, damaged database) makes the recorder
:attr:`~Recorder.failed`: what was written stays, and the driver stops the turn.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
from collections.abc import Callable
from typing import Any

import msgspec

from monkey import events as ev
from monkey.logs import log_events
from monkey.messages import Message
from monkey.store.chain import link
from monkey.store.conversation import Conversation, encode_message
from monkey.store.search import INDEXED, index_text
from monkey.store.store import Count, Restored, SessionStore, StoreError
from monkey.store.tally import TALLIED, Tally

__all__ = ["Recorder", "STREAMING", "DURABLE", "BATCH", "GROUP", "MAX_DELAY"]

STREAMING = frozenset({"text_delta", "thinking_delta"})
"""Event types a sink may show before they are stored (their text is stored whole with the
``message_completed`` that ends them); every other event is committed first."""
DURABLE = frozenset(
    "session_started turn_started iteration_started message_completed tool_started tool_result approval_resolved"
    " turn_completed context_compacted session_ended error mode_changed plan_saved stage_completed"
    " conversation_cleared".split()
)
"""Event types whose commit is synced to the disk (the rest are committed, not synced)."""
BATCH = 512
"""Buffered deltas that trigger a background write."""
GROUP = 2048
"""Events :meth:`Recorder.keep` holds for one commit when more are ready at once (a burst)."""
MAX_DELAY = 0.25
"""Seconds after which buffered deltas are written anyway."""

_FOLLOWED = frozenset(
    "session_started turn_started iteration_started message_completed tool_started tool_result turn_completed"
    " context_compacted conversation_cleared usage session_ended".split()
)
"""Event types that change the conversation or the session's totals."""
_encode = msgspec.json.Encoder().encode
"""Encodes an event exactly as :func:`monkey.events.encode` does (one call less per event)."""
_blake2b = hashlib.blake2b
_TAGS: dict[str, bytes] = {}

_INSERT_EVENT = "INSERT INTO events (session_id, seq, type, ts, data, hash, n) VALUES (?, ?, ?, ?, ?, ?, ?)"
_INSERT_DOC = "INSERT INTO search_docs (session_id, seq, turn, kind, text) VALUES (?, ?, ?, ?, ?)"
RUN_BYTES = 32 * 1024
"""Bytes of deltas at most in one row (a run longer than that goes on in the next row)."""
_INSERT_NODE = (
    "INSERT INTO nodes (session_id, seq, kind, in_context, tokens, event_seq, data, hash) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)


class Recorder:
    """Writes one session's events and conversation to the store.

    Args:
        store: the open store.
        session_id: the session; a new one, or the one ``restored`` holds.
        restored: the loaded session when resuming (the chains go on from its last rows).
        source: returns the agent's message list; the conversation is reconciled with it
            at the end of each turn, so a resumed session is exactly what the agent had.
        count: tokens of one message, stored with each node.
    """

    def __init__(
        self,
        store: SessionStore,
        session_id: str,
        *,
        restored: Restored | None = None,
        source: Callable[[], list[Message]] | None = None,
        count: Count | None = None,
        summaries: bool = True,
    ) -> None:
        self.store = store
        self._tally = Tally() if summaries else None
        """The summary rows ``monkey stats`` reads, written with the events (off only to measure their cost)."""
        self.session_id = session_id
        self.source = source
        self.conversation = Conversation(count=count or (lambda m: 0))
        self.failed: StoreError | None = None
        """The write error that stopped recording, if one did."""
        self._rows: list[tuple[Any, ...]] = []
        self._docs: list[tuple[Any, ...]] = []
        """Searchable text of the buffered events (``search_docs`` rows, see :mod:`monkey.store.search`)."""
        self._seq, self._hash = 0, b""
        self._node_hash = b""
        if restored is not None:
            self.conversation.nodes = list(restored.nodes)
            self.conversation.next_seq = restored.nodes_check.last_seq + 1
            self.conversation.summaries = set(restored.summaries)
            self.conversation.excluded = list(restored.dropped)
            self._seq, self._hash = restored.events_check.last_seq, restored.events_check.last_hash
            self._node_hash = restored.nodes_check.last_hash
        self._started: ev.SessionStarted | None = None
        self._title = ""
        self._turns = restored.info.turns if restored is not None else 0
        self._status = ""
        self._usage = [0, 0, 0.0]
        self._reconcile = restored is not None
        self._last_flush = time.monotonic()
        self._inflight: asyncio.Future[None] | None = None
        self._held: list[ev.Event] = []
        """Events added by :meth:`keep` that wait for one commit with the events after them."""
        self._writing: list[ev.Event] = []
        """Events of the batch :meth:`keep` is writing in the background (shown once it is committed)."""
        self._sync = False
        self.parent: str | None = None
        """The parent session of a sub-agent's session (its row's ``parent``)."""
        self.children: dict[str, Recorder] = {}
        """Recorders of the sub-agents' sessions (the whole tree), by session id: a sub-agent's events
        come in this session's stream with their own session id and are written to their session,
        in the same transactions as this one's."""

    @property
    def events(self) -> int:
        """Events numbered so far (the session's total)."""
        return self._seq

    @property
    def pending(self) -> int:
        """Events buffered, not yet written."""
        return len(self._rows)

    def __call__(self, event: ev.Event) -> None:
        self.add(event)

    def add(self, event: ev.Event) -> None:
        """Number, hash and buffer one event, and follow it in the conversation (a sub-agent's
        event in its own session's records)."""
        if self.failed is not None:
            return
        if isinstance(event, ev.SubagentStarted):
            self._adopt(event)
        sid = event.session_id
        if sid != self.session_id and sid and (child := self.children.get(sid)) is not None:
            child._add(event)  # noqa: SLF001 - a Recorder of this tree
            return
        self._add(event)

    def _add(self, event: ev.Event) -> None:
        data = _encode(event)
        kind: str = event.__struct_config__.tag  # type: ignore[assignment]
        seq = self._seq = self._seq + 1
        tag = _TAGS.get(kind) or _TAGS.setdefault(kind, kind.encode() + b"\0")
        # link(prev, seq, kind, data), inlined: this runs for every event
        self._hash = _blake2b(b"".join((self._hash, seq.to_bytes(8, "big"), tag, data)), digest_size=16).digest()
        self._rows.append((self.session_id, seq, kind, event.ts, data, self._hash))
        if kind in _FOLLOWED:
            self._follow(event)
        if kind in INDEXED:
            self._docs.append((self.session_id, seq, self._turns, kind, index_text(event)))
        if kind in TALLIED and self._tally is not None:
            self._tally.add(event, kind)

    def _adopt(self, started: ev.SubagentStarted) -> None:
        """Records for the session of the sub-agent ``started`` announces, a child of its session."""
        child = Recorder(self.store, started.child_session_id, summaries=self._tally is not None)
        child.parent = started.session_id
        self.children[started.child_session_id] = child

    def rename(self, title: str) -> None:
        """Title the session ``title`` (what ``/rename`` says; the store keeps a title once set)."""
        self._title = title

    def name(self, text: str) -> None:
        """Title the session from ``text`` unless it has a title already: what the person typed
        (``@path`` unexpanded, ``/command`` rather than the prompt it sent) when the front end
        says it before the turn starts, else the first turn's prompt."""
        if not self._title:
            self._title = " ".join(text.split())[:100]

    async def keep(self, event: ev.Event, *, more: bool = False) -> list[ev.Event]:
        """Add ``event`` and return the events a sink may show now (see :meth:`_keep`); each is
        logged as it is handed back (:func:`monkey.logs.log_events`)."""
        ready = await self._keep(event, more=more)
        if ready:
            log_events(ready)
        return ready

    async def _keep(self, event: ev.Event, *, more: bool = False) -> list[ev.Event]:
        """Add ``event`` and return the events a sink may show now, in order: stored, except
        streaming deltas (see :data:`STREAMING`), which may be shown first.

        ``more``: the driver has further events ready at once. Then an event that must be
        committed is held (and so is what follows it) and the burst is written in one
        transaction of at most :data:`GROUP` events, in the background while the next batch
        is taken in; the held events come back, committed, from a later call (at the latest
        the first one without ``more``). A failed write sets :attr:`failed` and returns no
        event (none may be shown that was not stored; the driver tells it and stops the turn);
        once failed, each event comes back at once, unsaved.
        """
        if self.failed is not None:
            return [event]
        self.add(event)
        kind = event.type
        if kind in STREAMING and not self._held and not self._writing:  # nothing waits before it
            if len(self._rows) >= BATCH or time.monotonic() - self._last_flush >= MAX_DELAY:
                await self._flush_quietly(wait=False)
            return [event] if self.failed is None else []
        self._held.append(event)
        if kind in DURABLE:
            self._sync = True
        if more and len(self._held) < GROUP:
            return []
        ready, self._writing = self._writing, []
        sync, self._sync = self._sync, False
        if more:  # a full batch: write it while the next one comes in; show the one written before
            await self._flush_quietly(wait=False, sync=sync)  # waits for the previous write first
            self._writing, self._held = self._held, []
            return ready if self.failed is None else []
        ready += self._held
        self._held = []
        await self._flush_quietly(sync=sync)
        return ready if self.failed is None else []

    async def _flush_quietly(self, *, wait: bool = True, sync: bool = False) -> None:
        try:
            await self.flush(wait=wait, sync=sync)
        except StoreError:
            pass  # :attr:`failed` says it

    def _follow(self, event: ev.Event) -> None:
        self.conversation.apply(event)
        match event:
            case ev.SessionStarted():
                self._started = event
                self._status = "active"
            case ev.TurnStarted():
                self._turns = max(self._turns, event.turn)
                self.name(event.prompt)
            case ev.Usage():
                self._usage[0] += event.input_tokens
                self._usage[1] += event.output_tokens
                self._usage[2] += event.cost_usd
            case ev.TurnCompleted():
                self._reconcile = True  # the turn is over: the agent's list is final
            case ev.SessionEnded():
                self._status = event.reason
            case _:
                pass

    def reconcile(self) -> None:
        """Make the next flush bring the stored conversation in line with the agent's list."""
        self._reconcile = True

    async def flush(self, *, wait: bool = True, sync: bool = False) -> None:
        """Write what is buffered in one transaction; raises :class:`StoreError` (and stays failed).

        With ``wait=False`` the write runs in the background while more events arrive (one
        write at a time, in order); the next flush waits for it and reports its failure.
        ``sync`` also syncs the commit to the disk.
        """
        if self._inflight is not None:
            task, self._inflight = self._inflight, None
            await task
        if self.failed is not None:
            raise self.failed
        statements = self._prepare()
        if statements is None:
            return
        if wait:
            await self._write(statements, sync)
        else:
            self._inflight = asyncio.ensure_future(self._write(statements, sync))

    async def _write(self, statements: list[tuple[str, Any, bool]], sync: bool = False) -> None:
        try:
            await self.store.write(statements, doing="save the session", sync=sync)
        except StoreError as exc:
            self.failed = exc
            raise

    def _prepare(self) -> list[tuple[str, Any, bool]] | None:
        """The statements that write the buffer; the buffer and totals start afresh."""
        if self._reconcile and self.source is not None:
            self.conversation.reconcile(self.source())
        self._reconcile = False
        nodes, excluded = self.conversation.take()
        children = [st for child in self.children.values() if (st := child._prepare())]
        if not (self._rows or nodes or excluded or self._started):
            return [st for group in children for st in group] or None
        sid = self.session_id
        rows, self._rows = self._rows, []
        docs, self._docs = self._docs, []
        out = set(excluded)
        node_rows = []
        h = self._node_hash
        for node in nodes:
            data = encode_message(node.message)
            h = link(h, node.seq, node.kind, data)
            node_rows.append((sid, node.seq, node.kind, 0 if node.seq in out else 1, node.tokens, self._seq, data, h))
        now = time.time()
        statements: list[tuple[str, Any, bool]] = []
        if self._started is not None:
            s = self._started
            statements.append(
                (
                    "INSERT INTO sessions (id, workspace, backend, model, created, updated, status, pid, parent) "
                    "VALUES (?, ?, ?, ?, ?, ?, 'active', ?, ?) ON CONFLICT(id) DO UPDATE SET "
                    "status = 'active', pid = excluded.pid, backend = excluded.backend, model = excluded.model, "
                    "updated = excluded.updated",
                    (sid, s.workspace, s.backend, s.model, s.ts, now, os.getpid(), self.parent),
                    False,
                )
            )
        if rows:
            statements.append((_INSERT_EVENT, _runs(rows), True))
        if docs:
            statements.append((_INSERT_DOC, docs, True))
        if node_rows:
            statements.append((_INSERT_NODE, node_rows, True))
        if excluded:
            statements.append(
                (
                    "UPDATE nodes SET in_context = 0 WHERE session_id = ? AND seq = ?",
                    [(sid, seq) for seq in excluded],
                    True,
                )
            )
        statements.append(
            (
                "UPDATE sessions SET updated = ?, events = ?, turns = ?, "
                "title = CASE WHEN title = '' THEN ? ELSE title END, status = CASE WHEN ? = '' THEN status ELSE ? END, "
                "input_tokens = input_tokens + ?, output_tokens = output_tokens + ?, cost_usd = cost_usd + ? "
                "WHERE id = ?",
                (now, self._seq, self._turns, self._title, self._status, self._status, *self._usage, sid),
                False,
            )
        )
        if self._tally is not None:
            statements += self._tally.statements(sid)
        self._node_hash = h
        self._started = None
        self._status = ""
        self._usage = [0, 0, 0.0]
        self._last_flush = time.monotonic()
        return statements + [st for group in children for st in group]

    async def close(self) -> None:
        """Write what is left and release the session (another process may resume it)."""
        if self.failed is None:
            try:
                await self.flush()
            except StoreError:
                pass
        try:
            await self.store.write(
                [
                    ("UPDATE sessions SET pid = 0 WHERE id = ? AND pid = ?", (sid, os.getpid()), False)
                    for sid in (self.session_id, *self.children)
                ],
                doing="release the session",
            )
        except StoreError:
            pass


def _runs(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The rows to insert: each run of consecutive deltas of one type (:data:`STREAMING`) made
    one row of ``n`` events, up to :data:`RUN_BYTES` (see :mod:`monkey.store.schema`)."""
    out: list[tuple[Any, ...]] = []
    i, end = 0, len(rows)
    while i < end:
        first = rows[i]
        kind = first[2]
        j = i + 1
        if kind in STREAMING:
            size = len(first[4])
            while j < end and rows[j][2] == kind and size + len(rows[j][4]) < RUN_BYTES:
                size += len(rows[j][4]) + 1
                j += 1
        if j == i + 1:
            out.append((*first, 1))
        else:
            last = rows[j - 1]
            out.append((first[0], last[1], kind, first[3], b"\n".join([r[4] for r in rows[i:j]]), last[5], j - i))
        i = j
    return out
