"""The ``acp:NAME`` backend: an agent that speaks the Agent Client Protocol runs the turn, monkey is its client.

The agent runs as a supervised child (:class:`~monkey.backends.supervise.AgentProcess`: monkey's
scrubbed environment plus what its entry names, its own process group, the idle watchdog, a
wall-clock cap counted per turn, stderr shown on failure, dies with monkey), kept across turns so it
keeps its own context. It is started at the first turn: ``initialize`` offering file reads and writes
and terminals, ``authenticate`` with the entry's method when the agent lists it, ``session/new`` in
the workspace (``session/load`` of the stored agent session for a resumed one, when the agent says
``loadSession``: what it replays is not stored again), then at once the entry's asking mode, and
monkey's MCP servers the agent may start. Each turn is one ``session/prompt``; what the agent asks and
sends is answered by :class:`~monkey.backends.acp_client.client.AcpClient` through the gate the loop
passes (monkey's one call pipeline). A stopped turn sends ``session/cancel`` and answers every
request still waiting as cancelled. A child that exits, sends garbage or an oversized message, or
stays silent past the idle limit ends the turn with a clear error; the next turn starts a new one.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from monkey.backends.acp_client.agents import AgentEntry
from monkey.backends.acp_client.client import END, AcpClient, Turn
from monkey.backends.acp_client.transport import ProcessTransport
from monkey.backends.acp_client.usage import Tokens, quota_usage
from monkey.backends.base import BackendError, Capabilities, ModelCheck
from monkey.backends.external import last_prompt
from monkey.backends.gate import ToolGate
from monkey.backends.jsonl import DEFAULT_MAX_LINE
from monkey.backends.supervise import AgentProcess, ChildSpec, child_env
from monkey.events import AgentSession, Event, MessageCompleted, Usage
from monkey.messages import ModelRequest

__all__ = ["AcpBackend"]

_REPLAY_QUIET = 0.5
"""Seconds without an update after which a loaded session's replay is taken to be over."""
_REPLAY_MAX = 10.0
"""Seconds at most a first prompt waits for a loaded session's replay to end."""
_ALIVE_WAIT = 5.0
"""Seconds a stopped turn waits for the agent's answer to ``session/cancel`` before it stops waiting."""


