"""The ACP SDK's message transport over a supervised agent process (newline-delimited JSON-RPC).

The SDK's :class:`acp.client.connection.ClientSideConnection` takes a message-level transport; this
one reads the child's stdout (:class:`~monkey.backends.supervise.AgentProcess`: its own process
group, the idle watchdog, the wall-clock cap) and writes its stdin. A line that is not a JSON-RPC
object or is longer than ``max_line`` stops the child and ends the stream with :attr:`error` set,
so the turn ends with a clear message (the SDK fails every request still waiting).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from monkey.backends.base import BackendError
from monkey.backends.supervise import AgentProcess

__all__ = ["ProcessTransport"]

_KNOWN_NOTIFICATIONS = frozenset({"session/update", "elicitation/complete"})
"""What an agent may notify a client of (anything else outside the ``_`` space is dropped, not logged as an error)."""


class ProcessTransport:
    """``acp``'s ``Transport`` protocol (send, receive, close) over one agent process."""

    def __init__(self, proc: AgentProcess, *, max_line: int, name: str) -> None:
        self.proc = proc
        self.max_line = max_line
        self.name = name
        self.error = ""
        """Why monkey stopped reading (a malformed or oversized line, the child could not start), or ``""``."""
        self._messages: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._buf = b""
        self._reader: asyncio.Task[None] | None = None
        self.ended = asyncio.Event()
        """Set when the child's output ended (it exited, was stopped, or monkey stopped reading)."""
        self.ignored = 0
        """Notifications of methods the protocol does not define, dropped."""
        self._spawned = asyncio.Event()
        proc.on_spawn = self._spawned.set

    def start(self) -> None:
        """Start the child and read its output in the background."""
        self._reader = asyncio.create_task(self._read(), name=f"acp-read-{self.name}")

    async def _read(self) -> None:
        chunks = self.proc.stdout()
        try:
            async for chunk in chunks:
                if not self._take(chunk):
                    break
        except BackendError as exc:
            self.error = exc.message
        finally:
            try:
                await asyncio.shield(chunks.aclose())  # the group is stopped
            finally:
                self.ended.set()
                self._messages.put_nowait(None)

    def _take(self, chunk: bytes) -> bool:
        lines = (self._buf + chunk).split(b"\n")
        self._buf = lines.pop()
        for raw in lines:
            if len(raw) > self.max_line:
                return self._fail(
                    f"{self.name} sent a message of {len(raw)} bytes, over monkey's limit of "
                    f"{self.max_line}; it was stopped"
                )
            line = raw.strip()
            if not line:
                continue
            try:
                message = json.loads(line)
            except ValueError:
                message = None
            if not isinstance(message, dict):
                shown = line[:120].decode("utf-8", "replace")
                return self._fail(
                    f"{self.name} sent something that is not a JSON-RPC message ({shown!r}); it was stopped"
                )
            if (
                "id" not in message
                and message.get("method") not in _KNOWN_NOTIFICATIONS
                and not str(message.get("method", "")).startswith("_")
            ):
                self.ignored += 1  # a vendor's notification outside the spec's "_" space (Qwen Code's
                continue  # qwen/notify/...): nothing to answer, nothing to show
            self._messages.put_nowait(message)
        if len(self._buf) > self.max_line:
            return self._fail(
                f"{self.name} sent a message over monkey's limit of {self.max_line} bytes; it was stopped"
            )
        return True

    def _fail(self, why: str) -> bool:
        self.error = why
        self._buf = b""
        return False

    async def send(self, message: dict[str, Any]) -> None:
        if not self._spawned.is_set():  # the first message: wait until the child runs (or could not start)
            waits = [asyncio.ensure_future(self._spawned.wait()), asyncio.ensure_future(self.ended.wait())]
            _, pending = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            for task in pending:
                task.cancel()
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        if not self.proc.send(data):
            raise ConnectionError(f"{self.name} is not running")

    async def receive(self) -> dict[str, Any] | None:
        return await self._messages.get()

    async def close(self) -> None:
        """Stop reading and stop the child (its whole group)."""
        reader = self._reader
        if reader is not None and not reader.done():
            self.proc.close_stdin()
            reader.cancel()
            try:
                await reader
            except asyncio.CancelledError:
                pass
