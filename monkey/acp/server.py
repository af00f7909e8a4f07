"""monkey as an ACP agent: the methods an editor calls (``initialize``, ``session/*``).

Sessions are keyed by monkey's own session id, so ``session/list`` and ``session/load``
name the sessions ``monkey sessions list`` shows. Modes are monkey's permission modes
(:mod:`monkey.modes`: ``default``, ``accept-edits``, ``plan``, ``auto``; rules and protected
paths apply in every one). The client's ``fs/*`` and ``terminal/*`` methods are not used:
monkey's tools run locally, with checkpoints.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError
from acp.helpers import update_agent_message_text, update_available_commands
from acp.schema import (
    AgentCapabilities,
    AvailableCommand,
    AvailableCommandInput,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    SessionCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionMode,
    SessionModeState,
    UnstructuredCommandInput,
)

from monkey.modes import DESCRIPTIONS, LABELS, ModeError, parse_mode
from monkey.modes import MODES as MODE_NAMES
from monkey.acp.approver import AcpApprover
from monkey.acp.prompt import prompt_text
from monkey.acp.replies import HIDDEN
from monkey.acp.session import AcpSession, log, workspace_of
from monkey.session.setup import Questions, SessionRequest

__all__ = ["MonkeyAcpAgent", "MODES", "available_commands"]

MODES = [SessionMode(id=mode, name=LABELS[mode].capitalize(), description=DESCRIPTIONS[mode]) for mode in MODE_NAMES]
"""monkey's permission modes (:mod:`monkey.modes`), as the editor offers them."""


def available_commands() -> list[AvailableCommand]:
    """monkey's commands (:data:`monkey.session.commands.REGISTRY`) as the editor offers them."""
    from monkey.session.commands import REGISTRY

    return [
        AvailableCommand(
            name=c.name.lstrip("/"),
            description=c.help,
            input=AvailableCommandInput(root=UnstructuredCommandInput(hint=c.usage)) if c.usage else None,
        )
        for c in REGISTRY
        if c.name not in HIDDEN
    ]


def editor_servers(servers: Any) -> dict[str, dict[str, Any]]:
    """The editor's ``mcpServers`` (stdio and HTTP) in the ``mcpServers`` JSON shape monkey reads."""
    found: dict[str, dict[str, Any]] = {}
    for server in servers or []:
        name = str(getattr(server, "name", "") or "")
        pairs = lambda items: {str(i.name): str(i.value) for i in items or []}  # noqa: E731
        if getattr(server, "command", None):
            found[name] = {"command": server.command, "args": list(server.args or []), "env": pairs(server.env)}
        elif type(server).__name__ == "SseMcpServer":  # the old SSE transport: monkey speaks streamable HTTP
            log(f"MCP server {name!r} from the editor uses the SSE transport, which monkey does not speak; left out")
        elif getattr(server, "url", None):
            found[name] = {"url": server.url, "headers": pairs(server.headers)}
        else:
            log(f"MCP server {name!r} from the editor is of a kind monkey cannot start; left out")
    return found


def _folder(cwd: str) -> Path:
    """The workspace ``cwd`` names, or an invalid-params error."""
    try:
        return workspace_of(cwd)
    except ValueError as exc:
        raise RequestError.invalid_params({"message": str(exc)}) from None


