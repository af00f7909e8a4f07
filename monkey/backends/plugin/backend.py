"""The ``plugin:NAME`` backend: an agent plugin (JSON-RPC 2.0 on stdio) runs each turn.

One turn is one ``agent.run``: the plugin is started (:class:`~monkey.backends.plugin.host.PluginHost`),
``agent.init`` and ``agent.available`` are asked (not available: a one-line error before any
work), and the conversation is handed over (:mod:`monkey.backends.plugin.handover`). Its ``stream``
notifications become monkey's events: ``text`` → ``text_delta``, ``thinking`` →
``thinking_delta``, ``usage`` → ``usage``, ``error`` → ``error`` (not fatal), ``complete``
notes the end; any other type is a ``raw`` event, counted in :attr:`PluginBackend.unknown`.

A ``tool_use`` ends the model call with a ``message_completed`` carrying that one call, as a
model's tool call does: the agent loop runs it on its one path (rules, the person's approval,
checkpoint and journal, sandbox, hooks), and the next model call (the loop's next iteration)
finds the call's result in the conversation, sends it to the plugin as ``agent.tool_result``
(``tool_id``, ``result``, ``is_error``) and goes on reading the same run. A ``file``
notification becomes a ``file_write`` call on the same path (``action: delete`` a
``file_delete``); the plugin is sent no answer for it. The plugin is never written to
directly by a tool, and nothing runs around the loop.

The final response (``status``, ``tokens_used``) closes the run: stdin is closed and what
the plugin still prints before it exits is read (a response that came before its
notifications loses nothing). An error object, a ``-32601``, a crash, a line that is not
JSON-RPC, a response to an id monkey never sent, or output that ends early end the turn with
a :class:`~monkey.backends.base.BackendError` naming the plugin and its stderr's tail; the
events already streamed stay. The loop tells the backend when a turn ends (:meth:`end_turn`),
cancelled or not: a run still open is closed (stdin first, then its group is stopped).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from monkey.backends.base import BackendError, Capabilities, ModelCheck
from monkey.events import Error, Event, MessageCompleted, Raw, TextDelta, ThinkingDelta, ToolCallSpec, Usage
from monkey.ids import new_id
from monkey.messages import ModelRequest
from monkey.backends.plugin.discovery import Resolved
from monkey.backends.plugin.handover import run_params
from monkey.backends.plugin.host import PluginHost, plugin_env
from monkey.backends.plugin.rpc import BadLine, Frame, kind

__all__ = ["PluginBackend"]

DONE_STATUSES = ("complete", "completed", "success", "ok", "done")


@dataclass
class _Run:
    """One ``agent.run`` in progress."""

    host: PluginHost
    rid: int = 0
    text: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    waiting: tuple[str, str | None] | None = None
    """The loop's call id of the tool call the plugin waits for, and the plugin's id (None: a ``file``)."""
    usage_seen: bool = False
    completed: bool = False


class PluginBackend:
    """A plugin as a model backend (see the module's docstring)."""

    capabilities = Capabilities(keeps_own_context=True, ends_turns=True)
    """The loop sends the conversation as it is (no elision or compaction): the plugin is handed it whole;
    a run may wait for a tool's result across model calls, so the loop ends it with :meth:`end_turn`."""
    context_window = 0

    def __init__(
        self,
        resolved: Resolved,
        *,
        workspace: Path,
        base_env: Mapping[str, str] | None = None,
        model: str | None = None,
        handshake_timeout: float = 60.0,
    ) -> None:
        self.resolved = resolved
        self.name = f"plugin:{resolved.name}"
        self.model = model or resolved.settings.model or ""
        self._model_flag = model
        self.workspace = Path(workspace).resolve()
        self.base_env = base_env
        self.handshake_timeout = handshake_timeout
        self.unknown = 0
        """``raw`` events made of notifications monkey has no meaning for, over all runs."""
        self.runs = 0
        self.last_host: PluginHost | None = None
        self._run: _Run | None = None
        plugin_env(resolved, os.environ if base_env is None else base_env)  # a required variable unset fails now

    # -- the backend protocol --------------------------------------------------------

    async def stream(self, request: ModelRequest) -> AsyncIterator[Event]:
        """Go on with the run waiting for a tool's result, or start a new one for the latest message."""
        run = self._run
        sid = request.session_id
        try:
            if run is not None and run.waiting is not None and self._resume(run, request):
                pass
            else:
                if run is not None:
                    await self._close()
                run = await self._start(request)
            async for event in self._read(run, sid):
                yield event
        except BaseException:
            await asyncio.shield(self._close())
            raise

    async def check_model(self) -> ModelCheck:
        """A plugin cannot list its models."""
        return ModelCheck(None, f"not checked: {self.name} cannot list its models")

    async def end_turn(self) -> None:
        """The loop's turn is over (done, denied, cancelled): a run still open is closed."""
        await asyncio.shield(self._close())

    async def aclose(self) -> None:
        await self._close()

    # -- runs ------------------------------------------------------------------------

    async def _start(self, request: ModelRequest) -> _Run:
        host = PluginHost(self.resolved, base_env=self.base_env, model=self._model_flag)
        self.last_host = host
        run = self._run = _Run(host)
        self.runs += 1
        info = await host.handshake(timeout=self.handshake_timeout)
        if info.model:
            self.model = info.model
        tools = self.resolved.manifest.can("tool_use") or "tool_use" in info.capabilities
        run.rid = host.send("agent.run", run_params(request, self.workspace, tools=tools))
        return run

    def _resume(self, run: _Run, request: ModelRequest) -> bool:
        """Send the waited-for call's result; False when the conversation has none (a new turn)."""
        assert run.waiting is not None
        call_id, tool_id = run.waiting
        answer = next((m for m in reversed(request.messages) if m.role == "tool" and m.tool_call_id == call_id), None)
        if answer is None:
            return False
        run.waiting = None
        run.host.proc.waiting -= 1
        if tool_id is not None:
            run.host.send(
                "agent.tool_result", {"tool_id": tool_id, "result": answer.content, "is_error": answer.is_error}
            )
        return True

    async def _close(self) -> None:
        run, self._run = self._run, None
        if run is not None:
            await run.host.close()

    async def _read(self, run: _Run, sid: str) -> AsyncIterator[Event]:
        host = run.host
        while True:
            frame = await host.next()
            if frame is None:
                raise host.ended("before it finished agent.run" + (" (after `complete`)" if run.completed else ""))
            if isinstance(frame, BadLine):
                raise host.protocol_error(f"a line that is {frame.why}: {frame.shown()!r}")
            what = kind(frame)
            if what == "notification":
                event = self._notification(run, frame, sid)
                if event is not None:
                    yield event
                    if isinstance(event, MessageCompleted):
                        return  # the loop runs the call; the next model call goes on
            elif what == "response":
                if frame.id == run.rid:
                    async for event in self._finish(run, frame, sid):
                        yield event
                    return
                if frame.id not in host.sent:
                    raise host.protocol_error(
                        f"a response to id {frame.id!r}, which monkey never sent (agent.run is id {run.rid})"
                    )
                if isinstance(frame.error, dict):  # its answer to an agent.tool_result
                    yield Error(
                        session_id=sid,
                        kind="plugin",
                        message=f"{host.label} refused a tool result: {frame.error.get('message') or frame.error}",
                    )
            elif what == "request" and frame.method == "stream":  # a notification sent with an id: read as one
                event = self._notification(run, frame, sid)
                if event is not None:
                    yield event
                    if isinstance(event, MessageCompleted):
                        return
            elif what == "request":
                host.answer_unknown(frame)
            else:
                raise host.protocol_error("a JSON object that is no JSON-RPC request, notification or response")

    def _notification(self, run: _Run, frame: Frame, sid: str) -> Event | None:
        params = frame.params
        if frame.method != "stream" or not isinstance(params, dict):
            return self._raw(frame, sid)
        data = params.get("data")
        if isinstance(data, dict) and params.get("type") in ("text", "thinking"):  # {"text": ...} for a string
            data = data.get("text", data.get("content", data))
        match params.get("type"):
            case "text" if isinstance(data, str):
                run.text.append(data)
                return TextDelta(session_id=sid, text=data)
            case "thinking" if isinstance(data, str):
                run.thinking.append(data)
                return ThinkingDelta(session_id=sid, text=data)
            case "usage" if isinstance(data, dict):
                run.usage_seen = True
                return Usage(
                    session_id=sid,
                    input_tokens=_int(data.get("input_tokens")),
                    output_tokens=_int(data.get("output_tokens")),
                    model=self.model,
                )
            case "error":
                message = data.get("message") if isinstance(data, dict) else data
                code = data.get("code") if isinstance(data, dict) else None
                return Error(
                    session_id=sid,
                    kind="plugin",
                    message=f"{run.host.label} reported an error"
                    + (f" {code}" if code is not None else "")
                    + f": {message or 'no message'}",
                )
            case "complete":
                run.completed = True
                return None
            case "tool_use" if isinstance(data, dict):
                return self._call(run, sid, _tool_use(data), data.get("id"))
            case "file" if isinstance(data, dict):
                return self._call(run, sid, _file(data), None)
        return self._raw(frame, sid)

    def _raw(self, frame: Frame, sid: str) -> Raw:
        self.unknown += 1
        data = {"method": frame.method, "params": frame.params}
        return Raw(session_id=sid, source=self.name, data=data)

    def _call(self, run: _Run, sid: str, call: ToolCallSpec, tool_id: Any) -> MessageCompleted:
        run.waiting = (call.id, None if tool_id is None else str(tool_id))
        run.host.proc.waiting += 1  # its silence while the loop runs the call is not idleness
        text, run.text = "".join(run.text), []
        thinking, run.thinking = "".join(run.thinking), []
        return MessageCompleted(session_id=sid, text=text, thinking=thinking, tool_calls=[call], stop_reason="tool_use")

    async def _finish(self, run: _Run, frame: Frame, sid: str) -> AsyncIterator[Event]:
        host = run.host
        result = host.check_response(frame, run.rid)  # an error object raises (the run is closed by stream)
        host.proc.close_stdin()  # the run is over: the plugin exits; what it still prints is read first
        loop = asyncio.get_running_loop()
        deadline = loop.time() + host.grace
        while (left := deadline - loop.time()) > 0:
            try:
                late = await host.next(timeout=left)
            except TimeoutError:
                break
            if late is None:
                break
            if isinstance(late, Frame) and kind(late) == "notification":
                event = self._notification(run, late, sid)
                if isinstance(event, MessageCompleted):  # a call after its run ended cannot be answered
                    run.waiting = None
                    host.proc.waiting -= 1
                    yield Error(
                        session_id=sid,
                        kind="plugin",
                        message=f"{host.label} asked for "
                        f"{event.tool_calls[0].name} after its run ended; it was not run",
                    )
                elif event is not None:
                    yield event
        await self._close()
        status = str(result.get("status") or "complete") if isinstance(result, dict) else "complete"
        if status in ("error", "failed", "failure"):
            why = result.get("error") or result.get("message") if isinstance(result, dict) else ""
            raise BackendError(
                f"{host.label} ended its run with status {status!r}" + (f": {why}" if why else ""), kind="agent_error"
            )
        yield MessageCompleted(
            session_id=sid,
            text="".join(run.text),
            thinking="".join(run.thinking),
            stop_reason="end_turn" if status in DONE_STATUSES else status,
        )
        tokens = _int(result.get("tokens_used")) if isinstance(result, dict) else 0
        if tokens and not run.usage_seen:
            yield Usage(session_id=sid, output_tokens=tokens, model=self.model)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _tool_use(data: dict[str, Any]) -> ToolCallSpec:
    name = data.get("name")
    args = data.get("input", {})
    if args is None:
        args = {}
    call_id = new_id("plug")
    if not isinstance(name, str) or not name:
        return ToolCallSpec(id=call_id, name=str(name or "?"), error="the plugin's tool_use has no tool name")
    if not isinstance(args, dict):
        return ToolCallSpec(
            id=call_id, name=name, error=f"the tool's input must be an object, got {type(args).__name__}"
        )
    return ToolCallSpec(id=call_id, name=name, arguments=args)


def _file(data: dict[str, Any]) -> ToolCallSpec:
    action = data.get("action") or "write"
    path = data.get("path")
    call_id = new_id("plug")
    if action == "delete":
        return ToolCallSpec(id=call_id, name="file_delete", arguments={"path": path})
    args = {"path": path, "content": data.get("content")}
    if action != "write":
        return ToolCallSpec(
            id=call_id, name="file_write", arguments=args, error=f"unknown file action {action!r} (write or delete)"
        )
    return ToolCallSpec(id=call_id, name="file_write", arguments=args)


def create_plugin_backend(
    name: str,
    *,
    config: Any,
    model: str | None,
    env: Mapping[str, str],
    workspace: Path | None,
    home: Path | None = None,
) -> PluginBackend:
    """The backend ``plugin:NAME`` (a plugin or an ``[agents]`` alias) in ``workspace``; raises
    :class:`BackendError` (``invalid_request``) when it cannot be found or configured."""
    from monkey.config import monkey_home
    from monkey.backends.plugin.discovery import PluginError, discover, resolve

    ws = (workspace or Path.cwd()).resolve()
    catalog = discover(home or monkey_home(), ws, bool(config.approvals.trust_project))
    try:
        resolved = resolve(name, catalog, config.plugins, config.agents)
        chosen = model or resolved.settings.model or config.agent.model or None
        return PluginBackend(resolved, workspace=ws, base_env=env, model=chosen)
    except PluginError as exc:
        broken = [p for p in catalog.problems if f"/{name}/" in p]
        raise BackendError(str(exc) + (f" ({broken[0]})" if broken else ""), kind="invalid_request") from None
