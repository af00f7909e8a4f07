"""One MCP server: its connection, kept in a task of its own, its tools and its status.

The SDK's client must be entered and left in one task, so each server runs in a background
task that connects and lists the tools (together within ``startup_timeout``), says it is ready
and waits until it is stopped or the server goes away. A server that dies is reported and
started once more; a second death leaves it ``failed``. Calls come from the loop's task through
:meth:`McpServer.call`, bounded by ``tool_timeout`` and cancelled with the turn; a call made
while the server is being started again waits until that start has ended (connected, or
failed once its own ``startup_timeout`` ran out and the attempt was cleaned up), not for a
time of its own: a deadline counted from the call could run out while the start it waits
for is still under way, and tell the model a stale "starting".
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from monkey.mcp_client.config import ServerConfig
from monkey.tools.errors import ToolError

__all__ = ["McpServer", "Status", "ToolDef"]

Status = Literal["starting", "ready", "failed", "disabled", "not started", "stopped"]


@dataclass(frozen=True)
class ToolDef:
    """One tool as the server describes it."""

    name: str
    description: str
    schema: dict[str, Any]
    read_only: bool
    """``readOnlyHint`` without ``destructiveHint`` (counted only for trusted servers)."""
    annotations: dict[str, Any]


def _tool_def(tool: Any) -> ToolDef:
    notes = tool.annotations.model_dump(exclude_none=True) if tool.annotations is not None else {}
    read_only = bool(notes.get("read_only_hint")) and not notes.get("destructive_hint", False)
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {"type": "object"}
    return ToolDef(tool.name, tool.description or "", schema, read_only, notes)


class McpServer:
    """A configured server and its live connection."""

    def __init__(
        self,
        config: ServerConfig,
        *,
        workspace: Path,
        log: Path,
        on_tools: Callable[[McpServer], None],
        cap: tuple[int, Callable[[], Path]] | None = None,
    ) -> None:
        self.config = config
        self.cap = cap
        """The result limit and where a cut string is saved (a stdio server's long messages are cut as they come)."""
        self.workspace = workspace
        self.log = log
        self.on_tools = on_tools
        """Called (in the server's task) whenever the tool list was read."""
        self.status: Status = "starting" if config.enabled else "disabled"
        self.error = ""
        self.tools: list[ToolDef] = []
        self.restarts = 0
        self.ready = asyncio.Event()
        """Set once the first connection succeeded or failed (headless runs wait for it)."""
        self._settled = asyncio.Event()
        """Set while the server is not ``starting`` (connected, failed or stopped)."""
        self._client: Any = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._relist = asyncio.Event()
        self._fresh = asyncio.Event()
        """Clear from ``notifications/tools/list_changed`` until the tools were listed again."""
        self._fresh.set()

    @property
    def name(self) -> str:
        return self.config.name

    def start(self) -> None:
        """Connect in the background (again, after a stop or a failure)."""
        if self._task is not None and not self._task.done():
            return
        self._stop = asyncio.Event()
        self.status, self.error, self.restarts = "starting", "", 0
        self.ready = asyncio.Event()
        self._settled.clear()
        self._task = asyncio.create_task(self._keep(), name=f"mcp-{self.name}")

    async def stop(self, status: Status = "stopped") -> None:
        """Close the connection (the server process is stopped) and leave the server in ``status``."""
        self._stop.set()
        task, self._task = self._task, None
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(task, 10.0)
        self._client = None
        self.status = status
        self.ready.set()
        self._settled.set()

    async def _keep(self) -> None:
        while not self._stop.is_set():
            why = await self._connect_once()
            if self._stop.is_set():
                return
            if self.restarts >= 1 or self.status != "ready":
                self.status, self.error = "failed", why
                self.tools = []
                self.on_tools(self)
                self.ready.set()
                self._settled.set()
                return
            self.restarts += 1
            self.error = f"{why}; restarted once"
            self.status = "starting"
            self._settled.clear()
            self.on_tools(self)

    async def _connect_once(self) -> str:
        """One connection from start to end; returns why it ended."""
        from mcp import Client

        from monkey.mcp_client.transport import Exited

        exited = Exited()
        slow = f"did not answer within {self.config.startup_timeout:g} s (startup_timeout)"
        deadline = asyncio.get_running_loop().time() + self.config.startup_timeout
        try:
            client = Client(self._transport(exited), cache=None, message_handler=self._on_message)
            async with asyncio.timeout_at(deadline):  # not an anyio scope: the client's
                await client.__aenter__()  # task group outlives it
        except TimeoutError:
            return slow
        except Exception as exc:  # noqa: BLE001 - any failure to start is the server's status
            return self._why(exc, exited)
        watcher: asyncio.Task[None] | None = None
        try:
            self._client = client
            self.status = "ready"
            try:
                async with asyncio.timeout_at(deadline):  # a start ends within startup_timeout: calls wait for it
                    await self._list_tools()
            except TimeoutError:
                self.status = "starting"  # it never was ready: a failed start, as when the connection timed out
                return slow
            self.ready.set()
            self._settled.set()
            watcher = asyncio.create_task(self._watch_changes(client))
            while not self._stop.is_set():
                stop = asyncio.ensure_future(self._stop.wait())
                died = asyncio.ensure_future(exited.event.wait())
                relist = asyncio.ensure_future(self._relist.wait())
                try:
                    await asyncio.wait({stop, died, relist}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for fut in (stop, died, relist):
                        fut.cancel()
                if exited.event.is_set() and not self._stop.is_set():
                    return self._exit_text(exited)
                if self._relist.is_set():
                    self._relist.clear()
                    await self._list_tools()
            return "stopped"
        except Exception as exc:  # noqa: BLE001
            return self._why(exc, exited)
        finally:
            self._settled.clear()  # until it is connected again, failed or stopped
            self._client = None
            if watcher is not None:
                watcher.cancel()
                with contextlib.suppress(BaseException):
                    await watcher
            with contextlib.suppress(Exception):
                await client.__aexit__(None, None, None)

    def _transport(self, exited: Any) -> Any:
        config = self.config
        if config.url:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            http = httpx2.AsyncClient(headers=dict(config.headers), timeout=httpx2.Timeout(30.0, read=300.0))
            return streamable_http_client(config.url, http_client=http)
        from monkey.mcp_client.transport import child_env, stdio_transport

        cwd = (self.workspace / config.cwd) if config.cwd else self.workspace
        return stdio_transport(
            [config.command, *config.args],
            env=child_env(dict(config.env), self.workspace),
            cwd=cwd,
            log=self.log,
            exited=exited,
            cap=self.cap,
        )

    def _why(self, exc: BaseException, exited: Any) -> str:
        if exited.event.is_set():
            return self._exit_text(exited)
        if isinstance(exc, FileNotFoundError):
            return f"cannot start {self.config.command}: no such program"
        if isinstance(exc, OSError):
            return f"cannot start {self.config.command}: {exc.strerror or exc}"
        inner = getattr(exc, "exceptions", None)
        if inner:
            return self._why(inner[0], exited)
        return f"{type(exc).__name__}: {exc}"

    def _exit_text(self, exited: Any) -> str:
        code = exited.returncode
        said = self.stderr_tail()
        return f"the server exited (code {code})" + (f": {said}" if said else "")

    def stderr_tail(self) -> str:
        """The last line the server wrote on stderr."""
        try:
            lines = self.log.read_bytes()[-2000:].decode("utf-8", "replace").strip().splitlines()
        except OSError:
            return ""
        return lines[-1][:200] if lines else ""

    async def _list_tools(self) -> None:
        tools: list[ToolDef] = []
        cursor = None
        while True:
            page = await self._client.list_tools(cursor=cursor)
            tools += [_tool_def(t) for t in page.tools]
            cursor = page.next_cursor
            if not cursor:
                break
        self.tools = [t for t in tools if self.config.allows(t.name)]
        self._fresh.set()
        self.on_tools(self)

    async def _watch_changes(self, client: Any) -> None:
        """On a 2026-07-28 connection, changes come on a ``subscriptions/listen`` stream (earlier
        revisions send ``notifications/tools/list_changed``, see :meth:`_on_message`)."""
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return
        with contextlib.suppress(Exception):
            async with client.listen(tools_list_changed=True) as subscription:
                async for _ in subscription:
                    self._fresh.clear()
                    self._relist.set()

    async def _on_message(self, message: Any) -> None:
        if getattr(message, "method", "") == "notifications/tools/list_changed":
            self._fresh.clear()
            self._relist.set()

    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        """Call ``tool``; raises ToolError when the server is not there, fails or takes too long."""
        import anyio

        task = self._task
        if not self._settled.is_set() and self.status in ("starting", "ready") and task is not None and not task.done():
            # started again after a crash: wait until that start ended (it is bounded by startup_timeout)
            settled = asyncio.ensure_future(self._settled.wait())
            try:
                await asyncio.wait({settled, task}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                settled.cancel()
        client = self._client
        if client is None or self.status != "ready":
            raise ToolError(f"the MCP server {self.name} is {self.status}" + (f": {self.error}" if self.error else ""))
        try:
            with anyio.fail_after(self.config.tool_timeout):
                result = await client.call_tool(tool, arguments)
            await asyncio.sleep(0)  # a change event that came before the result is seen first
            if not self._fresh.is_set():  # the call changed the tools: the model's next turn sees the new ones
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._fresh.wait(), self.config.startup_timeout)
            return result
        except TimeoutError:
            raise ToolError(
                f"{tool} on the MCP server {self.name} took longer than "
                f"{self.config.tool_timeout:g} s (tool_timeout); the call was cancelled"
            ) from None
        except ToolError:
            raise
        except Exception as exc:  # noqa: BLE001 - a malformed result or a lost connection is the model's to see
            await asyncio.sleep(0)
            if self._client is not client:
                raise ToolError(
                    f"the MCP server {self.name} went away during the call ({self.error or 'restarting'})"
                ) from None
            said = "; ".join(line.strip() for line in str(exc).splitlines()[:3] if line.strip())
            raise ToolError(
                f"the MCP server {self.name} gave no usable result for {tool}: {type(exc).__name__}: {said[:500]}"
            ) from None
