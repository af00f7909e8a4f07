"""Background processes: commands ``shell_execute`` started with ``background`` and left running.

A :class:`ProcessTable` belongs to one agent (its sub-agents share it) and holds what it started:
each :class:`BackgroundProcess` was spawned exactly like a foreground command
(:func:`monkey.process.spawn`: its own process group, the parent-death signal and the tag, so it
dies with monkey, ``kill -9`` included; the scrubbed environment; the sandbox), and its output is
read as it comes into an :class:`OutputLog`: the last ``keep`` characters at most (memory stays
bounded however much it prints), each line with what looks like a credential redacted, numbered
from the start so that ``process_output {since}`` gives what came after a point.

Stopping one (:meth:`ProcessTable.stop`) stops its process group and the processes of it that left
the group (:func:`monkey.process.stop_group`), also after the command itself has exited and left
children behind (a server that forks and exits). The session stops them all when it ends
(:meth:`ProcessTable.stop_all`), the ones the person kept aside.

The checkpoint of what a process changes is kept open by the agent (:mod:`monkey.agent.processes`)
in :attr:`BackgroundProcess.change`; this module never touches checkpoints.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from monkey import children
from monkey.process import group_alive, pump_pipe, redact, secret_values, stop_group, wait_exited
from monkey.tools.errors import ToolError

__all__ = ["BackgroundProcess", "OutputLog", "ProcessTable", "State"]

State = Literal["running", "exited", "stopped"]

_LINE_HOLD = 4096
"""Characters of an unfinished line held back before they are kept anyway (redaction works on lines)."""


class OutputLog:
    """What a background process printed: the last ``keep`` characters, numbered from its start.

    Text is redacted a line at a time (:func:`monkey.process.redact` with monkey's own secret
    values), so a credential split across two reads is still found; a line longer than
    ``_LINE_HOLD`` characters is kept in pieces.
    """

    def __init__(self, keep: int, secrets: frozenset[str] = frozenset()) -> None:
        self.keep = max(keep, 1)
        self._parts: deque[str] = deque()
        self._size = 0
        self.start = 0
        """The number of the first character still kept (characters before it were dropped)."""
        self._partial = ""
        self._secrets = secrets

    @property
    def end(self) -> int:
        """The number the next character will get (characters printed so far)."""
        return self.start + self._size

    @property
    def size(self) -> int:
        """Characters held now (never more than ``keep``)."""
        return self._size

    def add(self, text: str) -> None:
        """Take more output (decoded text)."""
        text = self._partial + text
        cut = text.rfind("\n") + 1
        if cut == 0 and len(text) >= _LINE_HOLD:
            cut = len(text)
        done, self._partial = text[:cut], text[cut:]
        if done:
            self._keep(redact(done, self._secrets))

    def flush(self) -> None:
        """The process ended: keep the unfinished last line too."""
        if self._partial:
            partial, self._partial = self._partial, ""
            self._keep(redact(partial, self._secrets))

    def _keep(self, text: str) -> None:
        if len(text) > self.keep:
            self.start += self._size + len(text) - self.keep
            self._parts.clear()
            self._parts.append(text[-self.keep :])
            self._size = self.keep
            return
        self._parts.append(text)
        self._size += len(text)
        while self._size > self.keep:
            over = self._size - self.keep
            first = self._parts[0]
            if len(first) <= over:
                self._parts.popleft()
                self._size -= len(first)
                self.start += len(first)
            else:
                self._parts[0] = first[over:]
                self._size -= over
                self.start += over

    def read(self, since: int, limit: int) -> tuple[str, int, int]:
        """The text from character ``since`` on, ``limit`` characters at most: ``(text, next, dropped)``,
        where ``next`` is the ``since`` of the following read and ``dropped`` the characters after
        ``since`` that are no longer kept."""
        since = max(since, 0)
        dropped = max(self.start - since, 0)
        begin = max(since, self.start)
        if begin >= self.end:
            return "", max(begin, self.end) if since <= self.end else self.end, dropped
        whole = "".join(self._parts)
        text = whole[begin - self.start : begin - self.start + max(limit, 1)]
        return text, begin + len(text), dropped


@dataclass
class BackgroundProcess:
    """One command running (or run) in the background."""

    id: str
    """``p1``, ``p2``...: what the model and the person name it by."""
    command: str
    call_id: str
    """The ``shell_execute`` call that started it."""
    session_id: str
    proc: asyncio.subprocess.Process
    output: OutputLog
    started: float = field(default_factory=time.time)
    state: State = "running"
    returncode: int | None = None
    ended: float | None = None
    kept: bool = False
    """The person keeps it past the end of the session (it still dies with monkey)."""
    gone: bool = False
    """It ended and nothing of its group is left: its pid is never signalled again (the system may reuse it)."""
    change: Any = None
    """The open checkpoint of what it changes (the agent's; see :mod:`monkey.agent.processes`)."""
    cleanup: Callable[[], None] = lambda: None
    """Undo what the sandbox prepared for it, once it has ended."""
    done: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once its output has been read to the end (the command and whatever held its output ended)."""
    _reader: asyncio.Task[None] | None = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    def status(self) -> str:
        """``running``, ``exited 0``, ``exited 1``, ``killed by SIGTERM``, ``stopped``..."""
        if self.state == "running":
            return "running"
        if self.state == "stopped":
            return "stopped"
        code = self.returncode
        if code is not None and code < 0:
            import signal

            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exited {code}"


class ProcessTable:
    """The background processes of one agent (and its sub-agents).

    Args:
        limit: Processes that may run at once.
        keep: Characters of output kept per process.
        grace: Seconds between SIGTERM and SIGKILL when one is stopped.
    """

    def __init__(self, *, limit: int = 8, keep: int = 200_000, grace: float = 2.0) -> None:
        self.limit = limit
        self.keep = keep
        self.grace = grace
        self._procs: dict[str, BackgroundProcess] = {}
        self._count = 0
        self.listeners: list[Callable[[], None]] = []
        """Called after a process starts, ends or is stopped (a front end's count)."""

    def _changed(self) -> None:
        for listener in list(self.listeners):
            with contextlib.suppress(Exception):
                listener()

    @property
    def running(self) -> int:
        """How many still run."""
        return sum(1 for p in self._procs.values() if p.state == "running")

    def all(self) -> list[BackgroundProcess]:
        """Every process of this table, in the order they started."""
        return list(self._procs.values())

    def get(self, ident: str) -> BackgroundProcess:
        """The process called ``ident`` (ToolError when there is none)."""
        found = self._procs.get(ident.strip())
        if found is None:
            known = ", ".join(self._procs) or "none"
            raise ToolError(f"no background process {ident!r}; known: {known}")
        return found

    def room(self) -> None:
        """ToolError when ``limit`` processes already run."""
        if self.running >= self.limit:
            raise ToolError(
                f"{self.running} background processes already run (the limit is {self.limit}): "
                "stop one with process_stop first"
            )

    def add(
        self,
        proc: asyncio.subprocess.Process,
        *,
        command: str,
        call_id: str,
        session_id: str,
        cleanup: Callable[[], None] = lambda: None,
    ) -> BackgroundProcess:
        """Take a process just spawned (stdout and stderr piped, stdin closed) and read its output."""
        self._trim()
        self._count += 1
        entry = BackgroundProcess(
            id=f"p{self._count}",
            command=command,
            call_id=call_id,
            session_id=session_id,
            proc=proc,
            output=OutputLog(self.keep, secret_values()),
            cleanup=cleanup,
        )
        self._procs[entry.id] = entry
        entry._reader = asyncio.create_task(self._read(entry), name=f"monkey-process-{entry.id}")
        self._changed()
        return entry

    def _trim(self) -> None:
        """Forget the oldest ended processes (their output) past ``4 × limit`` in the table, so memory stays
        bounded however many a long session starts; one whose change is still open or that the person
        keeps stays."""
        ended = [
            p
            for p in self._procs.values()
            if p.state != "running" and p.done.is_set() and p.change is None and not p.kept
        ]
        for entry in ended[: max(len(self._procs) - 4 * self.limit + 1, 0)]:
            del self._procs[entry.id]

    async def _read(self, entry: BackgroundProcess) -> None:
        proc = entry.proc
        pumps = asyncio.gather(*(pump_pipe(stream, "", entry.output, _unseen) for stream in (proc.stdout, proc.stderr)))
        try:
            await wait_exited(proc, None)  # the command itself; what it left running may hold the pipes
            if entry.state == "running":
                entry.state = "exited"
            entry.returncode = proc.returncode
            entry.ended = entry.ended or time.time()
            self._changed()
            await pumps
        finally:
            if not pumps.done():
                pumps.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await pumps
            entry.output.flush()
            entry.returncode = proc.returncode
            if pumps.done() and not pumps.cancelled():  # nothing of it holds its output: the sandbox's part ends
                entry.cleanup()
                entry.cleanup = lambda: None
                tag = children.tag_of(proc.pid)
                if (
                    proc.returncode is not None
                    and not group_alive(proc.pid)
                    and not (tag and children.strays(tag, proc.pid))
                ):  # a daemon it left (setsid, no output) keeps it
                    entry.gone = True  # its pid may be another process's from now on: never signalled again
                    children.forget(proc.pid)
            entry.done.set()
            self._changed()

    async def stop(self, ident: str) -> BackgroundProcess:
        """Stop a process's group and the processes of it that left the group (SIGTERM, a grace period,
        SIGKILL), whether the command itself still runs or not."""
        entry = self.get(ident)
        await self._stop(entry)
        return entry

    async def _stop(self, entry: BackgroundProcess) -> None:
        if entry.state == "running":
            entry.state = "stopped"
            entry.ended = time.time()
        try:
            if not entry.gone:
                await stop_group(entry.proc, self.grace)
        finally:
            reader = entry._reader
            if reader is not None and not reader.done():
                # a process that left the group may still hold a pipe: stop reading it
                with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                    await asyncio.wait_for(asyncio.shield(reader), self.grace + 2.0)
                if not reader.done():
                    reader.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await reader
            entry.cleanup()
            entry.cleanup = lambda: None
            self._changed()

    async def stop_all(self, *, kept: bool = True) -> list[BackgroundProcess]:
        """Stop every process (``kept=False``: but the ones the person keeps); the ones stopped."""
        chosen = [p for p in self._procs.values() if kept or not p.kept]
        await asyncio.gather(*(self._stop(p) for p in chosen), return_exceptions=True)
        return chosen

    def keep_aside(self, ident: str, keep: bool = True) -> BackgroundProcess:
        """The person keeps ``ident`` running past the end of the session (or no longer)."""
        entry = self.get(ident)
        entry.kept = keep
        self._changed()
        return entry

    def forget(self, entries: list[BackgroundProcess]) -> None:
        """Drop ended processes from the table (after their session ended)."""
        for entry in entries:
            if entry.state != "running" and self._procs.get(entry.id) is entry:
                del self._procs[entry.id]
        self._changed()


def _unseen(name: str, text: str) -> None:
    """A background process's output is only kept (read with ``process_output``), not streamed."""
