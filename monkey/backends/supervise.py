"""Running an external agent CLI (Claude Code, Codex) as a supervised child process.

The child runs in its own process group with a scrubbed environment; the prompt goes in
on stdin; stdout and stderr are read at the same time (a chatty stderr never blocks the
child); an idle watchdog stops a child that prints nothing for ``idle_timeout`` seconds
and a wall-clock cap stops one that runs too long (SIGTERM to the group, ``grace``
seconds, SIGKILL), together with its descendants that left the group, so a grandchild
holding stdout open cannot keep monkey waiting past the cap. Whatever happens, including the
caller being cancelled, the group is stopped before :meth:`AgentProcess.stdout` returns, and
the child dies with monkey (:func:`monkey.process.spawn`).
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from monkey.backends.base import BackendError
from monkey.process import OutputBuffer, scrub_env, signal_group, spawn, stop_group, wait_exited

__all__ = ["ChildSpec", "AgentProcess", "child_env", "check_version", "parse_version"]

_CHUNK = 1 << 16


def child_env(base: Mapping[str, str], explicit: Mapping[str, str]) -> dict[str, str]:
    """``base`` without credentials and endpoints (API keys, ``ANTHROPIC_*``, ``CLAUDE_*``,
    ``OTEL_*``...), plus the values monkey's config sets explicitly for this backend."""
    env = scrub_env(base)
    env.update({k: str(v) for k, v in explicit.items()})
    return env


@dataclass
class ChildSpec:
    """What to run and the limits it runs under."""

    argv: list[str]
    cwd: Path
    env: dict[str, str]
    stdin: bytes = b""
    keep_stdin: bool = False
    """Leave stdin open after ``stdin`` for :meth:`AgentProcess.send` (a conversation on stdio)."""
    idle_timeout: float = 600.0
    """Seconds without any output (stdout or stderr) before the child is stopped."""
    wall_timeout: float = 3600.0
    """Seconds the whole run may take."""
    grace: float = 2.0
    """Seconds between SIGTERM and SIGKILL."""
    stderr_limit: int = 64 * 1024
    """Characters of stderr kept (head and tail)."""
    name: str = "agent"
    """How the child is named in messages (``Claude Code``)."""


