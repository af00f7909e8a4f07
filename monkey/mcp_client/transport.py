"""The stdio transport: an MCP server as a child of monkey, speaking JSON lines.

Started like every child of monkey (:func:`monkey.process.spawn`: its own process group, the
parent-death signal, the ``MONKEY_CHILD`` tag, so it dies with monkey however monkey ends),
with the scrubbed environment plus only the variables its definition names. Its stderr goes
to a log file in the monkey home (the last lines are told when it fails). The SDK's
:class:`mcp.ClientSession` reads and writes the two memory streams this yields.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

from monkey.process import scrub_env, spawn, stop_group
from monkey.tools.child_env import for_child

__all__ = ["stdio_transport", "child_env", "MAX_LINE", "Exited"]

MAX_LINE = 64 << 20
"""Bytes one message from a server may have; a longer one is an error, the connection goes on."""


class Exited:
    """How the server process ended (set when its stdout closed)."""

    def __init__(self) -> None:
        self.event = asyncio.Event()
        self.returncode: int | None = None


def child_env(extra: dict[str, str], workspace: Path) -> dict[str, str]:
    """The scrubbed environment monkey's children get, and the variables the definition names."""
    env = for_child(scrub_env(os.environ), workspace)
    env.update(extra)
    return env


@asynccontextmanager
async def stdio_transport(
    argv: list[str],
    *,
    env: dict[str, str],
    cwd: Path,
    log: Path,
    exited: Exited,
    cap: tuple[int, Callable[[], Path]] | None = None,
) -> AsyncIterator[Any]:
    """Start ``argv`` and yield ``(read_stream, write_stream)`` for the SDK; stop it on exit.

    ``cap``: the result limit and where a cut string is saved; a message much longer than the
    limit has its long strings cut before the SDK reads it (:func:`cut_long_strings`).

    Raises:
        OSError: the program cannot be started.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as errlog:
        proc = await spawn(
            argv, env=env, cwd=cwd, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=errlog
        )
    assert proc.stdin is not None and proc.stdout is not None
    stdout, stdin = proc.stdout, proc.stdin
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](16)

    big = None if cap is None else max(4 * cap[0], 1 << 20)

    async def deliver(line: bytearray) -> None:
        try:
            if big is not None and cap is not None and len(line) > big:
                import msgspec

                from monkey.mcp_client.results import cut_long_strings

                try:  # msgspec reads the bytes as they are (json.loads would decode a str copy first)
                    raw = msgspec.json.decode(line)
                except msgspec.DecodeError as exc:
                    raise ValueError(f"a message from the server is not JSON: {exc}") from None
                line.clear()  # only the parsed message is kept, and its long strings only until cut
                cut_long_strings(raw, *cap)
                message = types.jsonrpc_message_adapter.validate_python(raw, by_name=False)
            else:
                message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValueError as exc:
            await read_send.send(exc)
            return
        await read_send.send(SessionMessage(message))

    async def reader() -> None:
        buffer = bytearray()
        skipping = False
        try:
            while chunk := await stdout.read(1 << 16):
                start = 0
                while (end := chunk.find(b"\n", start)) != -1:
                    if not skipping:
                        buffer += chunk[start:end]
                        if buffer.strip():
                            await deliver(buffer)
                    buffer.clear()
                    skipping = False
                    start = end + 1
                if not skipping:
                    buffer += chunk[start:]
                    if len(buffer) > MAX_LINE:
                        buffer.clear()
                        skipping = True
                        await read_send.send(
                            ValueError(f"a message from the server is longer than {MAX_LINE >> 20} MB")
                        )
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        finally:
            exited.returncode = await _returncode(proc)
            exited.event.set()
            read_send.close()

    async def writer() -> None:
        try:
            async for message in write_recv:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
                stdin.write(data)
                await stdin.drain()
        except (ConnectionError, OSError, anyio.ClosedResourceError):
            read_send.close()

    tasks = [asyncio.create_task(reader()), asyncio.create_task(writer())]
    try:
        yield read_recv, write_send
    finally:
        with anyio.CancelScope(shield=True):
            write_send.close()
            stdin.close()
            try:
                await asyncio.wait_for(asyncio.shield(proc.wait()), 2.0)
            except (TimeoutError, asyncio.CancelledError):
                pass
            await stop_group(proc, 2.0)  # what is left of its group, and strays that left it
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            read_recv.close()
            write_recv.close()


async def _returncode(proc: asyncio.subprocess.Process) -> int | None:
    try:
        return await asyncio.wait_for(asyncio.shield(proc.wait()), 1.0)
    except (TimeoutError, asyncio.CancelledError):
        return proc.returncode
