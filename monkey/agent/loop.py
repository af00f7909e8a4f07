"""The agent loop: an async generator of events.

One *turn* is the agent's work on one user message: it calls the model, runs the tool
calls the model asks for (asking for approval where a call is dangerous), feeds the
results back and calls the model again, until the model answers without a tool call or
``max_iterations`` model calls have been made. Each model call is an *iteration*.

The loop never prints and never imports UI code: every sink (terminal, TUI, store,
stream-json) reads the same events. Cancellation is explicit: :meth:`Agent.cancel` stops
the running turn cleanly (children killed, unanswered tool calls closed, a final
``turn_completed`` with reason ``cancelled``).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import msgspec

from monkey.permissions.approval import (
    EXIT_PLAN_MODE,
    ApprovalPolicy,
    ApprovalRequest,
    Approver,
    Decision,
    HeadlessApprover,
    SHELL_TOOL,
    build_request,
)
from monkey.agent.background import Background
from monkey.agent.budget import Budget, Exceeded, Limits
from monkey.agent.client_call import client_turn
from monkey.context.window import ContextManager
from monkey.extensions.memory import MemoryRead, MemoryWrite, WorkingMemory
from monkey.permissions.external_gate import ExternalGate
from monkey.agent.person_shell import shell_turn
from monkey.agent.plan_mode import ExitPlanMode, offered, plan_decided, plan_system_prompt
from monkey.extensions.hooks import MAX_STOP_BLOCKS, HookResult, Hooks
from monkey.extensions.instructions import Instructions
from monkey.extensions.skill_tool import SkillTool
from monkey.extensions.skills import Skill, Skills, tool_rules
from monkey.prompts import render_system_prompt
from monkey.agent.changes import ChangeGuard, CheckpointError, PendingChange
from monkey.backends.base import Backend, BackendError
from monkey.events import (
    ApprovalRequested,
    ApprovalResolved,
    BackendChanged,
    BudgetReached,
    CheckpointCreated,
    EndReason,
    Error,
    Event,
    HookRan,
    InstructionRef,
    InstructionsLoaded,
    IterationStarted,
    MessageCompleted,
    NotUndoable,
    SessionEnded,
    SessionStarted,
    ToolCallEvent,
    ToolCallSpec,
    ToolImage,
    ToolOutput,
    ToolResult,
    ToolStarted,
    TurnCompleted,
    TurnStarted,
    Usage,
)
from monkey.ids import new_id
from monkey.messages import STOPPED_WHILE_RUNNING, Message, ModelRequest
from monkey.tools.base import ShellSettings, Tool, ToolContext, ToolError
from monkey.tools.registry import ToolRegistry

__all__ = ["Agent", "AgentOptions"]

Emit = Callable[[Event], None]


MIN_SKILLS_WINDOW = 16_000
"""Tokens of context window below which a model is offered no skills, working memory or sub-agents."""


@dataclass
class AgentOptions:
    """Limits and settings of the loop."""

    max_iterations: int = 20
    max_repeats: int = 3
    """The same tool call this many times in a row stops the turn."""
    shell: ShellSettings = field(default_factory=ShellSettings)
    system_prompt: str | None = None
    """Overrides the built-in system prompt (rendered with ``{model}`` and ``{workspace}``)."""
    instructions: Instructions | None = None
    """The project's and the user's ``AGENTS.md`` files, added to the system prompt."""
    skills: Skills | None = None
    """The skills the model may load with the ``skill`` tool (listed in the system prompt)."""
    hooks: Hooks | None = None
    """The person's (and a trusted project's) hook commands (see :mod:`monkey.extensions.hooks`)."""
    max_tokens: int = 4096
    plan_tool: bool = True
    """Offer ``exit_plan_mode`` in plan mode (a sub-agent has no plan to propose to the person: False)."""
    limits: Limits = field(default_factory=Limits)
    """The run's budget (see :mod:`monkey.agent.budget`): model responses, dollars, tokens, seconds."""