@dataclass
class AgentProcess:
    """One run of a child; iterate :meth:`stdout`, then read the outcome fields."""

    spec: ChildSpec
    returncode: int | None = None
    stopped: str = ""
    """Why monkey stopped the child (``idle``, ``wall``, ``cancelled``), or ``""``."""
    stderr_bytes: int = 0
    waiting: int = 0
    """Questions of the child's waiting for monkey's answer (an approval): the idle watchdog holds off."""
    on_spawn: Callable[[], None] | None = None
    """Called once the child runs (before any output): a conversation may then write to it."""
    wall_from: float | None = None
    """When the wall-clock cap counts from (None: the start); :meth:`rearm` sets it for a child kept across turns."""
    _stderr: OutputBuffer = field(init=False)
    _proc: asyncio.subprocess.Process | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self._stderr = OutputBuffer(self.spec.stderr_limit)

    @property
    def pid(self) -> int:
        """The child's process id (0 before it runs)."""
        return self._proc.pid if self._proc is not None else 0

    def send(self, data: bytes) -> bool:
        """Write ``data`` to the child's open stdin (``keep_stdin``) without waiting; False when it is gone.

        Not awaited on purpose: an answer written while the turn is being cancelled still reaches the
        pipe before the child is stopped (answers are small, far under a pipe's buffer).
        """
        stdin = self._proc.stdin if self._proc is not None else None
        if stdin is None or stdin.is_closing():
            return False
        try:
            stdin.write(data)
        except (BrokenPipeError, ConnectionResetError, RuntimeError):
            return False
        return True

    def rearm(self) -> None:
        """Count the wall-clock cap from now (a child that serves one turn after another: an ACP agent)."""
        self.wall_from = asyncio.get_running_loop().time()

    def close_stdin(self) -> None:
        """End the child's input (it finishes its work and exits)."""
        stdin = self._proc.stdin if self._proc is not None else None
        if stdin is not None and not stdin.is_closing():
            stdin.close()

    @property
    def stderr(self) -> str:
        """The child's stderr, capped to its head and tail."""
        return self._stderr.text()

    @property
    def drained(self) -> bool:
        """Whether the child's stdout was read to its end (its pipe closed), as it is after every run."""
        reader = self._proc.stdout if self._proc is not None else None
        return reader is not None and reader.at_eof()

    def failure(self) -> str:
        """What went wrong with the process itself, for a person, or ``""``."""
        name = self.spec.name
        if self.stopped == "idle":
            return f"{name} printed nothing for {self.spec.idle_timeout:g} s and was stopped"
        if self.stopped == "wall":
            return f"{name} ran longer than {self.spec.wall_timeout:g} s and was stopped"
        if self.returncode not in (0, None):
            code = self.returncode
            how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
            tail = self.stderr.strip()[-800:]
            return f"{name} {how}" + (f": {tail}" if tail else "")
        return ""

    async def stdout(self) -> AsyncGenerator[bytes, None]:
        """Start the child and yield its stdout as it arrives; the group is gone at the end."""
        spec = self.spec
        try:
            proc = await spawn(
                spec.argv,
                cwd=str(spec.cwd),
                env=spec.env,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                limit=_CHUNK,
            )
        except OSError as exc:
            raise BackendError(
                f"cannot start {spec.name} ({spec.argv[0]}): {exc.strerror or exc}", kind="invalid_request"
            ) from None
        self._proc = proc
        if self.on_spawn is not None:
            self.on_spawn()
        loop = asyncio.get_running_loop()
        started = loop.time()
        last = [started]
        tasks = [asyncio.create_task(self._feed(proc)), asyncio.create_task(self._drain_stderr(proc, last))]
        watchdog = asyncio.create_task(self._watch(proc, started, last))
        done = False
        try:
            assert proc.stdout is not None
            while chunk := await proc.stdout.read(_CHUNK):
                last[0] = loop.time()
                yield chunk
            if self.stopped and not watchdog.done():
                await watchdog  # it is stopping the group: let it finish (SIGKILL after the grace)
            await wait_exited(proc, spec.grace + 1)
            await stop_group(proc, spec.grace)  # a child that closed stdout but lingers, or what it left behind
            done = True
        finally:
            watchdog.cancel()
            if not done:
                self.stopped = self.stopped or "cancelled"
                try:
                    await asyncio.shield(stop_group(proc, spec.grace))
                except asyncio.CancelledError:
                    signal_group(proc.pid, signal.SIGKILL)
            await _discard(proc.stdout, spec.grace + 1)
            _, pending = await asyncio.wait(tasks, timeout=2.0)
            for task in pending:
                task.cancel()
            self.returncode = proc.returncode

    async def _feed(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdin is not None
        try:
            if self.spec.stdin:
                proc.stdin.write(self.spec.stdin)
                await proc.stdin.drain()
            if not self.spec.keep_stdin:
                proc.stdin.close()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the child exited without reading its prompt; its exit status says why

    async def _drain_stderr(self, proc: asyncio.subprocess.Process, last: list[float]) -> None:
        assert proc.stderr is not None
        loop = asyncio.get_running_loop()
        while chunk := await proc.stderr.read(_CHUNK):
            last[0] = loop.time()
            self.stderr_bytes += len(chunk)
            self._stderr.add(chunk.decode("utf-8", "replace"))

    async def _watch(self, proc: asyncio.subprocess.Process, started: float, last: list[float]) -> None:
        loop = asyncio.get_running_loop()
        spec = self.spec
        while True:
            now = loop.time()
            if self.waiting:
                last[0] = now  # silent because it waits for an answer (a person may take minutes)
            idle_left = last[0] + spec.idle_timeout - now
            wall_left = (self.wall_from or started) + spec.wall_timeout - now
            if idle_left <= 0 or wall_left <= 0:
                self.stopped = "idle" if idle_left <= 0 else "wall"
                await stop_group(proc, spec.grace)  # stdout closes, the reader ends
                return
            await asyncio.sleep(min(idle_left, wall_left, 1.0))


async def _discard(stream: asyncio.StreamReader | None, timeout: float) -> None:
    """Read what is left of a stopped child's stdout to its end: a reader left full (a line over
    the cap stops the reading) never sees the pipe close, so its transport stays open until it
    is collected after the event loop closed ("Event loop is closed" at exit)."""
    if stream is None:
        return

    async def drain() -> None:
        while await stream.read(_CHUNK):
            pass

    try:
        await asyncio.wait_for(drain(), timeout)
    except (TimeoutError, OSError, ValueError):
        pass


_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def parse_version(text: str) -> tuple[int, int, int] | None:
    """The first ``X.Y.Z`` in ``text``."""
    m = _VERSION.search(text)
    return (int(m[1]), int(m[2]), int(m[3])) if m else None


async def check_version(
    argv: list[str],
    *,
    name: str,
    minimum: tuple[int, int, int],
    below: tuple[int, int, int],
    env: Mapping[str, str] | None = None,
    timeout: float = 20.0,
) -> tuple[int, int, int]:
    """Run ``argv`` (``claude --version``) and refuse a version outside ``[minimum, below)``."""
    try:
        proc = await spawn(
            argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env=dict(env if env is not None else os.environ),
        )
    except OSError as exc:
        raise BackendError(
            f"cannot run {name} ({argv[0]}): {exc.strerror or exc}; is it installed and on PATH?",
            kind="invalid_request",
        ) from None
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        await stop_group(proc, 1.0)
        raise BackendError(f"`{' '.join(argv)}` did not answer within {timeout:g} s", kind="invalid_request") from None
    await stop_group(proc, 1.0)  # nothing it started stays behind
    text = out.decode("utf-8", "replace").strip()
    version = parse_version(text)
    if proc.returncode != 0 or version is None:
        raise BackendError(
            f"`{' '.join(argv)}` failed (status {proc.returncode}): {text[:300] or 'no output'}", kind="invalid_request"
        )
    if not minimum <= version < below:
        show = ".".join(map(str, version))
        raise BackendError(
            f"{name} {show} is not supported; monkey works with versions from {'.'.join(map(str, minimum))} "
            f"up to (not including) {'.'.join(map(str, below))}",
            kind="invalid_request",
        )
    return version
