"""Running one agent plugin: its process, its environment, and JSON-RPC on its stdio.

The plugin runs as a supervised child exactly as the Claude Code CLI does
(:class:`~monkey.backends.supervise.AgentProcess`): its own process group, dying with
monkey, an idle watchdog (held off while the plugin waits for monkey, say for a person's
approval), a wall-clock cap, stderr captured (its tail is said when the plugin fails), and a
size limit on each line of its stdout. Its environment is monkey's scrubbed of credentials
(:func:`monkey.process.scrub_env`), then the manifest's ``env`` defaults for variables still
unset, then the values of monkey's config (``[plugins.NAME] env``, an alias's ``env``).

Its working folder is the plugin's own folder (so ``command: ["python3", "./agent.py"]``
works as written); the workspace is sent in ``agent.run``'s ``context``.

:class:`PluginHost` reads stdout in a task of its own, so that stopping is in monkey's
hands: :meth:`PluginHost.close` first closes the plugin's stdin (a plugin watches for EOF and
exits), waits ``grace`` seconds, and only then stops its group (SIGTERM, ``grace``, SIGKILL).
"""

from __future__ import annotations

import asyncio
import os
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from monkey.backends.base import BackendError
from monkey.backends.supervise import AgentProcess, ChildSpec
from monkey.backends.plugin.discovery import PluginError, Resolved
from monkey.backends.plugin.rpc import UNSET, BadLine, Frame, LineTooLong, RpcReader, error_response, kind, request
from monkey.process import scrub_env

__all__ = ["InitInfo", "PluginHost", "plugin_env"]

_EOF = object()


def plugin_env(resolved: Resolved, base: Mapping[str, str]) -> dict[str, str]:
    """The plugin's environment (see the module's docstring); raises :class:`PluginError` when a
    required variable is set nowhere."""
    env = scrub_env(base)
    for var in resolved.manifest.env:
        if var.default is not None and var.name not in env:
            env[var.name] = var.default
    for key, value in resolved.settings.env.items():
        env[key] = _expand(str(value), base, f"[plugins.{resolved.manifest.name}] env.{key}")
    for var in resolved.manifest.env:
        if var.required and not env.get(var.name):
            what = f" ({var.description})" if var.description else ""
            raise PluginError(
                f"plugin {resolved.name} needs {var.name}{what}; set it in "
                f"[plugins.{resolved.manifest.name}] env in monkey's config"
            )
    return env


def _expand(text: str, environ: Mapping[str, str], where: str) -> str:
    from monkey.mcp_client.config import McpConfigError, expand

    try:
        return expand(text, environ, where)
    except McpConfigError as exc:
        raise PluginError(str(exc)) from None


@dataclass
class InitInfo:
    """What ``agent.init`` answered (name, model, capabilities), and ``agent.available``."""

    name: str = ""
    model: str = ""
    capabilities: list[str] = field(default_factory=list)
    available: bool = True
    reason: str = ""