class _StopTurn(Exception):
    """Ends the turn early with a reason (control flow, never escapes the loop)."""

    def __init__(self, reason: EndReason, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass
class _CallOutcome:
    message: Message
    denied: bool = False
    """Denied by a rule or the headless policy: the task could not do what it meant to."""
    stop: Decision | None = None


class Agent:
    """One conversation with a backend, run turn by turn."""

    def __init__(
        self,
        *,
        backend: Backend,
        workspace: Path,
        tools: ToolRegistry | None = None,
        approver: Approver | None = None,
        policy: ApprovalPolicy | None = None,
        options: AgentOptions | None = None,
        session_id: str | None = None,
        checkpoints: ChangeGuard | None = None,
        messages: list[Message] | None = None,
        turns: int = 0,
        context: ContextManager | None = None,
    ) -> None:
        self.checkpoints = checkpoints
        """Takes a checkpoint and writes a journal entry before every change (None: no undo)."""
        self.backend = backend
        self.workspace = workspace.resolve()
        self.tools = tools if tools is not None else ToolRegistry.default()
        self.approver: Approver = approver if approver is not None else HeadlessApprover()
        self.policy = policy if policy is not None else ApprovalPolicy()
        self.options = options if options is not None else AgentOptions()
        self.session_id = session_id or new_id("s")
        self.messages: list[Message] = list(messages or [])
        """The conversation so far, as sent to the model (restored when resuming)."""
        self.turns = turns
        self.resumed = messages is not None
        """Whether this agent goes on with a stored session."""
        self.context = context
        """Counts, elides and compacts the conversation before each model call (None: sends it as is)."""
        self.started = False
        self._task: asyncio.Task[None] | None = None
        self._queue: asyncio.Queue[Event | None] | None = None
        self._ending = 0
        self._session_hooks_ran = False
        self._cleared = False
        """``/clear`` started a new conversation: the next turn runs ``SessionStart`` with source ``clear``."""
        self.agent_type = ""
        """A sub-agent's definition name (``explore``...); empty for the agent a person talks to. A
        sub-agent's hooks are ``SubagentStart`` / ``SubagentStop`` instead of the session's."""
        self.asker = ""
        """Who this agent's approval requests say asks (a sub-agent's name and task); empty for the agent a
        person talks to."""
        self._ran: set[str] = set()
        """Calls that started running (stored as ``tool_started``): never 'not run' once stopped."""
        self.budget = Budget(self.options.limits)
        """What the run may spend and has spent (a sub-agent's is a child of its parent's)."""
        self._over: Exceeded | None = None
        """The budget a check found reached while tool calls ran (ends the turn)."""
        self.stopped_by_person = ""
        """Why a person stopped the last turn (a denial without a reason); empty when nobody did."""
        self.upstream: Callable[[], Awaitable[None]] | None = None
        """A sub-agent's parent's :meth:`shown`: the child's events pass through the parent's
        stream, so what the child waits to see stored, it waits for up there too."""
        if not self.roomy():
            self.options.skills = None
        self.background = Background()
        """Sub-agents started with ``background`` during the running turn (see :mod:`monkey.agent.background`)."""
        self.memory = WorkingMemory()
        """The model's notes (``memory_write``); restored from the store when resuming."""
        # Given its own tools (a sub-agent gets the ones its definition allows of its parent's),
        # the agent keeps the memory tools only if given them, bound to its own notes.
        if self.roomy() and (tools is None or self.tools.find("memory_write") is not None):
            for name in ("memory_write", "memory_read"):
                self.tools.remove(name)
            self.tools.add(MemoryWrite(self.memory))
            self.tools.add(MemoryRead(self.memory, find=self.find_result, edited=self._edited))
        if self.options.skills is not None and self.options.skills.by_name and self.tools.find("skill") is None:
            skill_tool = SkillTool(self.options.skills)
            skill_tool.on_load = self.use_skill
            self.tools.add(skill_tool)
        if self.options.plan_tool and self.tools.find(EXIT_PLAN_MODE) is None:  # offered only in plan mode
            self.tools.add(ExitPlanMode(lambda: self.policy.mode))
        self.system_prompt = self._system_prompt()
        self.tool_specs = offered(self.tools.specs(), self.policy.mode)
        """What the model is told about the tools, sent with every request (``exit_plan_mode`` in plan mode only)."""
        self._specs_version = self._specs_key()
        self.mcp = None
        """The session's MCP servers (:class:`monkey.mcp_client.McpManager`; None: none): started, if the
        front end did not, and waited for while still connecting, before a model call; their tools come
        and go in :attr:`tools`."""

    def _specs_key(self) -> tuple[int, int, bool]:
        """What :attr:`tool_specs` was made from: the registry, its version, plan mode or not."""
        return id(self.tools), self.tools.version, self.policy.mode == "plan"

    def _system_prompt(self) -> str:
        """The built-in (or configured) prompt for this model, then the instructions."""
        prompt = render_system_prompt(self.options.system_prompt, model=self.backend.model,
                                      workspace=str(self.workspace))
        parts = [prompt]
        if self.options.instructions is not None:
            parts.append(self.options.instructions.prompt())
        if self.options.skills is not None:  # a budget of about 2% of the window (4 characters a token)
            window = self.context.window if self.context is not None and self.context.window else 200_000
            parts.append(self.options.skills.prompt(budget_chars=max(2000, window * 2 // 100 * 4)))
        return "\n\n".join(p for p in parts if p)

    def roomy(self) -> bool:
        """Whether the model's window has room for the extra tools (skills, working memory,
        sub-agents): a small local model's has not, the list and the tools would take the room
        its task needs, and their descriptions lead a tiny model astray."""
        window = self.context.window if self.context is not None else 0
        return not window or window >= MIN_SKILLS_WINDOW

    def refresh_system_prompt(self) -> None:
        """Render the system prompt again (the instructions or the project's memory changed);
        between turns only."""
        self.system_prompt = self._system_prompt()

    def find_result(self, call_id: str) -> Message | None:
        """A tool call's whole result: from the conversation, else from what compaction took out."""
        for m in reversed(self.messages):
            if m.role == "tool" and m.tool_call_id == call_id:
                return m
        return self.context.archive.get(call_id) if self.context is not None else None

    def _edited(self) -> dict[str, str]:
        if self.context is None:
            return {}
        return {**dict.fromkeys(self.context.archive, "compacted"), **self.context.edited}

    def use_skill(self, skill: Skill) -> list[str]:
        """A skill's instructions were loaded: its ``allowed-tools`` are allowed for the rest of
        the turn (deny rules, the protected set and plan mode still come first)."""
        rules, _ = tool_rules(skill)
        return self.policy.allow_for_turn(rules)

    # -- session framing -------------------------------------------------------------

    def session_started(self) -> SessionStarted:
        """The event that opens the session (emitted once by whoever drives the agent)."""
        self.started = True
        return SessionStarted(
            session_id=self.session_id,
            workspace=str(self.workspace),
            backend=self.backend.name,
            model=self.backend.model,
            resumed=self.resumed,
            instructions=[InstructionRef(path=f.shown, sha256=f.sha256, bytes=f.size)
                          for f in (self.options.instructions.files if self.options.instructions else [])],
            mode=self.policy.mode,
        )

    def use_backend(self, backend: Backend) -> BackendChanged:
        """Go on with another backend or model (``/model``, ``/backend``), keeping the conversation.

        Only between turns. The system prompt and the context manager follow the new model;
        the caller closes the old backend.
        """
        if self.running:
            raise RuntimeError("the backend cannot change while a turn runs")
        old, self.backend = self.backend, backend
        self.system_prompt = self._system_prompt()
        if self.context is not None:
            summaries = self.context.summaries
            self.context = ContextManager(backend, settings=self.context.settings)
            self.context.summaries = set(summaries)
        return BackendChanged(session_id=self.session_id, from_backend=old.name, from_model=old.model,
                              to_backend=backend.name, to_model=backend.model)

    def session_ended(self, reason: EndReason, message: str = "") -> SessionEnded:
        """The event that closes the session."""
        return SessionEnded(session_id=self.session_id, reason=reason, message=message, turns=self.turns)

    async def run_task(self, prompt: str) -> AsyncIterator[Event]:
        """A whole one-task session: ``session_started``, one turn, ``session_ended``."""
        yield self.session_started()
        last: TurnCompleted | None = None
        async for event in self.run(prompt):
            if isinstance(event, TurnCompleted):
                last = event
            yield event
        if last is None:  # the consumer closed us early
            return
        if not self.agent_type:  # a sub-agent's end is its SubagentStop
            for ran in await self.end_hooks("other"):
                yield ran
        yield self.session_ended(last.reason, last.message)

    # -- turns -----------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """Whether a turn is in progress."""
        return self._task is not None and not self._task.done()

    @property
    def backlog(self) -> int:
        """Events of the running turn emitted and not yet taken by the consumer (a driver may
        store them together before showing them; see :meth:`monkey.store.Recorder.keep`)."""
        queue = self._queue
        return 0 if queue is None else queue.qsize() - self._ending

    def cancel(self) -> bool:
        """Cancel the running turn; returns whether there was one."""
        if self.running:
            assert self._task is not None
            self._task.cancel()
            return True
        return False

    async def run(self, prompt: str) -> AsyncIterator[Event]:
        """Run one turn for the user's ``prompt``, yielding its events as they happen."""
        async for event in self._drive(lambda emit: self._turn(prompt, emit)):
            yield event

    async def run_shell(self, command: str) -> AsyncIterator[Event]:
        """Run a shell command the person typed (``!command``) as a turn of its own.

        Decided by the rules, checkpointed, recorded; the command and its output go to the
        model with the next message (see :mod:`monkey.agent.person_shell`).
        """
        async def run_call(call: ToolCallSpec, turn: int, emit: Emit) -> Message:
            return (await self._run_call(call, turn, emit, by_person=True)).message

        async for event in self._drive(lambda emit: shell_turn(self, command, emit, run_call)):
            yield event

    async def run_tool(self, name: str, arguments: dict[str, Any], *, via: str) -> AsyncIterator[Event]:
        """Run one tool call a program asked for (``via``: who, e.g. an MCP client) as a turn of its own.

        The same path as the model's calls (rules, the protected set, the approver, checkpoint,
        journal, sandbox); no model is called (see :mod:`monkey.agent.client_call`).
        """
        async def run_call(call: ToolCallSpec, turn: int, emit: Emit) -> Message:
            return (await self._run_call(call, turn, emit)).message

        async for event in self._drive(lambda emit: client_turn(self, name, arguments, via, emit, run_call)):
            yield event

    async def _drive(self, work: Callable[[Emit], Awaitable[None]]) -> AsyncIterator[Event]:
        """Run ``work`` as the current turn, yielding the events it emits as they happen."""
        if self.running:
            raise RuntimeError("a turn is already running")
        queue: asyncio.Queue[Event | None] = asyncio.Queue()
        put = queue.put_nowait

        async def body() -> None:
            try:
                await work(put)
            finally:
                self.policy.end_turn()  # a skill's tools were allowed for this turn only
                self._ending = 1  # the end mark below is no event
                put(None)

        self._queue, self._ending = queue, 0
        self._task = asyncio.create_task(body(), name=f"monkey-turn-{self.turns + 1}")
        try:
            while (event := await queue.get()) is not None:
                yield event
                queue.task_done()  # the consumer has handled it (see _shown)
        finally:
            task = self._task
            if not task.done():
                task.cancel()
                try:
                    await task
                except asyncio.CancelledError:
                    pass

    async def _turn(self, prompt: str, emit: Emit) -> None:
        self.turns += 1
        turn = self.turns
        sid = self.session_id
        emit(TurnStarted(session_id=sid, turn=turn, prompt=prompt))
        if not self._session_hooks_ran or self._cleared:  # the first turn in this process, or after /clear
            source = "clear" if self._cleared else "resume" if self.resumed else "startup"
            self._session_hooks_ran, self._cleared = True, False
            starting = (await self._hooks("SubagentStart", emit, target=self.agent_type, agent_id=sid,
                                          agent_type=self.agent_type) if self.agent_type else
                        await self._hooks("SessionStart", emit, target=source, source=source))
            if starting is not None and starting.context:
                prompt += "\n\n" + "\n".join(starting.context)
        submitted = await self._hooks("UserPromptSubmit", emit, prompt=prompt)
        if submitted is not None and submitted.context:
            prompt += "\n\n" + "\n".join(submitted.context)
        if submitted is None or not submitted.blocked:
            self.messages.append(Message(role="user", content=prompt))
        stop_blocks = 0
        iteration = 0
        result = ""
        reason: EndReason = "completed"
        note = ""
        denials: dict[str, list[str]] = {}
        """Why calls were denied by a rule or policy -> the tools denied for that reason. A person's
        denial with a reason is steering, not a failure: the turn ends by what the model does next."""
        repeats: list[tuple[str, int]] = [("", 0)]
        self.budget.start()
        watchdog = self._wall_watchdog()
        try:
            if submitted is not None and submitted.blocked:
                raise _StopTurn("denied", f"the prompt was blocked by a UserPromptSubmit hook: {submitted.feedback}")
            while True:
                if iteration >= self.options.max_iterations:
                    reason = "max_iterations"
                    note = f"stopped after {iteration} model calls (--max-iterations {self.options.max_iterations})"
                    break
                self._deliver_background()
                self._check_budget(emit, starting=True)
                iteration += 1
                emit(IterationStarted(session_id=sid, turn=turn, iteration=iteration,
                                      max_iterations=self.options.max_iterations))
                message = await self._call_model(emit)
                self.messages.append(
                    Message(role="assistant", content=message.text, thinking=message.thinking,
                            thinking_signature=message.thinking_signature,
                            tool_calls=list(message.tool_calls))
                )
                if not message.tool_calls:
                    result = message.text
                    if self.background.waiting:  # sub-agents at work, or done and not yet heard: their results first
                        if iteration >= self.options.max_iterations:
                            reason = "max_iterations"
                            note = (f"stopped after {iteration} model calls (--max-iterations "
                                    f"{self.options.max_iterations}) with sub-agents still running in the background")
                            break
                        await self.background.wait()
                        continue
                    extra = {"agent_id": sid, "agent_type": self.agent_type} if self.agent_type else {}
                    stopping = await self._hooks("SubagentStop" if self.agent_type else "Stop", emit,
                                                 target=self.agent_type, stop_hook_active=stop_blocks > 0,
                                                 last_assistant_message=message.text, **extra)
                    if stopping is not None and stopping.blocked and stop_blocks < MAX_STOP_BLOCKS:
                        stop_blocks += 1  # a Stop hook sends the model back to work, a few times at most
                        self.messages.append(Message(role="user", content="A Stop hook says the task is not "
                                                     f"done yet:\n{stopping.feedback}"))
                        continue
                    break
                self._check_repeats(message.tool_calls, repeats)
                self._check_budget(emit)
                for outcome in await self._run_calls(message.tool_calls, turn, emit):
                    self.messages.append(outcome.message)
                    if outcome.denied:
                        denials.setdefault(outcome.message.content, []).append(outcome.message.name)
                    if outcome.stop is not None:
                        self._close_unanswered()
                        self.stopped_by_person = outcome.stop.reason or "denied by the user"
                        raise _StopTurn("denied", self.stopped_by_person)
                if self._over is not None:
                    self._close_unanswered()
                    raise _StopTurn("budget", self._over.describe())
        except _StopTurn as stop:
            reason, note = stop.reason, stop.message

        except BackendError as exc:
            reason, note = "error", exc.message
            emit(Error(session_id=sid, message=exc.message, kind=exc.kind, fatal=True))
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            self._close_unanswered()
            reason, note = "cancelled", "cancelled by the user"
            if (over := self._wall_over()) is not None:  # the wall-clock budget's timer stopped it
                reason, note = "budget", over.describe()
                emit(self._budget_event(over))
        except Exception as exc:  # a bug must end the turn with a message, never a traceback
            self._close_unanswered()
            reason, note = "error", f"internal error: {type(exc).__name__}: {exc}"
            emit(Error(session_id=sid, message=note, kind="internal", fatal=True))
        finally:
            if watchdog is not None:
                watchdog.cancel()
            self._over = None
            await self.background.stop()  # the turn ended with sub-agents still running: they end with it
            self.budget.pause()  # the wall clock counts turns, not a person's time between them
        end_turn = getattr(self.backend, "end_turn", None)
        if end_turn is not None:  # an agent plugin's run still open (a denial stopped it, or Esc) is closed
            await end_turn()
        if reason == "completed" and denials:
            reason = "denied"
            count = sum(len(names) for names in denials.values())
            note = f"{count} tool call(s) denied: " + "; ".join(
                f"{', '.join(dict.fromkeys(names))}: {why}" for why, names in denials.items()
            )
        emit(TurnCompleted(session_id=sid, turn=turn, reason=reason, result=result,
                           iterations=iteration, message=note))

    def _deliver_background(self) -> None:
        """Give the model what background sub-agents finished (a person's stop of one stops the turn)."""
        for done in self.background.take():
            self.messages.append(Message(role="user", content=done.text))
            if done.stopped:
                self.stopped_by_person = done.stopped
                raise _StopTurn("denied", done.stopped)

    async def _shown(self) -> None:
        """Wait until the consumer has handled every event emitted so far.

        An approver that talks to a person must not ask before the person has seen what
        led to the question (the streamed text, the tool call).
        """
        if self._queue is not None:
            await self._queue.join()
        if self.upstream is not None:
            await self.upstream()

    async def shown(self) -> None:
        """Wait until the consumer has handled every event emitted so far (see :meth:`_shown`)."""
        await self._shown()

    async def _call_model(self, emit: Emit) -> MessageCompleted:
        await self._shown()  # what came before is stored (durable) before the model is called
        if self.mcp is not None:  # servers still connecting are waited for (each up to its startup_timeout)
            await self.mcp.wait_ready()
        if self._specs_version != self._specs_key():  # an MCP server's tools arrived, a workflow's stage, the mode
            self.tool_specs = offered(self.tools.specs(), self.policy.mode)
            self._specs_version = self._specs_key()
        # An external agent (Claude Code, Codex) keeps its own context and runs its own tools:
        # its tool events pass through for display, and the whole tree is checkpointed around it.
        external = bool(getattr(self.backend, "runs_own_tools", False))
        whole = external or getattr(self.backend, "keeps_own_context", False)  # an agent plugin is handed it all
        messages = (list(self.messages) if self.context is None or whole
                    else await self.context.prepare(self, emit))
        request = ModelRequest(
            system=plan_system_prompt(self.system_prompt, self.policy.mode),
            messages=messages,
            tools=self.tool_specs,
            session_id=self.session_id,
            max_tokens=self.options.max_tokens,
        )
        completed: MessageCompleted | None = None
        pending = None
        if external and self.checkpoints is not None:
            call = ToolCallSpec(id=new_id("run"), name=self.backend.name)
            try:
                pending = await self._checkpoint(call, None, self.turns, emit)
            except ToolError as exc:
                raise BackendError(f"{exc}; {self.backend.name} was not started", kind="checkpoint") from None
        gate = self._external_gate(emit) if external else None
        stream = self.backend.stream(request)
        try:
            async for event in stream:
                if isinstance(event, MessageCompleted):
                    completed = event
                    self.budget.charge(turns=1)
                elif isinstance(event, Usage):
                    self.budget.charge_usage(event)
                emit(event)
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
            if gate is not None:
                self.backend.gate = None  # type: ignore[attr-defined]
                await asyncio.shield(gate.close())  # each call's checkpoint before the run's
            if pending is not None:
                await asyncio.shield(self._checkpoint_done(pending, completed is not None, emit))
        if completed is None:
            raise BackendError(f"the {self.backend.name} backend ended without a message", kind="invalid_response")
        return completed

    def _external_gate(self, emit: Emit) -> ExternalGate:
        """Hand an external agent the gate its own tool calls pass this turn (the loop's own decision)."""
        gate = ExternalGate(session_id=self.session_id, workspace=self.workspace, policy=self.policy,
                            tools=self.tools, shell=self.options.shell, turn=self.turns, emit=emit,
                            approve=self._approve, begin=self._checkpoint if self.checkpoints is not None else None,
                            finish=self._checkpoint_done,
                            hooks=(lambda spec: self._hooks("PreToolUse", emit, call=spec)) if self.options.hooks else None)
        self.backend.gate = gate  # type: ignore[attr-defined]
        return gate

    def _check_repeats(self, calls: list[ToolCallSpec], state: list[tuple[str, int]]) -> None:
        for call in calls:
            key = call.name + "\0" + json.dumps(call.arguments, sort_keys=True, default=str)
            last, count = state[0]
            count = count + 1 if key == last else 1
            state[0] = (key, count)
            if count >= self.options.max_repeats:
                self.messages.pop()  # the assistant message whose calls will not run
                args = json.dumps(call.arguments, default=str)
                if len(args) > 120:
                    args = args[:117] + "..."
                raise _StopTurn(
                    "error",
                    f"the model asked for the same call {count} times in a row ({call.name} {args}); "
                    "stopped, it is not making progress",
                )

    def _close_unanswered(self) -> None:
        """Give every tool call without a result one ('not run', or 'interrupted: may have run' for a
        call that had started), so the history stays valid."""
        answered = {m.tool_call_id for m in self.messages if m.role == "tool"}
        for msg in list(self.messages):
            for call in msg.tool_calls:
                if call.id not in answered:
                    content = STOPPED_WHILE_RUNNING if call.id in self._ran else "not run: the turn was stopped"
                    self.messages.append(
                        Message(role="tool", tool_call_id=call.id, name=call.name, content=content, is_error=True)
                    )

    # -- tool calls ------------------------------------------------------------------

    async def _run_calls(self, calls: list[ToolCallSpec], turn: int, emit: Emit) -> list[_CallOutcome]:
        """Run calls in order; consecutive read-only calls run concurrently, and so do consecutive
        calls of a tool that says it may (``concurrent``: the ``task`` tool's sub-agents)."""
        outcomes: list[_CallOutcome] = []
        batch: list[ToolCallSpec] = []
        batch_kind = ""

        async def flush() -> None:
            if batch and self._budget_spent(emit):
                batch.clear()
                return
            if len(batch) == 1:
                outcomes.append(await self._run_call(batch[0], turn, emit))
            elif batch:
                outcomes.extend(await asyncio.gather(*(self._run_call(c, turn, emit) for c in batch)))
            batch.clear()

        for call in calls:
            tool = self.tools.find(call.name)
            kind = "" if tool is None or tool.dangerous else (
                "read" if tool.read_only else "concurrent" if getattr(tool, "concurrent", False) else "")
            if kind and batch and kind != batch_kind:
                await flush()
            if kind:
                batch.append(call)
                batch_kind = kind
                continue
            await flush()
            if self._budget_spent(emit):
                return outcomes
            outcome = await self._run_call(call, turn, emit)
            outcomes.append(outcome)
            if outcome.stop is not None:
                return outcomes
        await flush()
        return outcomes

    # -- budget ----------------------------------------------------------------------

    def _budget_event(self, over: Exceeded) -> BudgetReached:
        return BudgetReached(session_id=self.session_id, budget=over.budget, used=over.used, limit=over.limit,
                             owner=over.owner, scope=over.scope, earlier=over.earlier)

    def _check_budget(self, emit: Emit, *, starting: bool = False) -> None:
        """End the turn (reason ``budget``) when a budget here or above is reached."""
        over = self.budget.check(starting=starting)
        if over is not None:
            emit(self._budget_event(over))
            if not starting:
                self._close_unanswered()  # the response's calls will not run
            raise _StopTurn("budget", over.describe())

    def _budget_spent(self, emit: Emit) -> bool:
        """Before a tool call: whether a budget is reached (said once; the turn then ends)."""
        if self._over is None and (over := self.budget.check()) is not None:
            self._over = over
            emit(self._budget_event(over))
        return self._over is not None

    def _wall_over(self) -> Exceeded | None:
        over = self.budget.check()
        return over if over is not None and over.budget == "max_wall" else None

    def _wall_watchdog(self) -> asyncio.TimerHandle | None:
        """A timer that stops the running turn when a wall-clock budget here or above runs out."""
        deadline = self.budget.deadline()
        task = asyncio.current_task()
        if deadline is None or task is None:
            return None
        return asyncio.get_running_loop().call_later(max(0.0, deadline - self.budget.clock()), task.cancel)

    async def _run_call(self, call: ToolCallSpec, turn: int, emit: Emit, *, by_person: bool = False) -> _CallOutcome:
        """Decide, checkpoint, run and report one call (``by_person``: a line the person typed, ``!command``)."""
        sid = self.session_id
        tool = self.tools.find(call.name)
        emit(ToolCallEvent(session_id=sid, call_id=call.id, name=call.name, arguments=call.arguments,
                           dangerous=bool(tool and tool.dangerous)))
        started = time.perf_counter()
        waited = 0.0  # seconds a person spent deciding: not part of the call's run time

        def finish(ok: bool, output: str, diff: str = "", denied: bool = False,
                   stop: Decision | None = None, images: list[ToolImage] | None = None) -> _CallOutcome:
            ran_ms = max(0.0, time.perf_counter() - started - waited) * 1000
            emit(ToolResult(session_id=sid, call_id=call.id, name=call.name, ok=ok, output=output,
                            duration_ms=ran_ms, diff=diff, wait_ms=waited * 1000, images=images or []))
            msg = Message(role="tool", tool_call_id=call.id, name=call.name, content=output, is_error=not ok,
                          images=images or [])
            return _CallOutcome(msg, denied=denied, stop=stop)

        if tool is None:
            return finish(False, f"unknown tool {call.name!r}; available tools: {', '.join(self.tools.names())}")
        if call.error:
            return finish(False, call.error)
        ctx = ToolContext(
            workspace=self.workspace,
            call_id=call.id,
            emit=emit,
            shell=self.options.shell,
            read_denied=self._read_denied(),
            emit_output=lambda stream, text: emit(
                ToolOutput(session_id=sid, call_id=call.id, stream=stream, text=text)  # type: ignore[arg-type]
            ),
        )
        try:
            args = tool.parse(call.arguments)
            hook = await self._hooks("PreToolUse", emit, call=call) if self.options.hooks else None
            if hook is not None and hook.decision == "deny":
                emit(ApprovalResolved(session_id=sid, call_id=call.id, name=call.name, decision="denied",
                                      by="rule", reason=f"denied by a PreToolUse hook: {hook.reason}"))
                return finish(False, f"denied by a hook: {hook.reason}", denied=True)
            if hook is not None and hook.updated_input is not None:  # checked again, shown in any question
                call = msgspec.structs.replace(call, arguments=hook.updated_input)
                args = tool.parse(call.arguments)
            hook_says = hook.decision if hook is not None else ""
            guarded = tool.dangerous and self.checkpoints is not None
            paths = tool.touched_paths(args, ctx) if guarded else []
            if not tool.dangerous and (denial := self.policy.denied(call.name, call.arguments, self.workspace)):
                emit(ApprovalResolved(session_id=sid, call_id=call.id, name=call.name, decision="denied",
                                      by=denial.by, reason=denial.reason))  # deny rules cover reads too
                return finish(False, f"denied: {denial.reason}", denied=True)
            if tool.dangerous or hook_says == "ask":
                decision, waited = await self._approve(call, tool, args, ctx, emit, paths, by_person=by_person,
                                                       hook=hook_says)
                if not decision.approved:
                    why = decision.reason or "no reason given"
                    return finish(False, f"denied: {why}", denied=decision.by != "user",
                                  stop=decision if decision.stop else None)
                # Shell syntax runs through a shell only when a person approved this exact line.
                ctx.shell_line_approved = decision.by == "user" or decision.exact_line
                ctx.sandboxed = decision.by != "user"  # a call a person approved or typed is theirs: no sandbox
            tool.check(args, ctx)
            pending = await self._checkpoint(call, paths, turn, emit) if guarded and paths != [] else None
            emit(ToolStarted(session_id=sid, call_id=call.id, name=call.name))
            await self._shown()  # intent before effect: the call is stored as started before it runs
            self._ran.add(call.id)
            ran = False
            try:
                outcome = await tool.run(args, ctx)
                ran = True
            finally:
                if pending is not None:
                    await self._checkpoint_done(pending, ran, emit)
        except ToolError as exc:
            return finish(False, await self._post_hooks(call, False, str(exc), emit))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return finish(False, f"{call.name} failed: {type(exc).__name__}: {exc}")
        if outcome.stopped:  # a person stopped a sub-agent: this turn stops as if they had stopped it
            return finish(False, outcome.output, outcome.diff,
                          stop=Decision(approved=False, by="user", reason=outcome.stopped, stop=True))
        output = self._nested_instructions(call, args, outcome.output, emit)
        return finish(True, await self._post_hooks(call, True, output, emit), outcome.diff, images=outcome.images)

    async def _hooks(self, event: str, emit: Emit, *, call: ToolCallSpec | None = None, target: str = "",
                     **payload: Any) -> HookResult | None:
        """Run the hooks of ``event`` (for ``call``'s tool, or ``target``: a source, trigger or
        notification type), each run an event; None without hooks."""
        hooks = self.options.hooks
        if not hooks:
            return None
        data: dict[str, Any] = {"session_id": self.session_id, "cwd": str(self.workspace), **payload}
        if call is not None:
            data.update(tool_name=call.name, tool_input=call.arguments)
        result = await hooks.run(event, data, tool=call.name if call is not None else target)
        for run in result.runs:
            emit(HookRan(session_id=self.session_id, hook_event=run.event, command=run.command, outcome=run.outcome,
                         exit_code=run.exit_code, duration_ms=run.duration_ms, message=run.message,
                         call_id=call.id if call is not None else ""))
        return result

    async def pre_compact(self, trigger: str, emit: Emit) -> None:
        """``PreCompact`` hooks, before the conversation is compacted (they cannot stop it)."""
        await self._hooks("PreCompact", emit, target=trigger, trigger=trigger, custom_instructions="")

    async def post_compact(self, emit: Emit) -> str:
        """``SessionStart`` hooks with source ``compact``, after a compaction (a sub-agent runs none):
        what they give the model to go on with the summary (instructions it must not lose)."""
        if self.agent_type:
            return ""
        result = await self._hooks("SessionStart", emit, target="compact", source="compact")
        return "\n".join(result.context) if result is not None else ""

    def leave_session(self) -> None:
        """A front end opens another session with this agent: the conversation and the turn count
        start afresh, and its first turn runs ``SessionStart`` (``resume`` when it is a stored one)."""
        self.messages.clear()
        self.started = False
        self.turns = 0
        self.resumed = False  # open_session sets it again for a stored session
        self._session_hooks_ran = self._cleared = False

    def clear(self) -> None:
        """``/clear``: a new conversation in the same session; the next turn's ``SessionStart`` says ``clear``."""
        self.messages.clear()
        self._cleared = True

    async def end_hooks(self, reason: str) -> list[Event]:
        """Run the ``SessionEnd`` hooks; their ``hook_ran`` events, for the driver to store and
        show before ``session_ended``."""
        ran: list[Event] = []
        await self._hooks("SessionEnd", ran.append, reason=reason)
        return ran

    async def _post_hooks(self, call: ToolCallSpec, ok: bool, output: str, emit: Emit) -> str:
        """``output`` with what ``PostToolUse`` (or ``PostToolUseFailure``) hooks tell the model."""
        event = "PostToolUse" if ok else "PostToolUseFailure"
        result = await self._hooks(event, emit, call=call, tool_response={"ok": ok, "output": output})
        if result is None or not (result.blocked or result.context):
            return output
        said = "\n".join([*result.context, *([result.feedback] if result.blocked else [])])
        return f"{output}\n\n<hook {event}>\n{said}\n</hook>"

    def _nested_instructions(self, call: ToolCallSpec, args: object, output: str, emit: Emit) -> str:
        """``output`` with the instruction files of the folders below the workspace that this
        call touched for the first time (see :meth:`Instructions.below`)."""
        instructions = self.options.instructions
        path = getattr(args, "path", None)
        if instructions is None or not isinstance(path, str) or not path:
            return output
        found = instructions.below(self.workspace, path)
        if not found:
            return output
        emit(InstructionsLoaded(session_id=self.session_id, call_id=call.id,
                                files=[InstructionRef(path=f.shown, sha256=f.sha256, bytes=f.size) for f, _ in found]))
        blocks = "".join(f"\n\n<instructions from {f.shown}; follow them for files in its folder>\n"
                         f"{text.strip()}\n</instructions>" for f, text in found)
        return output + blocks

    def _read_denied(self):  # type: ignore[no-untyped-def]  # Callable[[str], bool] | None
        """Whether a deny rule forbids reading a file (searches skip it); None when no rule can."""
        if not any(rule.tool == "file_read" for rule in self.policy.deny):
            return None
        return lambda rel: self.policy.denied("file_read", {"path": rel}, self.workspace) is not None

    async def _checkpoint(self, call: ToolCallSpec, paths: list[str] | None, turn: int,
                          emit: Emit) -> PendingChange:
        """Checkpoint what the call will change; a failure means the call does not run."""
        assert self.checkpoints is not None
        try:
            pending = await asyncio.to_thread(self.checkpoints.begin, tool=call.name, paths=paths,
                                              session_id=self.session_id, turn=turn, call_id=call.id)
        except CheckpointError as exc:
            raise ToolError(str(exc)) from None
        emit(CheckpointCreated(session_id=self.session_id, checkpoint_id=pending.checkpoint_id, tool=call.name,
                               paths=list(pending.paths), turn=turn, call_id=call.id))
        return pending

    async def _checkpoint_done(self, pending: PendingChange, ok: bool, emit: Emit) -> None:
        assert self.checkpoints is not None
        warning = await asyncio.to_thread(self.checkpoints.finish, pending, ok=ok,
                                          error="" if ok else "the tool failed")
        if items := pending.not_undoable():  # said now, not found out at undo time
            emit(NotUndoable(session_id=self.session_id, checkpoint_id=pending.checkpoint_id,
                             tool=getattr(pending, "tool", ""), call_id=getattr(pending, "call_id", ""), items=items))
        if warning:
            emit(Error(session_id=self.session_id, message=warning, kind="checkpoint"))

    def _keep_rules(self, call: ToolCallSpec, emit: Emit) -> None:
        """"Always allow": save the call's rules to the user's config (a failure is said, not fatal)."""
        try:
            self.policy.keep(call.name, call.arguments)
        except OSError as exc:
            emit(Error(session_id=self.session_id, kind="config",
                       message=f"could not save the rule to your config (it holds for this session): {exc}"))

    async def _approve(self, call: ToolCallSpec, tool: Tool, args: object, ctx: ToolContext,
                       emit: Emit, paths: list[str] | None = None, by_person: bool = False,
                       person_only: str = "", unsandboxed: bool = False, hook: str = "") -> tuple[Decision, float]:
        """The decision on a dangerous call, and the seconds spent waiting for a person's answer.

        A call the person typed (``by_person``) is approved by that, unless a rule denies it.
        ``person_only``: why only a person's approval of this exact call may let it run, besides
        what the policy finds (an external agent's write that monkey's own tools would refuse).
        ``unsandboxed``: the command will not run in monkey's sandbox (an external agent's own), so
        it is decided as where there is none (auto mode then asks too).
        """
        sid = self.session_id
        policy = replace(self.policy, sandboxed=False) if unsandboxed else self.policy
        decision = policy.check(call.name, call.arguments, self.workspace)
        if by_person and (decision is None or decision.approved):
            decision = Decision(approved=True, by="user", reason="typed by the person", exact_line=True)
        waited = 0.0
        big = self.checkpoints.oversized(paths) if self.checkpoints is not None and paths else []
        protected = None if by_person else (self.policy.needs_person(call.name, call.arguments, self.workspace)
                                            or tool.needs_person(args))
        person_only = "; ".join([*([protected] if protected else []), *([person_only] if person_only else []), *big])
        if person_only and decision is not None and decision.approved:
            decision = None  # a large file, a changed MCP tool, a path monkey's file tools refuse: a person's approval
        if hook == "ask" and decision is not None and decision.approved and decision.by != "user":
            decision = None  # a PreToolUse hook wants a person to decide
        elif hook == "allow" and decision is None and not person_only:  # never over a deny rule or a protected path
            decision = Decision(approved=True, by="rule", reason="allowed by a PreToolUse hook")
        if decision is None:
            request: ApprovalRequest = build_request(call.id, call.name, call.arguments, tool.preview(args, ctx))
            if call.name == SHELL_TOOL:
                request = replace(request, unsandboxed=policy.sandboxed,
                                  no_sandbox=policy.mode == "auto" and not policy.sandboxed)
            if self.asker:
                request = replace(request, asker=self.asker)
            if not person_only and hook != "ask":  # the engine again, for an approver that kept it waiting
                request = replace(request, recheck=lambda: policy.check(call.name, call.arguments, self.workspace))
            if person_only:
                warning = f"only this call can be approved: {person_only}"
                request = replace(request, warnings=[*request.warnings, warning], grant="", rules=[],
                                  person_only=person_only)
            emit(ApprovalRequested(session_id=sid, call_id=call.id, name=call.name, arguments=call.arguments,
                                   summary=request.summary, warnings=request.warnings))
            if not isinstance(self.approver, HeadlessApprover):  # somebody is asked: tell the person's tools
                await self._hooks("Notification", emit, target="permission_prompt",
                                  notification_type="permission_prompt",
                                  message=f"monkey needs your permission to use {call.name}")
            await self._shown()
            asked = time.perf_counter()
            decision = await self.approver.decide(request)
            waited = time.perf_counter() - asked
            if person_only and decision.approved:
                decision = replace(decision, scope="once")
            elif big and not decision.approved:
                decision = replace(decision, reason=f"{'; '.join(big)}; {decision.reason}")
            if decision.approved and decision.scope != "once":
                self.policy.remember(call.name, call.arguments)
            if decision.approved and decision.scope == "always":
                self._keep_rules(call, emit)
        if call.name == EXIT_PLAN_MODE and self.policy.mode == "plan":  # the plan kept; approved, it switches the mode
            decision = plan_decided(self.policy, self.workspace, sid, call.id, str(call.arguments.get("plan", "")),
                                    decision, emit)
        if decision.approved:
            label = {"once": "approved", "session": "approved_session", "always": "approved_always"}[decision.scope]
        else:
            label = "denied"
        emit(ApprovalResolved(session_id=sid, call_id=call.id, name=call.name, decision=label,  # type: ignore[arg-type]
                              by=decision.by, reason=decision.reason))
        return decision, waited
