"""Every MCP server of a session: which may start, their connections, and their tools in the
agent's registry.

:class:`McpManager` is made when the agent is built (synchronously: which project servers a
person approved is settled then), started in the event loop the session runs in
(:meth:`McpManager.start`, idempotent: the front end, or the loop before its first model
call), and waited for by headless runs (:meth:`McpManager.wait_ready`). As each server's tool
list arrives (at connect, after ``notifications/tools/list_changed``, at a reconnect) its
tools replace the server's old ones in the registry, marked new, pinned or changed against
the definitions approved before (:mod:`monkey.mcp_client.pins`), or, for one never approved, as
first offered in this session. A changed tool is offered to the model as it was before until a
person approves a call of it. When a server's set of
definitions changes (a tool added, changed or gone since its last listing in this session, or
one changed since it was approved), its tools approved before are marked ``reconfirm``: each
needs a person's approval again before its next call.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from monkey.mcp_client.config import ServerConfig, Servers
from monkey.mcp_client.names import assign_names
from monkey.mcp_client.pins import Pin, PinStore, definition_diff, tool_hash
from monkey.mcp_client.results import DEFAULT_LIMIT
from monkey.mcp_client.server import McpServer
from monkey.mcp_client.tool import McpTool
from monkey.tools.registry import ToolRegistry

__all__ = ["McpManager", "ServerView", "approve_project_servers"]

Ask = Callable[[ServerConfig], bool]
"""Asks the person whether a project-defined server may start (None: nobody to ask)."""


@dataclass(frozen=True)
class ServerView:
    """What ``/mcp`` and the app show of one server."""

    name: str
    origin: str
    status: str
    error: str
    tools: list[str]
    changed: list[str]


def _may_start(pins: PinStore, workspace: Path, config: ServerConfig, trusted_folder: bool, ask: Ask | None) -> str:
    """Why a server may not start ('' when it may): a project's needs trust and the person's
    approval of its definition (asked with ``ask``, kept in the monkey home)."""
    if config.origin != "project":
        return ""
    if not trusted_folder:
        return f"defined by the project ({config.source}) and this folder is not trusted (`monkey trust`)"
    from monkey.trust import trust_root

    workspace = trust_root(workspace)  # a worktree's approvals are its repository's, as its trust is
    key = pins.server_key(workspace, config.name, config.definition_hash)
    if pins.server_approved(key):
        return ""
    if ask is None:
        return (
            f"defined by the project ({config.source}) and you have not approved this definition; "
            "nobody is here to ask (run monkey on a terminal in this folder once)"
        )
    if not ask(config):
        return "you did not approve its definition"
    try:
        pins.approve_server(key, workspace, config.name)
    except OSError as exc:
        return f"your approval could not be kept: {exc.strerror or exc}"
    return ""


def approve_project_servers(
    servers: Servers, *, workspace: Path, home: Path, trusted_folder: bool, ask: Ask
) -> dict[str, str]:
    """Ask the person about each enabled project server whose definition they have not approved
    yet; returns why each one they refused may not start."""
    pins = PinStore(home)
    refused: dict[str, str] = {}
    for config in servers.servers.values():
        if not (config.origin == "project" and config.enabled and trusted_folder):
            continue
        if why := _may_start(pins, workspace, config, trusted_folder, ask):
            refused[config.name] = why
    return refused


class McpManager:
    """The MCP servers of one session and their tools in ``registry``."""

    def __init__(
        self,
        servers: Servers,
        *,
        workspace: Path,
        home: Path,
        registry: ToolRegistry,
        trusted_folder: bool,
        refused: dict[str, str] | None = None,
        result_limit: int = DEFAULT_LIMIT,
    ) -> None:
        self.workspace = workspace
        self.home = home
        self.registry = registry
        self.result_limit = result_limit
        self.pins = PinStore(home)
        self.notices: list[str] = list(servers.errors)
        self.servers: dict[str, McpServer] = {}
        self._blocked: dict[str, str] = {}
        self._tools: dict[str, list[str]] = {}
        self._listed: dict[str, dict[str, str]] = {}
        """Per server, its tools' hashes at its last listing (while ready) in this session."""
        self._seen: dict[str, dict[str, Pin]] = {}
        """Per server, each tool's definition as first offered in this session (the baseline of one never approved)."""
        self._reconfirm: dict[str, tuple[set[str], str]] = {}
        """Per server, its tools to be approved again and what changed in its set."""
        self._started = False
        self.listeners: list[Callable[[], None]] = []
        """Called when a server's status or tools changed (the app redraws its status bar)."""
        for config in servers.servers.values():
            log = home / "mcp" / "logs" / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', config.name)}.log"
            server = McpServer(
                config,
                workspace=workspace,
                log=log,
                on_tools=self._tools_listed,
                cap=(result_limit, lambda: self.result_file("cut")),
            )
            self.servers[config.name] = server
            why = (refused or {}).get(config.name) or _may_start(self.pins, workspace, config, trusted_folder, None)
            if why:
                server.status, server.error = "not started", why
                server.ready.set()
                self._blocked[config.name] = why
                if trusted_folder or config.origin != "project":  # else the session says it with the rest
                    self.notices.append(f"MCP server {config.name} not started: {why}")

    def startable(self) -> list[ServerConfig]:
        """The enabled servers allowed to start (a project's only in a trusted folder, once the person
        approved its definition): what an ACP agent backend is given to start itself."""
        return [s.config for name, s in self.servers.items() if s.config.enabled and name not in self._blocked]

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> None:
        """Connect every enabled, allowed server in the background (once; needs a running loop)."""
        if self._started:
            return
        self._started = True
        for server in self.servers.values():
            if server.status == "starting":
                server.start()

    async def wait_ready(self) -> None:
        """Wait until each server is connected or failed (each within its own startup_timeout)."""
        self.start()
        waits = [asyncio.wait_for(s.ready.wait(), s.config.startup_timeout + 5) for s in self.servers.values()]
        await asyncio.gather(*waits, return_exceptions=True)

    async def reconnect(self, name: str) -> str:
        server = self._get(name)
        if name in self._blocked:
            return f"{name} was not started: {self._blocked[name]}"
        await server.stop()
        server.start()
        await asyncio.wait_for(server.ready.wait(), server.config.startup_timeout + 5)
        return f"{name}: {server.status}" + (f" ({server.error})" if server.error else "")

    async def disable(self, name: str) -> str:
        server = self._get(name)
        await server.stop("disabled")
        server.tools = []
        self._tools_listed(server)
        return f"{name} disabled for this session; its tools are gone (/mcp reconnect {name} brings it back)"

    def _get(self, name: str) -> McpServer:
        try:
            return self.servers[name]
        except KeyError:
            raise KeyError(f"no MCP server named {name!r}; configured: {', '.join(self.servers) or 'none'}") from None

    async def aclose(self) -> None:
        await asyncio.gather(*(s.stop() for s in self.servers.values()), return_exceptions=True)

    # -- tools -------------------------------------------------------------------------

    def _pin_key(self, server: McpServer) -> str:
        config = server.config
        return f"project:{self.workspace}:{config.name}" if config.origin == "project" else config.name

    def _tools_listed(self, server: McpServer) -> None:
        for name in self._tools.pop(server.name, []):
            self.registry.remove(name)
        names, collisions = assign_names(server.name, [t.name for t in server.tools])
        for message in collisions:
            server.error = message
        pins = self.pins.pins(self._pin_key(server))
        hashes = {t.name: tool_hash(t.name, t.description, t.schema) for t in server.tools}
        self._note_set_change(server, pins, hashes)
        again, what = self._reconfirm.get(server.name, (set(), ""))
        seen = self._seen.setdefault(server.name, {}) if server.status == "ready" else {}
        added: list[str] = []
        for definition in server.tools:
            model_name = names.get(definition.name)
            if model_name is None:
                continue
            if model_name in self.registry:  # another server's name sanitised the same way
                server.error = f"tool {definition.name!r} becomes {model_name}, which another tool has; left out"
                continue
            pin = pins.get(definition.name)
            first = seen.setdefault(
                definition.name, Pin(hashes[definition.name], definition.description, definition.schema)
            )
            if pin is None and first.hash != hashes[definition.name]:  # never approved, but offered otherwise
                state, diff, pin = "changed", definition_diff(first, definition.description, definition.schema), first
            elif pin is None:
                state, diff = "new", ""
            elif pin.hash == hashes[definition.name]:
                state, diff = ("reconfirm", what) if definition.name in again else ("pinned", "")
            else:
                state, diff = "changed", definition_diff(pin, definition.description, definition.schema)
            self.registry.add(
                McpTool(
                    self,
                    server,
                    definition,
                    model_name,
                    state,  # type: ignore[arg-type]
                    diff,
                    approved=pin,
                )
            )
            added.append(model_name)
        self._tools[server.name] = added
        for listener in list(self.listeners):
            listener()

    def _note_set_change(self, server: McpServer, pins: dict[str, Pin], hashes: dict[str, str]) -> None:
        """Mark the server's approved tools to be confirmed again when its set of definitions changed."""
        if server.status != "ready":  # a server gone or going: its empty list is no new set
            return
        before = self._listed.get(server.name)
        self._listed[server.name] = now = hashes
        if before is None:  # the first listing: has a tool changed since it was approved?
            before = {name: pin.hash for name, pin in pins.items() if name in hashes}
            now = {name: hashes[name] for name in before}
        if now == before:
            return
        parts = [
            f"{label} {', '.join(sorted(names))}"
            for label, names in (
                ("added", set(now) - set(before)),
                ("changed", {n for n in set(now) & set(before) if now[n] != before[n]}),
                ("removed", set(before) - set(now)),
            )
            if names
        ]
        again, _ = self._reconfirm.get(server.name, (set(), ""))
        self._reconfirm[server.name] = (again | set(hashes), "; ".join(parts))

    def accept(self, tool: McpTool) -> None:
        """A call of ``tool`` was approved: its definition becomes the approved one."""
        definition = tool.definition
        try:
            self.pins.pin(self._pin_key(tool.server), definition.name, definition.description, definition.schema)
        except OSError:
            return  # kept for this session: asked again next time
        finally:
            tool.state, tool.diff = "pinned", ""
            again, _ = self._reconfirm.get(tool.server.name, (set(), ""))
            again.discard(definition.name)

    def result_file(self, call_id: str) -> Path:
        """Where a cut result is saved whole (a new name each time: models reuse call ids)."""
        from monkey.ids import new_id

        return self.home / "mcp" / "results" / f"{new_id('r')}-{re.sub(r'[^A-Za-z0-9_.-]', '_', call_id)}.txt"

    # -- what people see ---------------------------------------------------------------

    def views(self) -> list[ServerView]:
        out = []
        for server in self.servers.values():
            tools = [t for t in self._tools.get(server.name, [])]
            changed = [n for n in tools if getattr(self.registry.find(n), "state", "") == "changed"]
            out.append(ServerView(server.name, server.config.origin, server.status, server.error, tools, changed))
        return out

    def summary(self) -> str:
        """``mcp 2/3 ready`` (and how many failed), for a status bar; '' without servers."""
        if not self.servers:
            return ""
        statuses = [s.status for s in self.servers.values()]
        failed = statuses.count("failed")
        return f"mcp {statuses.count('ready')}/{len(statuses)} ready" + (f", {failed} failed" if failed else "")
