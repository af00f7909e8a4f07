"""Child processes, for the tools and the backends alike: their group, output and environment.

Supervising a child process group: stream its output, cap it, stop the whole group. The
child is started by :func:`spawn`, in a session of its own so that its pid is the id of a
process group holding it and everything it starts, with the parent-death signal and a tag
(:mod:`monkey.children`), so it dies with monkey and its descendants that leave the group
are found. Stopping means SIGTERM to the group and to those strays, a grace period, then
SIGKILL; it happens on a timeout, on cancellation (before the
:class:`asyncio.CancelledError` goes on), and for processes left running in the background
after the command itself ended, so that no child outlives the call.

:func:`scrub_env` (the environment children get: the parent's without credentials),
:func:`hide_secrets`, :func:`redact` and their kin live in :mod:`monkey.credentials` and are
re-exported here.

``shell_execute`` (:mod:`monkey.tools.shell`) and the external agent CLIs
(:mod:`monkey.backends.supervise`) both run children this way; this module sits below both
and imports nothing of monkey but those two modules.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import contextvars
import os
import signal
import sys
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from monkey import children
from monkey.credentials import (
    REDACTED,
    hide_secrets,
    holds_credential,
    is_secret,
    redact,
    scrub_env,
    secret_values,
)

__all__ = [
    "REDACTED",
    "Finished",
    "OutputBuffer",
    "group_alive",
    "hide_secrets",
    "holds_credential",
    "is_secret",
    "redact",
    "run_supervised",
    "scrub_env",
    "secret_values",
    "signal_group",
    "spawn",
    "spawns_go_to",
    "stop_group",
    "wait_exited",
]

_on_spawn: contextvars.ContextVar[Callable[[int], None] | None] = contextvars.ContextVar(
    "monkey_on_spawn", default=None
)


@contextlib.contextmanager
def spawns_go_to(claim: Callable[[int], None]) -> Iterator[None]:
    """Within the block (this task and the tasks it starts), every child :func:`spawn` starts is
    handed to ``claim`` by pid as soon as it exists: the checkpoint of the call that runs it
    knows which process tree is that call's (two commands at once in one monkey)."""
    token = _on_spawn.set(claim)
    try:
        yield
    finally:
        _on_spawn.reset(token)


_CHUNK = 65536
_DRAIN_WAIT = 2.0
"""Seconds to wait for the output pipes to close once the group is gone."""
_POLL = 0.02


class OutputBuffer:
    """Output kept for the model: the head and the tail, with what was cut in between.

    Args:
        limit: Characters kept at most (half from the start, half from the end).
    """

    def __init__(self, limit: int) -> None:
        self.limit = max(limit, 2)
        self._head_limit = self.limit // 2
        self._tail_limit = self.limit - self._head_limit
        self._head: list[str] = []
        self._head_len = 0
        self._tail: deque[str] = deque()
        self._tail_len = 0
        self.total = 0
        """Characters seen in all."""

    def add(self, text: str) -> None:
        """Take one more piece of output."""
        self.total += len(text)
        room = self._head_limit - self._head_len
        if room > 0:
            self._head.append(text[:room])
            self._head_len += min(room, len(text))
            text = text[room:]
        if text:
            self._tail.append(text)
            self._tail_len += len(text)
            while self._tail and self._tail_len - len(self._tail[0]) >= self._tail_limit:
                self._tail_len -= len(self._tail.popleft())

    def text(self) -> str:
        """The kept output; a note says how many characters were cut from the middle."""
        head = "".join(self._head)
        tail = "".join(self._tail)
        if self.total <= self.limit:
            return head + tail
        tail = tail[-self._tail_limit :]
        cut = self.total - len(head) - len(tail)
        return f"{head}\n[... {cut} characters of output cut ...]\n{tail}"


