"""monkey as the client of an ACP agent: every request the agent sends is answered here.

- ``session/update`` becomes monkey's typed events (text, thinking, tool calls and their results with
  diffs, the plan as a ``raw`` event), queued for the turn; the loop stores each before it is shown.
- ``session/request_permission`` is decided by the turn's gate (:class:`~monkey.backends.gate.ToolGate`:
  the agent's one call pipeline) as the monkey calls it corresponds to (:mod:`.calls`). The agent is
  answered only "allow once" or "reject once": never its "always", or it would stop asking; what a
  person allows for good is kept as monkey's own grant.
- ``fs/write_text_file`` is the hard gate: the workspace guard, then the engine unless an allowed
  permission request of this turn named that path (then that call's checkpoint is open), a checkpoint
  and a journal entry, then the write, so ``monkey undo`` reverts it.
- ``fs/read_text_file`` passes the read rules (a deny rule refuses it); a missing file is answered
  as the agent's entry says (the spec's "not found", or empty content).
- ``terminal/*`` run the agent's commands as monkey's own ``shell_execute`` calls (:mod:`.terminals`);
  any request monkey does not know gets "method not found" at once.
"""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp import RequestError
from acp.schema import (
    AllowedOutcome,
    CreateTerminalResponse,
    DeniedOutcome,
    KillTerminalResponse,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

from monkey.backends.acp_client.calls import content_text, diff_text, gate_calls, tool_arguments
from monkey.backends.acp_client.terminals import Terminals
from monkey.backends.acp_client.usage import Tokens, meta_usage
from monkey.backends.gate import READ_TOOLS, REFUSED_WITHOUT_GATE, GateAnswer, GateCall, ToolGate
from monkey.events import Event, Raw, TextDelta, ThinkingDelta, ToolCallEvent, ToolResult
from monkey.tools.base import ToolError
from monkey.tools.workspace import relative, resolve_path

if TYPE_CHECKING:
    from monkey.backends.supervise import AgentProcess

__all__ = ["END", "AcpClient", "Turn"]

END = object()
"""Put on a turn's queue when its prompt's answer came (or failed)."""
_SAFE_KINDS = frozenset({"read", "search", "think"})
_writes = itertools.count(1)


class Turn:
    """What one ``session/prompt`` collects: its events, its text, the permissions it allowed."""

    def __init__(self, gate: ToolGate | None, session_id: str) -> None:
        self.gate = gate
        self.session_id = session_id
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.text: list[str] = []
        self.thinking: list[str] = []
        self.names: dict[str, str] = {}
        """The agent's tool call ids seen, with the name their events carry."""
        self.finished: set[str] = set()
        self.covered: dict[str, str] = {}
        """Workspace-relative path → the id of the allowed call whose checkpoint is open for it."""
        self.usages: list[Tokens] = []
        """Usage the agent reported in its updates' ``_meta`` (one per model call)."""
        self.commands: dict[str, str] = {}
        """Command line → the id of the allowed ``execute`` request that asked for it (a terminal may run it)."""
        self.deciding: set[asyncio.Task[GateAnswer]] = set()
        self.stopped = False
        """The person asked to stop the turn (a denial with stop)."""

    def put(self, event: Event) -> None:
        self.queue.put_nowait(event)

    def cancel(self) -> None:
        """Stop every decision still waiting (a person's dialog): its request is answered as cancelled."""
        for task in list(self.deciding):
            task.cancel()


class AcpClient:
    """The ``acp.Client`` monkey is to one agent process (see the module's docstring)."""

    def __init__(self, *, workspace: Path, name: str, missing_file: str, proc: AgentProcess) -> None:
        self.workspace = workspace
        self.name = name
        self.missing_file = missing_file
        self.proc = proc
        self.turn: Turn | None = None
        self.late = 0
        """Updates that came while no turn ran (after a prompt's answer): not shown, counted."""
        self.replaying = False
        """A ``session/load`` is under way: the updates are the agent's replay of the stored session."""
        self.replayed = 0
        self.heard = asyncio.Event()
        """Set by each update of a replay (monkey waits for the replay to end before the first prompt)."""
        """Updates of a loaded session's replay: already stored as monkey's events, not stored again."""
        self.terminals = Terminals(workspace)
        self.answers: list[str] = []
        """The option kinds (or ``cancelled``) monkey answered permission requests with, in order."""

    # -- decisions ---------------------------------------------------------------------

    async def _decide(self, turn: Turn, call: GateCall) -> GateAnswer:
        if turn.gate is None:
            return GateAnswer(False, REFUSED_WITHOUT_GATE)
        task = asyncio.ensure_future(turn.gate.decide(call))
        turn.deciding.add(task)
        self.proc.waiting += 1
        try:
            return await task
        finally:
            self.proc.waiting -= 1
            turn.deciding.discard(task)

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **_: Any
    ) -> RequestPermissionResponse:
        turn = self.turn
        if turn is None:
            return self._answer(options, None)
        answer = GateAnswer(False, "nothing to decide")
        calls = gate_calls(tool_call, self.workspace, self.proc.pid)
        try:
            for call in calls:
                answer = await self._decide(turn, call)
                if not answer.allow:
                    break
        except asyncio.CancelledError:
            if asyncio.current_task() is not None and asyncio.current_task().cancelling():  # type: ignore[union-attr]
                raise
            return self._answer(options, None)
        if answer.stop:
            turn.stopped = True
        if answer.allow:
            for call in calls:
                if call.tool not in READ_TOOLS and call.arguments.get("path"):
                    turn.covered[str(call.arguments["path"])] = call.call_id
                if call.tool == "shell_execute" and call.call_id:
                    turn.commands[str(call.arguments.get("command", ""))] = call.call_id
        return self._answer(options, answer.allow)

    def _answer(self, options: list[Any], allow: bool | None) -> RequestPermissionResponse:
        want = "allow_once" if allow else "reject_once"
        chosen = next((o for o in options if o.kind == want), None) if allow is not None else None
        if chosen is None:  # never the agent's "always": without a once option the request is cancelled
            self.answers.append("cancelled")
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        self.answers.append(want)
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=chosen.option_id))

    # -- files -------------------------------------------------------------------------

    def _target(self, path: str, *, for_write: bool) -> tuple[Path, str]:
        try:
            target = resolve_path(self.workspace, path, for_write=for_write)
        except ToolError as exc:
            raise RequestError(-32000, f"monkey refused {path}: {exc}") from None
        return target, relative(self.workspace, target)

    async def write_text_file(self, session_id: str, path: str, content: str, **_: Any) -> WriteTextFileResponse:
        turn = self.turn
        if turn is None:
            raise RequestError(-32000, "monkey refused the write: no prompt of the agent's is running")
        target, rel = self._target(path, for_write=True)
        own = ""
        if rel not in turn.covered:  # no allowed permission request named it: the engine decides the write
            own = f"acp-write-{next(_writes)}"
            answer = await self._decide(
                turn,
                GateCall(
                    call_id=own,
                    agent_tool="fs/write_text_file",
                    tool="file_write",
                    arguments={"path": rel, "content": content},
                    raw={"path": path},
                    reason=f"write {rel}",
                ),
            )
            if not answer.allow:
                if answer.stop:
                    turn.stopped = True
                raise RequestError(-32000, answer.message or "denied by monkey")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")
        except OSError as exc:
            if own and turn.gate is not None:
                await turn.gate.done(own, False)
            raise RequestError(-32000, f"cannot write {rel}: {exc.strerror or exc}") from None
        if own and turn.gate is not None:
            await turn.gate.done(own, True)
        return WriteTextFileResponse()

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None, **_: Any
    ) -> ReadTextFileResponse:
        turn = self.turn
        target, rel = self._target(path, for_write=False)
        if turn is not None:
            answer = await self._decide(
                turn,
                GateCall(
                    call_id=f"acp-read-{next(_writes)}",
                    agent_tool="fs/read_text_file",
                    tool="file_read",
                    arguments={"path": rel},
                    raw={"path": path},
                ),
            )
            if not answer.allow:
                raise RequestError(-32000, answer.message or "denied by monkey")
        if not target.is_file():
            if self.missing_file == "empty" and not target.exists():
                return ReadTextFileResponse(content="")
            raise RequestError.resource_not_found(path)
        try:
            text = target.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise RequestError(-32000, f"cannot read {rel}: {exc.strerror or exc}") from None
        if line or limit:
            lines = text.splitlines(keepends=True)
            start = max((line or 1) - 1, 0)
            text = "".join(lines[start : start + limit] if limit else lines[start:])
        return ReadTextFileResponse(content=text)

    # -- updates -----------------------------------------------------------------------

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        turn = self.turn
        if turn is None:
            if self.replaying:
                self.replayed += 1
                self.heard.set()
            else:
                self.late += 1
            return
        sid = turn.session_id
        tokens = meta_usage(getattr(update, "field_meta", None))
        if tokens is not None:
            turn.usages.append(tokens)
        kind = getattr(update, "session_update", "")
        if kind in ("agent_message_chunk", "agent_thought_chunk"):
            text = getattr(update.content, "text", None)
            if isinstance(text, str) and text:
                if kind == "agent_message_chunk":
                    turn.text.append(text)
                    turn.put(TextDelta(session_id=sid, text=text))
                else:
                    turn.thinking.append(text)
                    turn.put(ThinkingDelta(session_id=sid, text=text))
        elif kind in ("tool_call", "tool_call_update"):
            await self._tool_update(turn, update)
        elif kind == "plan":
            entries = [{"content": e.content, "status": e.status, "priority": e.priority} for e in update.entries]
            turn.put(Raw(session_id=sid, source=f"{self.name}:plan", data={"entries": entries}))

    async def _tool_update(self, turn: Turn, update: Any) -> None:
        call_id = str(update.tool_call_id)
        sid = turn.session_id
        if call_id not in turn.names:
            name = str(update.kind or "other")
            turn.names[call_id] = name
            turn.put(
                ToolCallEvent(
                    session_id=sid,
                    call_id=call_id,
                    name=name,
                    arguments=tool_arguments(update, self.workspace),
                    dangerous=name not in _SAFE_KINDS,
                )
            )
        status = getattr(update, "status", None)
        if status in ("completed", "failed") and call_id not in turn.finished:
            turn.finished.add(call_id)
            ok = status == "completed"
            turn.put(
                ToolResult(
                    session_id=sid,
                    call_id=call_id,
                    name=turn.names[call_id],
                    ok=ok,
                    output=content_text(update),
                    diff=diff_text(update, self.workspace),
                )
            )
            for path in [p for p, c in turn.covered.items() if c == call_id]:
                del turn.covered[path]
            if turn.gate is not None:
                await turn.gate.done(call_id, ok)

    # -- terminals: commands through monkey's pipeline (:mod:`.terminals`) -----------------

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[Any] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **_: Any,
    ) -> CreateTerminalResponse:
        turn = self.turn
        if turn is None:
            raise RequestError(-32000, "monkey refused the command: no prompt of the agent's is running")

        def stopped() -> None:
            turn.stopped = True

        self.proc.waiting += 1  # a person may be asked
        try:
            return await self.terminals.create(
                turn.gate,
                command=command,
                args=args,
                env=env,
                cwd=cwd,
                output_byte_limit=output_byte_limit,
                covered=turn.commands,
                stopped=stopped,
            )
        finally:
            self.proc.waiting -= 1

    async def terminal_output(self, session_id: str, terminal_id: str, **_: Any) -> TerminalOutputResponse:
        return self.terminals.output(terminal_id)

    async def release_terminal(self, session_id: str, terminal_id: str, **_: Any) -> ReleaseTerminalResponse:
        return await self.terminals.release(terminal_id)

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str, **_: Any) -> WaitForTerminalExitResponse:
        self.proc.waiting += 1  # a long command is not the agent's silence
        try:
            return await self.terminals.wait(terminal_id)
        finally:
            self.proc.waiting -= 1

    async def kill_terminal(self, session_id: str, terminal_id: str, **_: Any) -> KillTerminalResponse:
        return await self.terminals.kill(terminal_id)

    # -- what monkey does not offer ----------------------------------------------------

    async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> Any:
        raise RequestError.method_not_found("elicitation/create")

    async def complete_elicitation(self, elicitation_id: str, **kwargs: Any) -> None:
        return None

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    def on_connect(self, conn: Any) -> None:
        return None
