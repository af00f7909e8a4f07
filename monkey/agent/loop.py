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
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from monkey.agent.background import Background
from monkey.agent.budget import Budget, Exceeded, Limits
from monkey.agent.calls import CallPipeline
from monkey.agent.changes import ChangeGuard
from monkey.agent.client_call import client_turn
from monkey.agent.hook_glue import run_hooks
from monkey.agent.model_call import stream_model
from monkey.agent.person_shell import shell_turn
from monkey.agent.plan_mode import ExitPlanMode, offered, plan_system_prompt
from monkey.agent.processes import settle
from monkey.agent.turn import run_turn
from monkey.agent.turn_guard import StopTurn, budget_event
from monkey.backends.base import Backend
from monkey.context.window import ContextManager
from monkey.events import (
    BackendChanged,
    EndReason,
    Event,
    InstructionRef,
    MessageCompleted,
    SessionEnded,
    SessionStarted,
    ToolCallSpec,
    ToolImage,
    TurnCompleted,
)
from monkey.extensions.hooks import HookResult, Hooks
from monkey.extensions.instructions import Instructions
from monkey.extensions.memory import MemoryRead, MemoryWrite, WorkingMemory
from monkey.extensions.skill_tool import SkillTool
from monkey.extensions.skills import Skill, Skills, granted
from monkey.ids import new_id
from monkey.lsp.diagnostics import Diagnostics
from monkey.messages import STOPPED_WHILE_RUNNING, Message, ModelRequest
from monkey.permissions.policy import ApprovalPolicy
from monkey.permissions.requests import Approver, HeadlessApprover
from monkey.permissions.rules import EXIT_PLAN_MODE
from monkey.prompts import render_system_prompt
from monkey.tools.base import ShellSettings
from monkey.tools.processes import ProcessTable
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
    diagnostics: Diagnostics | None = None  # the session's language servers (monkey.lsp); sub-agents share them


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
        self._cancel_why = self._cancel_said = ""
        """Why the running turn was cancelled when not by a person, or who cancelled it (its end says so)."""
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
        shell = self.options.shell
        self.processes = ProcessTable(limit=shell.background_limit, keep=shell.background_keep, grace=shell.kill_grace)
        """Commands started with ``shell_execute``'s ``background`` (a sub-agent is given its parent's)."""
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
        prompt = render_system_prompt(
            self.options.system_prompt, model=self.backend.model, workspace=str(self.workspace)
        )
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
        the turn (deny rules, the protected set and plan mode still come first), unless its
        ``SKILL.md`` changed since the session found it."""
        rules, _ = granted(skill)  # nothing from a SKILL.md changed since the session started
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
            instructions=[
                InstructionRef(path=f.shown, sha256=f.sha256, bytes=f.size)
                for f in (self.options.instructions.files if self.options.instructions else [])
            ],
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
        return BackendChanged(
            session_id=self.session_id,
            from_backend=old.name,
            from_model=old.model,
            to_backend=backend.name,
            to_model=backend.model,
        )

    def session_ended(self, reason: EndReason, message: str = "") -> SessionEnded:
        """The event that closes the session."""
        return SessionEnded(session_id=self.session_id, reason=reason, message=message, turns=self.turns)

    async def run_task(self, prompt: str, images: Sequence[ToolImage] = ()) -> AsyncGenerator[Event, None]:
        """A whole one-task session: ``session_started``, one turn, ``session_ended``."""
        yield self.session_started()
        last: TurnCompleted | None = None
        async for event in self.run(prompt, images):
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

    def cancel(self, *, why: str = "", said: str = "") -> bool:
        """Cancel the running turn; returns whether there was one. ``why``: the turn's end says it
        (an error, not "cancelled by the user": the session store could not write, say); ``said``: the
        turn is cancelled and its end says this instead of "cancelled by the user" (who cancelled it)."""
        if self.running:
            assert self._task is not None
            self._cancel_why, self._cancel_said = self._cancel_why or why, self._cancel_said or said
            self._task.cancel()
            return True
        return False

    async def run(self, prompt: str, images: Sequence[ToolImage] = ()) -> AsyncIterator[Event]:
        """Run one turn for the user's ``prompt`` (with the ``images`` attached), yielding its events as they happen."""
        async for event in self._drive(lambda emit: run_turn(self, prompt, emit, list(images))):
            yield event

    async def run_shell(self, command: str, *, typed: bool = True) -> AsyncIterator[Event]:
        """Run a shell command the person typed (``!command``) as a turn of its own.

        Decided by the rules, checkpointed, recorded; the command and its output go to the
        model with the next message (see :mod:`monkey.agent.person_shell`). Typed, it runs outside
        the sandbox; ``typed=False``: a command monkey runs for the person from their config
        (``[workflow] verify``), in the sandbox unless ``[shell] trusted_commands = "outside"``.
        """
        sandboxed = None if typed else not self.options.shell.trusted_outside

        async def run_call(call: ToolCallSpec, turn: int, emit: Emit) -> Message:
            return (await self.calls().run(call, turn, emit, by_person=True, sandboxed=sandboxed)).message

        async for event in self._drive(lambda emit: shell_turn(self, command, emit, run_call)):
            yield event

    async def run_tool(self, name: str, arguments: dict[str, Any], *, via: str) -> AsyncIterator[Event]:
        """Run one tool call a program asked for (``via``: who, e.g. an MCP client) as a turn of its own.

        The same path as the model's calls (rules, the protected set, the approver, checkpoint,
        journal, sandbox); no model is called (see :mod:`monkey.agent.client_call`).
        """

        async def run_call(call: ToolCallSpec, turn: int, emit: Emit) -> Message:
            return (await self.calls().run(call, turn, emit)).message

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

        self._queue, self._ending, self._cancel_why, self._cancel_said = queue, 0, "", ""
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

    async def settle_processes(self, turn: int, emit: Emit) -> None:
        """A turn's end for the background processes' changes (:func:`monkey.agent.processes.settle`)."""
        if not self.agent_type:  # a sub-agent's turns leave it to the agent a person talks to
            await settle(self.processes, self.checkpoints, self.session_id, turn, emit)

    def _deliver_background(self) -> None:
        """Give the model what background sub-agents finished (a person's stop of one stops the turn)."""
        for done in self.background.take():
            self.messages.append(Message(role="user", content=done.text))
            if done.stopped:
                self.stopped_by_person = done.stopped
                raise StopTurn("denied", done.stopped)

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
        # An external agent (Claude Code, Codex) keeps its own context and runs its own tools: its tool
        # events pass through for display, and the whole tree is checkpointed around it (see model_call).
        caps = self.backend.capabilities
        whole = caps.runs_own_tools or caps.keeps_own_context  # an agent plugin is handed it all
        messages = list(self.messages) if self.context is None or whole else await self.context.prepare(self, emit)
        request = ModelRequest(
            system=plan_system_prompt(self.system_prompt, self.policy.mode),
            messages=messages,
            tools=self.tool_specs,
            session_id=self.session_id,
            max_tokens=self.options.max_tokens,
        )
        return await stream_model(
            self.backend, request, calls=self.calls(), turn=self.turns, emit=emit, budget=self.budget
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

    def _budget_spent(self, emit: Emit) -> bool:
        """Before a tool call: whether a budget is reached (said once; the turn then ends)."""
        if self._over is None and (over := self.budget.check()) is not None:
            self._over = over
            emit(budget_event(self.session_id, over))
        return self._over is not None

    def calls(self) -> CallPipeline:
        """The call pipeline for this agent's calls, given what it needs as it stands now (the
        approver, policy, guard and hooks may be swapped between turns)."""
        return CallPipeline(
            session_id=self.session_id,
            workspace=self.workspace,
            tools=self.tools,
            policy=self.policy,
            approver=self.approver,
            checkpoints=self.checkpoints,
            shell=self.options.shell,
            hooks=self.options.hooks,
            instructions=self.options.instructions,
            asker=self.asker,
            shown=self._shown,
            ran=self._ran,
            processes=self.processes,
            diagnostics=self.options.diagnostics,
        )

    async def _hooks(
        self, event: str, emit: Emit, *, call: ToolCallSpec | None = None, target: str = "", **payload: Any
    ) -> HookResult | None:
        """Run the hooks of ``event`` (see :func:`monkey.agent.hook_glue.run_hooks`)."""
        return await run_hooks(
            self.options.hooks, self.session_id, self.workspace, event, emit, call=call, target=target, **payload
        )

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