def signal_group(pgid: int, sig: int) -> bool:
    """Send a signal to a process group; False when there is no such group."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def group_alive(pgid: int) -> bool:
    """Whether a process group still has a live (not zombie) member.

    The group is probed with signal 0 first. On Linux, when that finds members, the process
    table is read too, because zombies that nobody reaps (a container whose init does not
    reap orphans) still count for ``kill(0)``.
    """
    if not signal_group(pgid, 0):
        return False
    if sys.platform.startswith("linux") and os.path.isdir("/proc"):
        try:
            names = os.listdir("/proc")
        except OSError:
            names = []
        for name in names:
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as fh:
                    stat = fh.read()
            except OSError:
                continue
            fields = stat[stat.rfind(b")") + 2 :].split()
            if len(fields) > 2 and fields[2] == str(pgid).encode() and fields[0] not in (b"Z", b"X"):
                return True
        if names:
            return False
    return True


async def wait_exited(proc: asyncio.subprocess.Process, timeout: float | None) -> bool:
    """Wait until the process itself has exited, whether or not its pipes are still open.

    ``Process.wait()`` also waits for the pipes to close, which never happens while a
    background child holds them; the exit status is known earlier, so it is polled
    (quickly at first, then every 0.1 s) besides waiting.

    Returns:
        False when ``timeout`` seconds passed first.
    """
    waiter = asyncio.ensure_future(proc.wait())
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    delay = 0.005
    try:
        while proc.returncode is None:
            step = delay
            if deadline is not None:
                step = min(step, deadline - loop.time())
                if step <= 0:
                    return False
            await asyncio.wait({waiter}, timeout=step)
            delay = min(delay * 2, 0.1)
        return True
    finally:
        waiter.cancel()


async def spawn(
    argv: list[str], *, env: Mapping[str, str], before_exec: Callable[[], None] | None = None, **kwargs: Any
) -> asyncio.subprocess.Process:
    """Start a child the way every child of monkey starts (``asyncio.create_subprocess_exec``).

    In a session (and process group) of its own, with the parent-death signal (it dies when
    monkey dies, even by ``kill -9``) and ``MONKEY_CHILD`` set to a new tag in ``env`` (so
    its descendants are found wherever they go). ``before_exec`` runs in the child last,
    just before exec (the Landlock sandbox restricts the child there). ``kwargs`` go to
    ``create_subprocess_exec``. Cancelled once the child is forked, while asyncio still connects its
    pipes (asyncio would SIGKILL the child alone and forget it, not what it started), the child is
    registered and its group and strays stopped before the cancellation goes on.

    Raises:
        OSError: The program cannot be started.
    """
    tag = children.new_tag()
    setup = children.preexec()
    if before_exec is not None:
        die_with_us, then = setup, before_exec

        def setup() -> None:
            die_with_us()
            then()

    claim = _on_spawn.get()

    def adopt(proc: asyncio.subprocess.Process) -> None:
        children.register(proc.pid, tag)
        if claim is not None:
            claim(proc.pid)

    children.start_guardian()  # before the fork: a child never registered still dies with monkey, by its tag
    forked = False

    async def start() -> asyncio.subprocess.Process:
        nonlocal forked
        forked = True  # the fork happens in this step, before its first wait
        return await asyncio.create_subprocess_exec(
            *argv, env={**env, children.TAG_VAR: tag}, start_new_session=True, preexec_fn=setup, **kwargs
        )

    starting = asyncio.ensure_future(start())
    try:
        proc = await asyncio.shield(starting)
    except asyncio.CancelledError:
        if not forked:
            starting.cancel()  # it never ran: nothing was started
        else:
            await _stop_started(starting, adopt)
        raise
    finally:
        children.settled(tag)  # registered, or never will be
    adopt(proc)
    return proc


async def _stop_started(starting: asyncio.Future[Any], adopt: Callable[[Any], None]) -> None:
    """``spawn`` was cancelled after the fork: once started, the child is adopted and its group and strays
    stopped (SIGTERM, 2 s, SIGKILL); cancelled again meanwhile, they get SIGKILL once it has started."""
    try:
        proc = await asyncio.shield(starting)
    except asyncio.CancelledError:
        starting.add_done_callback(lambda task: _kill_started(task, adopt))
        raise
    except Exception:  # noqa: BLE001 - it could not be started: nothing to stop
        return
    adopt(proc)
    try:
        await asyncio.shield(stop_group(proc, 2.0))
    except asyncio.CancelledError:
        signal_group(proc.pid, signal.SIGKILL)  # the shielded stop goes on for its strays
        raise


def _kill_started(task: asyncio.Future[Any], adopt: Callable[[Any], None]) -> None:
    if not task.cancelled() and task.exception() is None:
        adopt(proc := task.result())
        signal_group(proc.pid, signal.SIGKILL)
        children.kill(_strays(proc), signal.SIGKILL)


def _strays(proc: asyncio.subprocess.Process) -> list[tuple[int, int]]:
    tag = children.tag_of(proc.pid)
    return children.strays(tag, proc.pid) if tag else []


async def stop_group(proc: asyncio.subprocess.Process, grace: float) -> None:
    """Stop the process group led by ``proc``, and its processes that left the group.

    SIGTERM, up to ``grace`` seconds, SIGKILL. Returns once no live member of the group and
    no stray is left (or SIGKILL was sent to them) and ``proc`` has been reaped (or a few
    seconds passed).
    """
    pgid = proc.pid
    strays = _strays(proc)
    if group_alive(pgid) and signal_group(pgid, signal.SIGTERM) or strays:
        signal_group(pgid, signal.SIGCONT)  # a stopped process must run to see SIGTERM
        children.kill(strays, signal.SIGTERM)
        children.kill(strays, signal.SIGCONT)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace
        while group_alive(pgid) or any(children.alive(*p) for p in strays):
            if loop.time() >= deadline:
                signal_group(pgid, signal.SIGKILL)
                children.kill(strays, signal.SIGKILL)
                break
            await asyncio.sleep(_POLL)
        for _ in range(3):  # a stray that forked on its way out: its child is a stray too
            more = [p for p in _strays(proc) if p not in strays]
            if not more:
                break
            children.kill(more, signal.SIGKILL)
            strays += more
    await wait_exited(proc, grace + _DRAIN_WAIT)
    if strays:
        await _reap(strays)
    if proc.returncode is not None:
        children.forget(proc.pid)


async def _reap(strays: list[tuple[int, int]]) -> None:
    """Reap the killed strays re-parented to monkey, waiting briefly for SIGKILL to land."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + _DRAIN_WAIT
    while any(children.alive(*p) for p in strays) and loop.time() < deadline:
        await asyncio.sleep(_POLL)
    children.reap(strays)


