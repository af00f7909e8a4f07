"""``monkey serve`` over stdin/stdout, on the SDK's stdio transport, with two additions.

- stdin is read without a blocking thread (an asyncio pipe), so a signal ends the server at
  once instead of waiting for the client's next line; fd 0 points at the null device
  meanwhile (as the SDK does), and the SDK still diverts fd 1 to stderr so that nothing
  but the protocol reaches stdout.
- a line that is not JSON, or not a JSON-RPC message, gets a JSON-RPC error (``id: null``,
  parse error or invalid request) instead of silence, as JSON-RPC 2.0 asks.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

__all__ = ["run_stdio"]

LINE_LIMIT = 128 * 1024 * 1024
"""The longest request line read (a file_write of a large file is one line)."""


class _Lines:
    """The lines of a pipe, as the SDK's transport reads them (``async for line in stdin``)."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self.reader = reader

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        try:
            line = await self.reader.readline()
        except ValueError:  # longer than LINE_LIMIT: the rest of the line is dropped
            return "\0line too long\n"
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", "replace")


@asynccontextmanager
async def _stdin_pipe() -> AsyncIterator[_Lines | None]:
    """fd 0 as an asyncio stream (None when it cannot be one, e.g. a regular file: the SDK reads it)."""
    loop = asyncio.get_running_loop()
    try:
        private = os.dup(0)
    except OSError:
        yield None
        return
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    pipe = os.fdopen(private, "rb", buffering=0)
    try:
        transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
    except (ValueError, OSError):
        pipe.close()
        yield None
        return
    null = os.open(os.devnull, os.O_RDONLY)
    saved = os.dup(0)
    os.dup2(null, 0)
    os.close(null)
    try:
        yield _Lines(reader)
    finally:
        transport.close()
        with suppress(OSError):
            os.dup2(saved, 0)
        os.close(saved)


class _Answering:
    """The server's read stream; a line the transport could not read as a message is answered
    with a JSON-RPC error on ``write`` rather than dropped."""

    def __init__(self, inner: Any, write: Any) -> None:
        self._inner = inner
        self._write = write

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def receive(self) -> Any:
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            await self._answer(item)

    def __aiter__(self) -> _Answering:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _Answering:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self._inner.__aexit__(*exc)

    async def _answer(self, exc: Exception) -> None:
        import mcp_types as types
        from mcp.shared.message import SessionMessage

        errors = getattr(exc, "errors", None)
        kinds = {e.get("type") for e in errors()} if callable(errors) else set()
        if "json_invalid" in kinds:
            error = types.ErrorData(code=types.PARSE_ERROR, message="Parse error: the line is not JSON")
        else:
            error = types.ErrorData(
                code=types.INVALID_REQUEST, message="Invalid Request: the line is not a JSON-RPC 2.0 message"
            )
        with suppress(Exception):  # the client went away: nothing to answer
            await self._write.send(SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=None, error=error)))


async def run_stdio(server: Any) -> None:
    """Serve ``server`` on stdin/stdout until stdin ends (or the task is cancelled)."""
    from mcp.server.stdio import stdio_server

    # the SDK annotates stdin as anyio's AsyncFile but only reads it with `async for`, which _Lines does
    async with _stdin_pipe() as lines, stdio_server(stdin=lines) as (read, write):  # type: ignore[arg-type]
        await server.run(_Answering(read, write), write, server.create_initialization_options())
