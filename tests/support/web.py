"""Running ``monkey web`` for tests: the app in-process (httpx's ASGI transport) or a real uvicorn on 127.0.0.1;
sessions for it to show (a stored task, a REPL waiting at its approval question)."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2 as httpx

from monkey.web.server import WebFront, WebSettings, build_app
from tests.support.cli import invoke_async, monkey_env, write_script

TOKEN = "test-token-0123456789abcdef"


@contextlib.asynccontextmanager
async def asgi_client(host: str = "127.0.0.1") -> AsyncIterator[tuple[httpx.AsyncClient, Any]]:
    """A client of the app in this process (no cookie yet), and the app; the lifespan runs around it."""
    app = build_app(WebSettings(host=host, token=TOKEN))
    inner = app.app.app  # the guard, then the headers, then Starlette: its lifespan opens the store
    async with (
        inner.router.lifespan_context(inner),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8") as client,
    ):
        yield client, app


async def login(client: httpx.AsyncClient) -> None:
    """Trade the token for the cookie, as a browser opening the printed link does."""
    answer = await client.get(f"/?token={TOKEN}")
    assert answer.status_code == 303, answer.text


@contextlib.asynccontextmanager
async def served() -> AsyncIterator[WebFront]:
    """``monkey web`` on a free port of 127.0.0.1 in this process's loop; its ``url`` is the printed link."""
    lines: list[str] = []
    front = WebFront(WebSettings(token=TOKEN), say=lines.append)
    task = asyncio.create_task(front.serve())
    while not lines:
        assert not task.done(), task.exception()
        await asyncio.sleep(0.01)
    assert lines == [f"url: {front.url}"]
    try:
        yield front
    finally:
        front.stop()  # the event streams end with it: no open request is cut
        await task


def base(front: WebFront) -> str:
    return front.url.split("/?", 1)[0]


async def sse(
    client: httpx.AsyncClient,
    url: str,
    count: int,
    headers: dict[str, str] | None = None,
) -> list[tuple[int, dict[str, Any]]]:
    """The first ``count`` events of an SSE stream: ``(id, data)``."""
    import json

    out: list[tuple[int, dict[str, Any]]] = []
    async with client.stream("GET", url, headers=headers or {}) as answer:
        assert answer.status_code == 200, await answer.aread()
        assert answer.headers["content-type"].startswith("text/event-stream")
        event: dict[str, str] = {}
        async for line in answer.aiter_lines():
            if line == "":
                if "data" in event:
                    out.append((int(event["id"]), json.loads(event["data"])))
                    if len(out) == count:
                        return out
                event = {}
                continue
            if line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            event[name] = value.removeprefix(" ")
    return out


ANSWER = [
    {"text": "", "tool_calls": [{"name": "file_write", "arguments": {"path": "a.txt", "content": "hi\n"}}]},
    {"text": "wrote a.txt"},
]


async def stored_task(ws: Path, home: Path, tmp: Path, turns: list, *flags: str) -> str:
    """A ``monkey agent --task`` run on ``turns`` (auto mode) to its end, in this process; its session's id."""
    run = await invoke_async(
        [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(write_script(tmp / "s.json", turns)),
            "--cwd",
            str(ws),
            "--output-format",
            "stream-json",
            "--mode",
            "auto",
            "--task",
            "write a file",
            *flags,
        ],
        home=home,
    )
    assert run.returncode == 0, run.stderr
    return run.events[0]["session_id"]


WRITE = [
    {"text": "", "tool_calls": [{"name": "file_write", "arguments": {"path": "a.txt", "content": "hi\n"}}]},
    {"text": "the turn is over"},
]


@contextmanager
def waiting(workspace: Path, home: Path, script: Path) -> Iterator[Any]:
    """``monkey agent --plain`` on a pty, asked to write a file: it waits at its approval question."""
    import pexpect

    child = pexpect.spawn(
        sys.executable,
        ["-m", "monkey", "agent", "--plain", "--backend", "scripted", "--script", str(script), "--cwd", str(workspace)],
        env=monkey_env(home, TERM="xterm"),
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 160),
    )
    try:
        child.expect_exact("Type a task")
        child.sendline("write a file")
        child.expect_exact("allow? [")
        yield child
    finally:
        if child.isalive():
            child.sendline("/exit")  # a Ctrl-D typed before the prompt reads is lost; a line is not
            child.expect(pexpect.EOF)