async def pump_pipe(
    stream: asyncio.StreamReader | None,
    name: str,
    out: Any,
    emit: Callable[[str, str], None],
) -> None:
    """Read one pipe to its end, decoding UTF-8 incrementally, keeping (``out.add``: an
    :class:`OutputBuffer`, a background process's log) and emitting text."""
    if stream is None:
        return
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    while True:
        chunk = await stream.read(_CHUNK)
        text = decoder.decode(chunk, final=not chunk)
        if text:
            out.add(text)
            emit(name, text)
        if not chunk:
            return


@dataclass
class Finished:
    """How a supervised process ended."""

    returncode: int | None
    """The exit status; negative for a signal, as in :mod:`subprocess`."""
    output: str
    """stdout and stderr as they arrived, capped."""
    timed_out: bool


async def run_supervised(
    proc: asyncio.subprocess.Process,
    *,
    timeout: float,
    grace: float,
    limit: int,
    emit: Callable[[str, str], None],
) -> Finished:
    """Wait for a process started in its own session, streaming and capping its output.

    Args:
        proc: The process, with stdout and stderr pipes, started with
            ``start_new_session=True``.
        timeout: Seconds before the group is stopped and the run counts as timed out.
        grace: Seconds between SIGTERM and SIGKILL.
        limit: Characters of output kept.
        emit: Called with ``(stream, text)`` for every piece of output as it arrives.

    Returns:
        The exit status and the kept output.

    Raises:
        asyncio.CancelledError: After the process group has been stopped.
    """
    out = OutputBuffer(limit)
    pumps = [
        asyncio.create_task(pump_pipe(proc.stdout, "stdout", out, emit)),
        asyncio.create_task(pump_pipe(proc.stderr, "stderr", out, emit)),
    ]
    stopped = False
    try:
        timed_out = not await wait_exited(proc, timeout)
        # On a timeout this stops the command; otherwise whatever it left in the background.
        await stop_group(proc, grace)
        stopped = True
        _, pending = await asyncio.wait(pumps, timeout=_DRAIN_WAIT)
        for task in pending:  # a process that left the group still holds a pipe
            task.cancel()
        for task in pumps:
            if task.done() and not task.cancelled() and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]
        return Finished(proc.returncode, out.text(), timed_out)
    except asyncio.CancelledError:
        if not stopped:
            try:
                await asyncio.shield(stop_group(proc, grace))
            except asyncio.CancelledError:
                signal_group(proc.pid, signal.SIGKILL)
            stopped = True
        raise
    finally:
        if not stopped:
            signal_group(proc.pid, signal.SIGKILL)
        for task in pumps:
            if not task.done():
                task.cancel()