class AcpBackend:
    """One ACP agent process serving a session's turns (see the module's docstring)."""

    capabilities = Capabilities(runs_own_tools=True, keeps_own_context=True)
    context_window = 0

    def __init__(
        self,
        entry: AgentEntry,
        executable: str,
        *,
        workspace: Path,
        model: str | None = None,
        base_env: Mapping[str, str] | None = None,
        idle_timeout: float = 600.0,
        wall_timeout: float = 3600.0,
        grace: float = 2.0,
        max_line_bytes: int = DEFAULT_MAX_LINE,
    ) -> None:
        self.entry = entry
        self.executable = executable
        self.name = f"acp:{entry.name}"
        self.model = model or "default"
        self.workspace = Path(workspace).resolve()
        self.base_env = dict(base_env if base_env is not None else os.environ)
        self.idle_timeout = idle_timeout
        self.wall_timeout = wall_timeout
        self.grace = grace
        self.max_line_bytes = max_line_bytes
        self.proc: AgentProcess | None = None
        self.client: AcpClient | None = None
        self.agent_session_id = ""
        self.mode = ""
        """The session mode the agent is in (set by monkey at start), ``""`` when it has none."""
        self.auth_methods: list[str] = []
        self.mcp_servers: list[Any] = []
        """monkey's MCP servers the agent is given (each with ``name``, ``command``, ``args``, ``env``, ``url``,
        ``headers``: :class:`monkey.mcp_client.config.ServerConfig`), set by the session: only those monkey
        itself may start (a project's only in a trusted folder, once its definition was approved)."""
        self.mcp_left_out: list[str] = []
        """Servers not given because the agent does not take their transport (HTTP)."""
        self.can_load = False
        """The agent said ``loadSession`` at ``initialize``."""
        self.loaded = False
        """The agent process's session is the stored one, loaded (``session/load``): it has the conversation."""
        self.load_error = ""
        """Why ``session/load`` failed (then a new session was made), or ``""``."""
        self._transport: ProcessTransport | None = None
        self._conn: Any = None

    # -- the process -------------------------------------------------------------------

    def _why(self, exc: BaseException | None = None) -> str:
        title = self.entry.title
        transport, proc = self._transport, self.proc
        if transport is not None and transport.error:
            return transport.error
        failure = proc.failure() if proc is not None else ""
        if failure:
            return failure
        if proc is not None and proc.returncode is not None:
            tail = proc.stderr.strip()[-800:]
            return f"{title} ended its output (status {proc.returncode})" + (f": {tail}" if tail else "")
        return f"{title} failed: {exc}" if exc is not None else f"{title} stopped answering"

    def _error(self, exc: BaseException | None = None) -> BackendError:
        proc = self.proc
        kind = "timeout" if proc is not None and proc.stopped in ("idle", "wall") else "agent_error"
        if self._transport is not None and self._transport.error:
            kind = "invalid_response"
        return BackendError(self._why(exc), kind=kind)

    async def _start(self) -> list[Event]:
        from acp import PROTOCOL_VERSION
        from acp.client.connection import ClientSideConnection
        from acp.schema import ClientCapabilities, FileSystemCapabilities, Implementation

        from monkey import __version__

        entry = self.entry
        spec = ChildSpec(
            argv=[self.executable, *entry.args],
            cwd=self.workspace,
            env=child_env(self.base_env, entry.env),
            keep_stdin=True,
            idle_timeout=self.idle_timeout,
            wall_timeout=self.wall_timeout,
            grace=self.grace,
            name=entry.title,
        )
        proc = AgentProcess(spec)
        self.proc = proc
        self._transport = transport = ProcessTransport(proc, max_line=self.max_line_bytes, name=entry.title)
        self.client = client = AcpClient(
            workspace=self.workspace, name=self.name, missing_file=entry.missing_file, proc=proc
        )
        transport.start()
        self._conn = conn = ClientSideConnection(client, transport)
        try:
            init = await conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(
                    fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True
                ),
                client_info=Implementation(name="monkey", version=__version__),
            )
            self.auth_methods = [m.id for m in init.auth_methods or []]
            if self.auth_methods and entry.auth_method:
                if entry.auth_method not in self.auth_methods:
                    raise BackendError(
                        f"{entry.title} offers the sign-in methods {', '.join(self.auth_methods)}, not "
                        f"{entry.auth_method!r} (auth_method in [acp_agents.{entry.name}])",
                        kind="invalid_request",
                    )
                await conn.authenticate(method_id=entry.auth_method)
            caps = init.agent_capabilities
            self.can_load = bool(caps is not None and caps.load_session)
            session = await self._load(conn, client, caps) if self.agent_session_id and self.can_load else None
            self.loaded = session is not None
            if session is None:
                session = await conn.new_session(cwd=str(self.workspace), mcp_servers=self._mcp(caps))
                self.agent_session_id = session.session_id
            modes = getattr(session, "modes", None)
            if modes is not None:
                self.mode = modes.current_mode_id
                offered = [m.id for m in modes.available_modes]
                if entry.mode and entry.mode != self.mode:
                    if entry.mode not in offered:
                        raise BackendError(
                            f"{entry.title} offers the modes {', '.join(offered)}, not its asking mode "
                            f"{entry.mode!r} (mode in [acp_agents.{entry.name}]); monkey does not run "
                            "it in a mode that may not ask",
                            kind="invalid_request",
                        )
                    await conn.set_session_mode(session_id=self.agent_session_id, mode_id=entry.mode)
                    self.mode = entry.mode
        except BackendError:
            await self.aclose()
            raise
        except Exception as exc:  # noqa: BLE001 - a RequestError, the connection gone: said with its stderr
            error = self._error(exc)
            await self.aclose()
            raise error from None
        proc.waiting += 1  # no turn runs: its silence is not idleness
        return [AgentSession(agent=self.name, agent_session_id=self.agent_session_id)]

    def _mcp(self, caps: Any) -> list[Any]:
        """monkey's MCP servers as the spec's entries: stdio ones always, HTTP ones when the agent says
        ``mcpCapabilities.http`` (else left out, said in :attr:`mcp_left_out`)."""
        from acp.schema import EnvVariable, HttpHeader, HttpMcpServer, McpServerStdio

        http = bool(caps is not None and caps.mcp_capabilities is not None and caps.mcp_capabilities.http)
        out: list[Any] = []
        self.mcp_left_out = []
        for server in self.mcp_servers:
            if server.url:
                if not http:
                    self.mcp_left_out.append(server.name)
                    continue
                out.append(
                    HttpMcpServer(
                        type="http",
                        name=server.name,
                        url=server.url,
                        headers=[HttpHeader(name=k, value=v) for k, v in server.headers.items()],
                    )
                )
            else:
                out.append(
                    McpServerStdio(
                        name=server.name,
                        command=server.command,
                        args=list(server.args),
                        env=[EnvVariable(name=k, value=v) for k, v in server.env.items()],
                    )
                )
        return out

    async def _load(self, conn: Any, client: AcpClient, caps: Any) -> Any:
        """``session/load`` of the stored agent session (a resumed one); None when the agent no longer has
        it (then a new session gets the conversation as text). What the agent replays of it is not stored
        again: it comes while no turn runs, and is only counted (:attr:`AcpClient.replayed`)."""
        from acp import RequestError

        client.replaying = True
        try:
            response = await conn.load_session(
                cwd=str(self.workspace), session_id=self.agent_session_id, mcp_servers=self._mcp(caps)
            )
            # An agent may go on replaying after its answer (Gemini CLI streams the history in the
            # background): the replay is taken to be over once the agent is quiet for a moment.
            waited = 0.0
            while waited < _REPLAY_MAX:
                client.heard.clear()
                try:
                    await asyncio.wait_for(client.heard.wait(), _REPLAY_QUIET)
                except TimeoutError:
                    break
                waited += _REPLAY_QUIET
        except RequestError as exc:
            self.load_error = str(exc)
            return None
        finally:
            client.replaying = False
        return response if response is not None else _NoModes()

    # -- a turn ------------------------------------------------------------------------

    async def stream(self, request: ModelRequest, gate: ToolGate | None = None) -> AsyncIterator[Event]:
        """One ``session/prompt`` with the latest user message; ``gate`` decides what the agent asks."""
        from acp import RequestError, text_block

        prompt = last_prompt(request)
        sid = request.session_id
        blocks = []
        if self._conn is None:
            for event in await self._start():
                yield _with_session(event, sid)
            earlier = "" if self.loaded else _earlier(request)
            if earlier:  # a resumed session, or a new agent after one failed: it has none of the conversation
                blocks.append(text_block(earlier))
        blocks.append(text_block(prompt))
        conn, client, proc = self._conn, self.client, self.proc
        assert client is not None and proc is not None
        turn = Turn(gate, sid)
        client.turn = turn
        proc.rearm()
        proc.waiting -= 1
        task = asyncio.create_task(conn.prompt(session_id=self.agent_session_id, prompt=blocks))
        task.add_done_callback(lambda _: turn.queue.put_nowait(END))
        finished = False
        try:
            while (item := await turn.queue.get()) is not END:
                yield item
            finished = True
        finally:
            client.turn = None
            client.late += turn.queue.qsize()  # came after the prompt's answer: of no turn, not shown
            stopped = not finished and not task.done()
            if stopped:  # session/cancel first, then the questions still open are answered as cancelled
                stopped = await asyncio.shield(self._tell_cancel(task))
            turn.cancel()
            await asyncio.shield(client.terminals.stop_all())  # no command of this turn outlives it
            if stopped and not task.done():
                await asyncio.shield(self._await_answer(task))
            proc.waiting += 1
        try:
            response = task.result()
        except (RequestError, ConnectionError, OSError) as exc:
            error = (
                self._error(exc)
                if not isinstance(exc, RequestError) or not self._alive()
                else BackendError(f"{self.entry.title} failed the prompt: {exc}", kind="agent_error")
            )
            if not self._alive():
                await self.aclose()
            raise error from None
        text, thinking = "".join(turn.text), "".join(turn.thinking)
        usage = response.usage
        if usage is not None:
            counted: list[Tokens] = [
                (
                    "",
                    usage.input_tokens,
                    usage.output_tokens,
                    usage.cached_read_tokens or 0,
                    usage.cached_write_tokens or 0,
                )
            ]
        else:  # what the agent reported under _meta (see monkey.backends.acp_client.usage)
            counted = turn.usages or quota_usage(response.field_meta)
        for model, given, made, read, wrote in counted:
            yield Usage(
                session_id=sid,
                input_tokens=given,
                output_tokens=made,
                cache_read_tokens=read,
                cache_creation_tokens=wrote,
                model=model or self.model,
            )
        stop = str(response.stop_reason)
        if turn.stopped or stop == "cancelled":
            stop = "cancelled"
        yield MessageCompleted(session_id=sid, text=text, thinking=thinking, stop_reason=stop)

    def _alive(self) -> bool:
        return self._transport is not None and not self._transport.ended.is_set()

    async def _tell_cancel(self, task: asyncio.Task[Any]) -> bool:
        """The turn was stopped: ``session/cancel``, before its permission requests are answered as cancelled
        (an agent told a request was cancelled may end its prompt at once, and would never hear of the cancel).
        False when the agent is gone."""
        try:
            await self._conn.cancel(session_id=self.agent_session_id)
        except (ConnectionError, OSError):  # the agent is gone: nothing to tell
            task.cancel()
            return False
        return True

    async def _await_answer(self, task: asyncio.Task[Any]) -> None:
        """After ``session/cancel``: the prompt's answer for a while (else stop waiting)."""
        try:
            await asyncio.wait_for(asyncio.shield(task), _ALIVE_WAIT)
        except Exception:  # noqa: BLE001 - no answer, a failed one, the agent gone: it is stopped alike
            task.cancel()
            await self.aclose()  # it does not answer its cancel: the next turn starts a fresh one

    async def check_model(self) -> ModelCheck:
        return ModelCheck(None, f"not checked: {self.entry.title} chooses its own model")

    async def aclose(self) -> None:
        """End the connection and stop the agent's process group."""
        conn, transport = self._conn, self._transport
        self._conn = None
        if self.client is not None:
            await self.client.terminals.stop_all()
        if conn is not None:
            try:
                await conn.close()
            except (ConnectionError, OSError, RuntimeError):
                pass  # already gone
        if transport is not None:
            await transport.close()


_EARLIER_LIMIT = 100_000
"""Characters of the earlier conversation a new agent process is given (the latest ones)."""


def _earlier(request: ModelRequest) -> str:
    """The conversation before the latest user messages, as text for an agent that has none of it."""
    messages = list(request.messages)
    while messages and messages[-1].role == "user":
        messages.pop()
    lines = [f"{m.role}: {m.content}" for m in messages if m.role in ("user", "assistant") and m.content]
    if not lines:
        return ""
    text = "\n".join(lines)[-_EARLIER_LIMIT:]
    return f"The conversation so far (kept by monkey, the client):\n{text}\n\n"


class _NoModes:
    """What ``session/load`` answered when its answer was empty (no modes)."""

    modes = None


def _with_session(event: Event, sid: str) -> Event:
    import msgspec

    return msgspec.structs.replace(event, session_id=sid)