class MonkeyAcpAgent:
    """The ACP ``Agent`` (see :class:`acp.interfaces.Agent`)."""

    def __init__(self, request: SessionRequest, questions: Questions = Questions()) -> None:
        self.request = request
        """What every session is built from (the editor names the workspace and its MCP servers)."""
        self.questions = questions
        self.client: Any = None
        self.sessions: dict[str, AcpSession] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def on_connect(self, conn: Any) -> None:
        self.client = conn

    async def initialize(
        self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None, **kwargs: Any
    ) -> InitializeResponse:
        from monkey import __version__

        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                mcp_capabilities=McpCapabilities(http=True, sse=False),
                prompt_capabilities=PromptCapabilities(image=True, audio=False, embedded_context=True),
                session_capabilities=SessionCapabilities(list=SessionListCapabilities()),
            ),
            agent_info=Implementation(name="monkey", title="monkey", version=__version__),
            auth_methods=[],
        )

    # -- sessions --------------------------------------------------------------------------

    async def _open(self, cwd: str, mcp_servers: Any, resume: str | None = None) -> AcpSession:
        from monkey.store import StoreError

        from monkey.session.setup import build_agent

        workspace = _folder(cwd)
        approver = AcpApprover(self.client, workspace)
        editor = editor_servers(mcp_servers)  # the person's editor names them: started without asking
        request = self.request.but(workspace=workspace, editor_mcp_servers=editor)
        try:
            setup = await asyncio.to_thread(build_agent, request, approver, self.questions)
        except Exception as exc:  # noqa: BLE001 - bad config or backend: said to the editor, not fatal
            raise RequestError.invalid_params({"message": str(getattr(exc, "message", "") or exc)}) from None
        for notice in setup.notices:
            log(notice)
        session = AcpSession(setup, self.client)
        try:
            await session.open(resume=resume)
        except StoreError as exc:
            await session.close()
            raise RequestError.invalid_params({"message": str(exc)}) from None
        if resume is not None and session.id != resume:  # a prefix matched: the editor must use exact ids
            await session.close()
            raise RequestError.invalid_params({"message": f"no session {resume}"})
        approver.session_id = session.id
        self.sessions[session.id] = session
        return session

    def _modes(self, session: AcpSession) -> SessionModeState:
        return SessionModeState(current_mode_id=session.agent.policy.mode, available_modes=MODES)

    def _offer_commands(self, session: AcpSession) -> None:
        """Send the commands just after the response that names the session, and what the person must
        know before the first prompt (a workspace that holds their home)."""

        async def send() -> None:
            try:
                await session.send(update_available_commands(available_commands()))
                for alert in session.alerts:
                    await session.send(update_agent_message_text(f"monkey: {alert}\n\n"))
            except Exception as exc:  # noqa: BLE001 - the editor went away
                log(f"cannot send the commands: {exc}")

        task = asyncio.get_running_loop().create_task(send())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _session(self, session_id: str) -> AcpSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params(
                {"message": f"no open session {session_id!r}; create one with session/new or open it with session/load"}
            )
        return session

    async def new_session(
        self, cwd: str, additional_directories: list[str] | None = None, mcp_servers: Any = None, **kwargs: Any
    ) -> NewSessionResponse:
        session = await self._open(cwd, mcp_servers)
        self._offer_commands(session)
        return NewSessionResponse(session_id=session.id, modes=self._modes(session))

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: Any = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> LoadSessionResponse:
        session = self.sessions.get(session_id)
        if session is None:
            session = await self._open(cwd, mcp_servers, resume=session_id)
        elif str(session.agent.workspace) != str(_folder(cwd)):
            raise RequestError.invalid_params({"message": f"session {session_id} belongs to {session.agent.workspace}"})
        await session.replay()
        self._offer_commands(session)
        return LoadSessionResponse(modes=self._modes(session))

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        from monkey.store import SessionStore, StoreError

        where = str(_folder(cwd)) if cwd else None
        try:
            async with await SessionStore.open() as store:
                infos = await store.list_sessions(where, limit=100)
        except StoreError as exc:
            raise RequestError.internal_error({"message": str(exc)}) from None
        return ListSessionsResponse(
            sessions=[
                SessionInfo(
                    session_id=i.id,
                    cwd=i.workspace,
                    title=" ".join(i.title.split())[:100] or None,
                    updated_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(i.updated)),
                )
                for i in infos
            ]
        )

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> None:
        session = self._session(session_id)
        try:
            mode = parse_mode(mode_id)
        except ModeError as exc:
            raise RequestError.invalid_params({"message": str(exc)}) from None
        await session.core.command(f"/mode {mode}")  # stored, so resuming goes on in it
        return None

    # -- turns -------------------------------------------------------------------------------

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        session = self._session(session_id)
        if session.working:
            raise RequestError.invalid_request(
                {"message": "a turn is already running in this session; cancel it first"}
            )
        text = prompt_text(prompt, session.agent.workspace)
        if not text.typed:
            raise RequestError.invalid_params({"message": "the prompt is empty"})
        if text.notes and not text.typed.startswith("/"):
            await session.say("\n".join(f"monkey: {n}" for n in text.notes) + "\n\n")
        return PromptResponse(stop_reason=await session.prompt(text.typed, text.prompt, text.images))  # type: ignore[arg-type]

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self.sessions.get(session_id)
        if session is None:
            log(f"cancel for unknown session {session_id!r} ignored")
            return
        session.cancel()

    async def close_all(self) -> None:
        """End every open session (the editor closed the connection)."""
        for session in list(self.sessions.values()):
            try:
                await session.close()
            except Exception as exc:  # noqa: BLE001 - close the others anyway
                log(f"closing session {session.id} failed: {exc}")
        self.sessions.clear()
