"""The official ``mcp`` client driving a real ``python -m monkey serve`` subprocess (stdio or HTTP)."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.support.cli import monkey_env

if TYPE_CHECKING:
    from mcp import ClientSession

# the mcp SDK (pydantic models, seconds to import) is imported where it is used, not when a test module is collected

__all__ = ["stdio_session", "http_session", "text", "HttpServer", "start_http"]


@contextlib.asynccontextmanager
async def stdio_session(
    workspace: Path, home: Path, *flags: str, errlog: Any = None, **session: Any
) -> AsyncIterator[ClientSession]:
    """An initialized client session with ``monkey serve --cwd WORKSPACE FLAGS`` over stdio
    (``session``: more arguments of :class:`ClientSession`, e.g. an ``elicitation_callback``)."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "monkey", "serve", "--cwd", str(workspace), *flags], env=monkey_env(home)
    )
    async with (
        stdio_client(params, errlog=errlog or sys.stderr) as (read, write),
        ClientSession(read, write, **session) as client,
    ):
        await client.initialize()
        yield client


@contextlib.asynccontextmanager
async def http_session(url: str, token: str = "") -> AsyncIterator[ClientSession]:
    """An initialized client session with a ``monkey serve http`` endpoint (with the bearer token, if any)."""
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=300)) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def text(result: Any) -> str:
    """The text blocks of a tool result, joined."""
    return "".join(getattr(block, "text", "") for block in result.content)


class HttpServer:
    """A ``monkey serve http`` subprocess and what it printed on start."""

    def __init__(self, proc: subprocess.Popen[str], url: str, token: str) -> None:
        self.proc = proc
        self.url = url
        """The MCP endpoint (``http://HOST:PORT/mcp``)."""
        self.token = token

    @property
    def base(self) -> str:
        return self.url.rsplit("/mcp", 1)[0]

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout=timeout)


def start_http(
    workspace: Path, home: Path, *flags: str, env: dict[str, str] | None = None, deadline: float = 60
) -> HttpServer:
    """Start ``monkey serve http`` and wait (up to ``deadline`` s) for the URL line it prints on stdout
    and its ``serving`` line on stderr (the token it made, ``token: ...``, comes before it)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "monkey", "serve", "http", *flags, "--cwd", str(workspace)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**monkey_env(home), **(env or {})},
    )
    url = token = ""
    end = time.monotonic() + deadline
    assert proc.stdout is not None and proc.stderr is not None
    while time.monotonic() < end:
        line = proc.stdout.readline()
        if not line:
            break
        if line.startswith("url: "):
            url = line.split(": ", 1)[1].strip()
            break
    if not url:
        proc.kill()
        out, err = proc.communicate(timeout=30)
        raise AssertionError(f"monkey serve http printed no url (exit {proc.returncode}): {out}\n{err}")
    while time.monotonic() < end:
        line = proc.stderr.readline()
        if not line or line.startswith("monkey serve: serving "):
            break
        if line.startswith("token: "):
            token = line.split(": ", 1)[1].strip()
    return HttpServer(proc, url, token)


TOOLS = [
    "file_read",
    "file_write",
    "file_edit",
    "file_delete",
    "shell_execute",
    "process_output",
    "process_stop",
    "process_list",
    "list_directory",
    "glob_search",
    "grep_search",
    "web_fetch",
    "agent",
    "agent_reply",
]


def serve_process(workspace: Path, home: Path, *flags: str) -> subprocess.Popen[bytes]:
    """``monkey serve`` as a process, spoken to line by line over its stdin and stdout."""
    return subprocess.Popen(
        [sys.executable, "-m", "monkey", "serve", "--cwd", str(workspace), *flags],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=monkey_env(home),
    )


def send_line(proc: subprocess.Popen[bytes], line: str | dict) -> None:
    """Write one JSON-RPC line (a dict is encoded) to the server."""
    assert proc.stdin is not None
    proc.stdin.write((line if isinstance(line, str) else json.dumps(line)).encode() + b"\n")
    proc.stdin.flush()


def read_answer(proc: subprocess.Popen[bytes]) -> dict:
    """The server's next line, decoded."""
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, "the server closed stdout"
    return json.loads(line)


INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}