class PluginHost:
    """One running plugin process and the JSON-RPC conversation with it."""

    def __init__(
        self, resolved: Resolved, *, base_env: Mapping[str, str] | None = None, model: str | None = None
    ) -> None:
        self.resolved = resolved
        self.label = f"plugin {resolved.name}"
        settings = resolved.settings
        self.env = plugin_env(resolved, os.environ if base_env is None else base_env)
        self.config: dict[str, Any] = dict(settings.config)
        if model or settings.model:
            self.config["model"] = model or settings.model
        self.grace = settings.grace
        self._next_id = 0
        self.sent: dict[int, str] = {}
        """Every request sent, by id (its method): a response to any other id is a protocol error."""
        first = self._request_line("agent.init", {"config": self.config})
        self.proc = AgentProcess(
            ChildSpec(
                argv=resolved.manifest.argv(),
                cwd=Path(resolved.manifest.folder),
                env=self.env,
                stdin=first,
                keep_stdin=True,
                idle_timeout=settings.idle_timeout,
                wall_timeout=settings.timeout,
                grace=settings.grace,
                name=self.label,
            )
        )
        self._reader = RpcReader(settings.max_line_bytes)
        self._queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=256)
        self._ready: deque[Frame | BadLine] = deque()
        self._pump: asyncio.Task[None] | None = None
        self.eof = False
        self.info = InitInfo()
        self.stage = ""
        """The request of the handshake in progress or last done (``agent.init``, ``agent.available``)."""

    # -- the process -----------------------------------------------------------------

    def start(self) -> None:
        """Start the plugin (its first line on stdin is ``agent.init``)."""
        if self._pump is None:
            self._pump = asyncio.create_task(self._read(), name=f"monkey-{self.label}")

    async def _read(self) -> None:
        chunks = self.proc.stdout()
        put = self._queue.put
        try:
            async for chunk in chunks:
                try:
                    frames = self._reader.feed(chunk)
                except LineTooLong:
                    await put(
                        BackendError(
                            f"{self.label} printed a line longer than {self._reader.limit} bytes "
                            "([plugins] max_line_bytes); it was stopped",
                            kind="agent_error",
                        )
                    )
                    return  # closing the generator stops the group
                if frames:
                    await put(frames)
            if rest := self._reader.close():
                await put(rest)
        except BackendError as exc:  # it could not be started
            await put(exc)
        finally:
            await chunks.aclose()
            self._queue.put_nowait(_EOF) if not self._queue.full() else None
            self.eof = True

    @property
    def running(self) -> bool:
        """Whether the plugin's output is still being read."""
        return self._pump is not None and not self._pump.done()

    def failure(self) -> str:
        """What happened to the process, for a person (its exit status and stderr's tail), or ""."""
        return self.proc.failure()

    def stderr_tail(self, limit: int = 400) -> str:
        """The end of what the plugin wrote on stderr."""
        text = self.proc.stderr.strip()
        return text[-limit:]

    async def close(self) -> None:
        """End the plugin: close its stdin, give it ``grace`` seconds to exit, then stop its group."""
        if self._pump is None:
            return
        self.proc.close_stdin()
        if not self._pump.done():
            await asyncio.wait({self._pump}, timeout=self.grace)
        if not self._pump.done():
            self._pump.cancel()  # the reader's generator stops the group (SIGTERM, grace, SIGKILL)
        try:
            await asyncio.shield(self._pump)
        except (asyncio.CancelledError, Exception):  # noqa: BLE001 - it is stopped either way
            pass

    # -- JSON-RPC --------------------------------------------------------------------

    def _request_line(self, method: str, params: Any) -> bytes:
        self._next_id += 1
        self.sent[self._next_id] = method
        return request(self._next_id, method, params)

    def send(self, method: str, params: Any) -> int:
        """Send a request; its id (the response comes through :meth:`next`)."""
        line = self._request_line(method, params)
        if not self.proc.send(line):
            raise BackendError(self._gone(f"before monkey could send {method}"), kind="agent_error")
        return self._next_id

    def answer_unknown(self, frame: Frame) -> None:
        """Answer a request of the plugin's: monkey offers no methods to plugins (-32601)."""
        self.proc.send(error_response(frame.id, -32601, f"monkey has no method {frame.method!r}"))

    async def next(self, timeout: float | None = None) -> Frame | BadLine | None:
        """The next message of the plugin's; None when its output has ended."""
        if self._ready:
            return self._ready.popleft()
        if self.eof and self._queue.empty():
            return None
        item = await (self._queue.get() if timeout is None else asyncio.wait_for(self._queue.get(), timeout))
        if item is _EOF:
            self._queue.put_nowait(_EOF)  # every later call sees the end too
            return None
        if isinstance(item, BackendError):
            self._queue.put_nowait(_EOF)
            raise item
        self._ready.extend(item)
        return self._ready.popleft()

    def _gone(self, when: str) -> str:
        why = self.failure() or f"{self.label} closed its output"
        return f"{why} {when}"

    def ended(self, when: str) -> BackendError:
        """The error for a plugin whose output ended ``when`` (its status and stderr said)."""
        if self.proc.stopped in ("idle", "wall"):
            return BackendError(self.failure(), kind="timeout")
        failure = self.failure()
        if failure:
            return BackendError(f"{failure} ({when})", kind="agent_error")
        tail = self.stderr_tail()
        return BackendError(
            f"{self.label} closed its output {when}" + (f": {tail}" if tail else ""), kind="agent_error"
        )

    def protocol_error(self, what: str) -> BackendError:
        """The error for a message that breaks the protocol."""
        tail = self.stderr_tail(200)
        return BackendError(
            f"{self.label} broke the protocol: {what}" + (f" (stderr: {tail})" if tail else ""), kind="agent_error"
        )

    def check_response(self, frame: Frame, rid: int) -> Any:
        """The result of ``frame``, the response to request ``rid``; raises for an error object."""
        if frame.error is not UNSET and frame.error is not None:
            err = frame.error if isinstance(frame.error, dict) else {"message": str(frame.error)}
            code = err.get("code")
            method = self.sent.get(rid, "?")
            if code == -32601:
                return_error = f"{self.label} does not implement {method} (-32601 method not found)"
            else:
                return_error = f"{self.label} answered {method} with error {code}: {err.get('message') or 'no message'}"
            raise BackendError(return_error, kind="agent_error")
        return None if frame.result is UNSET else frame.result

    async def call(
        self,
        method: str,
        params: Any,
        *,
        rid: int | None = None,
        timeout: float = 60.0,
        early: list[Frame] | None = None,
    ) -> Any:
        """Send ``method`` (or wait for the already sent ``rid``) and return its result.

        Notifications that come first are kept in ``early`` (or dropped); a request of the
        plugin's is answered -32601; garbage, a wrong id or the end of its output raise.
        """
        if rid is None:
            rid = self.send(method, params)
        while True:
            try:
                frame = await self.next(timeout)
            except TimeoutError:
                raise BackendError(
                    f"{self.label} did not answer {method} within {timeout:g} s", kind="timeout"
                ) from None
            if frame is None:
                raise self.ended(f"before answering {method}")
            if isinstance(frame, BadLine):
                raise self.protocol_error(f"a line that is {frame.why}: {frame.shown()!r}")
            what = kind(frame)
            if what == "response":
                if frame.id == rid:
                    return self.check_response(frame, rid)
                if frame.id in self.sent:
                    continue  # a late answer to an earlier request (agent.tool_result)
                raise self.protocol_error(
                    f"a response to id {frame.id!r}, which monkey never sent (it waits for {rid}, {method})"
                )
            if what == "request":
                self.answer_unknown(frame)
            elif what == "notification" and early is not None:
                early.append(frame)
            elif what == "invalid":
                raise self.protocol_error("a JSON object that is no JSON-RPC request, notification or response")

    async def handshake(self, *, timeout: float = 60.0) -> InitInfo:
        """Start the plugin, ``agent.init``, then ``agent.available``; a plugin that is not available
        raises :class:`BackendError` (kind ``unavailable``) with its reason."""
        self.start()
        self.stage = "agent.init"
        result = await self.call("agent.init", None, rid=1, timeout=timeout)
        info = self.info
        if isinstance(result, dict):
            info.name = str(result.get("name") or "")
            info.model = str(result.get("model") or "")
            caps = result.get("capabilities")
            info.capabilities = [str(c) for c in caps] if isinstance(caps, list) else []
        self.stage = "agent.available"
        avail = await self.call("agent.available", {}, timeout=timeout)
        ok = avail.get("available") if isinstance(avail, dict) else avail
        info.available = ok is True
        if not info.available:
            reason = str(avail.get("reason") or "") if isinstance(avail, dict) else ""
            info.reason = reason or "it gave no reason"
            raise BackendError(f"{self.label} is not available: {info.reason}", kind="unavailable")
        return info
