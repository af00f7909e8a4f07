"""Sub-agents: the ``task`` tool runs a child agent and hands its parent a :class:`~monkey.events.Handoff`.

A ``task`` call is a tool call like any other: the loop's permission engine decides it (deny
rules, ``task`` in a rule), it is recorded, and it runs in the loop's call path. Its child is a
new :class:`~monkey.agent.loop.Agent` with its own conversation and session id, in the parent's
workspace (or, with ``isolation: worktree``, in a git worktree of its own: :mod:`monkey.agent.isolation`),
with a subset of the parent's tools (the definition's allowlist, never a tool the parent lacks),
the parent's approver, rules, grants and checkpoint guard (so every change it makes asks like
the parent's and is undoable), a mode never more permissive than the parent's,
and a budget that is a child of the parent's (charged to the root, stopped with it).

The child's events go into the parent's stream as they happen, with the child's session id;
a :class:`~monkey.events.SubagentStarted` event of the parent's session ties that session to the
``task`` call first. The child waits for its events to be stored by the parent's driver
wherever the parent would (durable before visible).

Limits, shared by the whole tree through one :class:`Delegation`: the depth (``max_depth``,
1 to 5: the deepest agents are not offered ``task``, and a call that gets through anyway is
refused), cycles (an agent already on the call stack is refused, naming the chain), at most
``max_parallel`` children of one agent running at once (more wait), ``max_per_turn`` children
per turn.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Annotated, Any

import msgspec

from monkey.agent import subagent_limits
from monkey.agent.agent_defs import AgentDef, AgentDefs
from monkey.agent.background import Finished
from monkey.agent.isolation import Isolated, isolate, release
from monkey.agent.loop import Agent, AgentOptions
from monkey.prompts import load_prompt
from monkey.extensions.skills import Skills
from monkey.events import (
    CheckpointCreated,
    Event,
    Handoff,
    SessionEnded,
    SubagentCompleted,
    SubagentStarted,
    ToolResult,
    TurnCompleted,
)
from monkey.ids import new_id
from monkey.tools.base import Tool, ToolContext, ToolError, ToolOutcome, load_description
from monkey.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from collections.abc import Callable

    from monkey.backends.base import Backend

__all__ = ["TaskTool", "TaskArgs", "Delegation", "install_task_tool", "handoff_text", "MAX_DEPTH"]

MAX_DEPTH = subagent_limits.MAX_DEPTH
"""The deepest ``max_depth`` may be set."""
OWN_TOOLS = frozenset({"task", "skill", "exit_plan_mode"})  # exit_plan_mode: a child proposes no plan
"""Tools bound to the agent that has them (a child gets its own, not its parent's; the memory tools
given to a child are bound to its own notes by :class:`~monkey.agent.loop.Agent`)."""
KEY_OUTPUTS = 5
SUMMARY_CHARS = 4000


class TaskArgs(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Arguments of task."""

    description: Annotated[str, msgspec.Meta(description="A short (3-5 word) label for the sub-task.")]
    prompt: Annotated[
        str, msgspec.Meta(description="Everything the sub-agent needs: the goal, what you know, what to report back.")
    ]
    agent: Annotated[str, msgspec.Meta(description="Which agent (see the list in this tool's description).")] = (
        "general"
    )
    background: Annotated[
        bool,
        msgspec.Meta(
            description=(
                "Return at once and let the sub-agent work while you go on; its handoff reaches you in a message "
                "when it ends. Several task calls in one response run in parallel without it."
            )
        ),
    ] = False


@dataclass
class Delegation:
    """What every ``task`` call of one run shares: the agents, the limits and the running count."""

    defs: AgentDefs
    max_depth: int = 2
    max_parallel: int = 4
    max_per_turn: int = 8
    make_backend: Callable[[str, str | None], Backend] | None = None
    """Builds a backend by name and model (for a definition that names its own, or to give an
    external agent's child a process of its own); None: children use their parent's."""
    started: dict[str, int] = field(default_factory=dict)
    """Children started so far, by agent name (numbers them: ``explore#1``, ``explore#2``)."""

    def __post_init__(self) -> None:
        subagent_limits.check_limits(self.max_depth, self.max_parallel, self.max_per_turn)


def install_task_tool(
    agent: Agent, delegation: Delegation, *, depth: int = 0, stack: tuple[str, ...] = ("main",)
) -> TaskTool | None:
    """Offer ``agent`` the ``task`` tool (unless it is at the deepest level, or its model's window
    is too small for it: see :meth:`Agent.roomy`); the tool, or None."""
    if depth >= delegation.max_depth or not delegation.defs.by_name or not agent.roomy():
        return None
    tool = TaskTool(agent, delegation, depth=depth, stack=stack)
    agent.tools.add(tool)  # the loop sends the new specs with the next model call
    return tool


def handoff_text(h: Handoff) -> str:
    """The handoff as the parent's model reads it: a few labelled lines, then the summary."""
    state = "yes" if h.completed else f"no ({h.reason}{': ' + h.message if h.message else ''})"
    lines = [
        f"agent: {h.agent} (session {h.session_id})",
        f"completed: {state}",
        f"turns: {h.turns}, cost: ${h.cost_usd:.4f}",
        f"files changed: {', '.join(h.files_changed) if h.files_changed else 'none'}",
    ]
    if h.worktree:
        lines.append(
            f"worktree: {h.worktree} (branch {h.branch}); its changes are there, not in your workspace: "
            f"the person merges the branch"
        )
    if h.key_outputs:
        lines.append("key outputs:")
        lines += [f"- {line}" for line in h.key_outputs]
    lines.append("summary:")
    lines.append(h.summary.strip() or "(no answer)")
    return "\n".join(lines)


class TaskTool(Tool[TaskArgs]):
    """Runs a sub-agent on a part of the task and returns its handoff."""

    name = "task"
    Args = TaskArgs
    dangerous = False
    read_only = False
    concurrent = True
    """Several calls in one response run at once (the loop batches them; see :attr:`Delegation.max_parallel`)."""

    def __init__(self, parent: Agent, delegation: Delegation, *, depth: int, stack: tuple[str, ...]) -> None:
        self.parent = parent
        self.delegation = delegation
        self.depth = depth
        """The parent's depth: 0 for the agent the person talks to."""
        self.stack = stack
        """The agents on the call stack down to the parent, ``main`` first."""
        self._turn = (0, 0)
        """(the parent's turn, children started in it)."""
        self._slots: asyncio.Semaphore | None = None
        """At most ``max_parallel`` of this parent's children run at once (per parent, so a child
        waiting for its own children never holds the slot they need)."""

    @property
    def description(self) -> str:
        return (
            load_description(__package__ or "monkey.agent", self.name)
            + "\n\nAgents:\n"
            + self.delegation.defs.listing()
        )

    def _definition(self, args: TaskArgs) -> AgentDef:
        """The agent to run, after the checks that refuse a call before anything starts."""
        defs = self.delegation.defs
        agent = defs.get(args.agent)
        if agent is None:
            raise ToolError(f"no agent named {args.agent!r}; the agents are: {', '.join(sorted(defs.by_name))}")
        chain = " → ".join([*self.stack, args.agent])
        if self.depth + 1 > self.delegation.max_depth:
            raise ToolError(
                f"sub-agents may nest {self.delegation.max_depth} deep at most ([subagents] max_depth): "
                f"{chain} is refused"
            )
        if args.agent in self.stack[1:]:
            raise ToolError(
                f"cycle: {args.agent} is already on the call stack ({chain}); an agent cannot "
                "delegate to itself or to an agent that called it"
            )
        turn, count = self._turn
        count = count + 1 if turn == self.parent.turns else 1
        if count > self.delegation.max_per_turn:
            raise ToolError(
                f"at most {self.delegation.max_per_turn} sub-agents per turn ([subagents] max_per_turn); "
                "do the rest yourself or in the next turn"
            )
        self._turn = (self.parent.turns, count)
        return agent

    def _backend(self, agent: AgentDef, number: int) -> tuple[Backend, bool]:
        """The child's backend, and whether the child owns it (closes it when done)."""
        parent = self.parent.backend
        make = self.delegation.make_backend
        if agent.backend or agent.model:
            if make is None:
                raise ToolError(f"agent {agent.name} names its own backend or model, and no backend can be built here")
            try:
                return make(agent.backend or parent.name, agent.model or None), True
            except Exception as exc:  # noqa: BLE001 - BackendError and config errors alike, said to the model
                raise ToolError(f"agent {agent.name}'s backend cannot be started: {exc}") from None
        fork = getattr(parent, "fork", None)
        if fork is not None:  # the scripted backend: the agent's own script
            try:
                return fork(agent.name, number), True
            except Exception as exc:  # noqa: BLE001
                raise ToolError(str(exc)) from None
        if parent.capabilities.runs_own_tools and make is not None:  # Claude Code, Codex: a process of its own
            return make(parent.name, parent.model), True
        return parent, False  # an API backend: each request stands alone

    def _child(self, agent: AgentDef, backend: Backend, session_id: str, isolated: Isolated | None = None) -> Agent:
        parent = self.parent
        # task and skill are bound to their agent: the child gets its own
        tools = ToolRegistry([t for t in parent.tools if t.name not in OWN_TOOLS and agent.allows(t.name)])
        skills = parent.options.skills
        if skills is not None and (not agent.allows("skill") or agent.skills is not None):
            keep = () if not agent.allows("skill") else agent.skills or ()
            skills = Skills({n: s for n, s in skills.by_name.items() if n in keep})
        policy = parent.policy
        child_policy = replace(policy, allow=list(policy.allow), turn_rules=[])
        policy.lead(child_policy, agent.mode)  # its mode follows the parent's changes while it runs
        options = AgentOptions(
            max_iterations=parent.options.max_iterations,
            max_repeats=parent.options.max_repeats,
            shell=parent.options.shell,
            instructions=parent.options.instructions,
            skills=skills,
            hooks=parent.options.hooks,
            max_tokens=parent.options.max_tokens,
            limits=agent.limits,
            plan_tool=False,
            system_prompt=load_prompt("system") + "\n\n" + agent.prompt,
            diagnostics=parent.options.diagnostics,
        )
        context = None
        if parent.context is not None:
            from monkey.context.window import ContextManager

            context = ContextManager(backend, settings=parent.context.settings)
        workspace, guard = (
            (isolated.workspace, isolated.guard) if isolated is not None else (parent.workspace, parent.checkpoints)
        )
        child = Agent(
            backend=backend,
            workspace=workspace,
            tools=tools,
            approver=parent.approver,
            policy=child_policy,
            options=options,
            session_id=session_id,
            checkpoints=guard,
            context=context,
        )
        child.budget = parent.budget.child(agent.limits, owner=f"{agent.name} {session_id}")
        child.agent_type = agent.name  # its hooks are SubagentStart / SubagentStop
        child.processes = parent.processes  # what it starts in the background is the session's
        child.upstream = parent.shown
        if agent.allows("task"):  # never more than the allowlist; none at the deepest level
            install_task_tool(child, self.delegation, depth=self.depth + 1, stack=(*self.stack, agent.name))
        return child

    async def run(self, args: TaskArgs, ctx: ToolContext) -> ToolOutcome:
        agent = self._definition(args)
        emit: Callable[[Event], None] = ctx.emit if ctx.emit is not None else (lambda event: None)
        session_id = new_id("s")
        if args.background:

            async def work() -> Finished:
                handoff, stopped = await self._delegate(agent, args, ctx.call_id, session_id, emit)
                return Finished(
                    f"The background task {args.description!r} (task call {ctx.call_id}) ended:\n"
                    + handoff_text(handoff),
                    stopped,
                )

            self.parent.background.start(ctx.call_id, work)
            return ToolOutcome(
                output=(
                    f"started {agent.name} in the background (session {session_id}). Its handoff will be given to "
                    "you in a message when it ends; go on with other work meanwhile, or end your answer if you "
                    "have nothing else to do (the turn waits for it)."
                )
            )
        handoff, stopped = await self._delegate(agent, args, ctx.call_id, session_id, emit)
        text = handoff_text(handoff)
        paths = [] if handoff.worktree else list(handoff.files_changed)  # a worktree's are not in this workspace
        if stopped:  # a person said no to the child (no reason): the parent stops too
            return ToolOutcome(output=text, paths=paths, stopped=stopped)
        if not handoff.completed:
            raise ToolError(text)
        return ToolOutcome(output=text, paths=paths)

    async def _delegate(
        self, agent: AgentDef, args: TaskArgs, call_id: str, session_id: str, emit: Callable[[Event], None]
    ) -> tuple[Handoff, str]:
        """Run the child (waiting for a slot first); its handoff, and why a person stopped it ("": nobody)."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.delegation.max_parallel)
        async with self._slots:
            number = self.delegation.started[agent.name] = self.delegation.started.get(agent.name, 0) + 1
            try:
                backend, owned = self._backend(agent, number)
            except ToolError as exc:
                if not args.background:
                    raise
                return Handoff(agent=agent.name, session_id=session_id, reason="error", message=str(exc)), ""
            stopped = ""
            isolated: Isolated | None = None
            try:
                if agent.isolation == "worktree":
                    try:
                        isolated = await self._isolate(agent, session_id)
                    except ToolError as exc:
                        if not args.background:
                            raise
                        return Handoff(agent=agent.name, session_id=session_id, reason="error", message=str(exc)), ""
                child = self._child(agent, backend, session_id, isolated)
                child.asker = f"{agent.name} (sub-agent): {args.description[:80]}"
                emit(
                    SubagentStarted(
                        session_id=self.parent.session_id,
                        call_id=call_id,
                        child_session_id=session_id,
                        agent=agent.name,
                        description=args.description,
                        depth=self.depth + 1,
                        background=args.background,
                    )
                )
                handoff = await self._run_child(child, agent, args.prompt, self._tagged(call_id, emit))
                stopped = child.stopped_by_person
            finally:
                if owned:
                    await backend.aclose()
                if isolated is not None:
                    kept = await release(isolated)
                    if isolated.guard is not None:
                        isolated.guard.close()
            if isolated is not None and kept:
                handoff = msgspec.structs.replace(
                    handoff, worktree=str(isolated.worktree.path), branch=isolated.worktree.branch
                )
        emit(
            SubagentCompleted(
                session_id=self.parent.session_id, call_id=call_id, child_session_id=session_id, handoff=handoff
            )
        )
        return handoff, stopped

    async def _isolate(self, agent: AgentDef, session_id: str) -> Isolated:
        """The worktree an ``isolation: worktree`` child works in (ToolError: none can be made here)."""
        guard: Any = self.parent.checkpoints
        home = guard.home if guard is not None else None
        if home is None:
            from monkey.config import monkey_home

            home = monkey_home()
        return await isolate(self.parent.workspace, agent.name, session_id, guard, home)

    @staticmethod
    def _tagged(call_id: str, emit: Callable[[Event], None]) -> Callable[[Event], None]:
        """``emit`` giving each of the child's events the parent's call id (a grandchild's events
        keep the call of the child that runs it)."""

        def tag(event: Event) -> None:
            if event.parent_call_id is msgspec.UNSET:
                event = msgspec.structs.replace(event, parent_call_id=call_id)
            emit(event)

        return tag

    async def _run_child(self, child: Agent, agent: AgentDef, prompt: str, emit: Callable[[Event], None]) -> Handoff:
        """Run the child's one turn, passing its events on; what it did as a handoff."""
        sid = child.session_id
        checkpoints: list[str] = []
        outputs: list[str] = []
        last: TurnCompleted | None = None
        ended = False
        stream = child.run_task(prompt)
        try:
            async for event in stream:
                match event:
                    case CheckpointCreated():
                        checkpoints.append(event.checkpoint_id)
                    case ToolResult() if event.session_id == sid and event.ok:
                        first = event.output.strip().splitlines()[0] if event.output.strip() else ""
                        outputs.append(f"{event.name}: {first[:160]}")
                    case TurnCompleted() if event.session_id == sid:
                        last = event
                    case SessionEnded() if event.session_id == sid:
                        ended = True
                emit(event)
        finally:
            await stream.aclose()
            if not ended:  # the parent was stopped: the child's session is closed too
                emit(child.session_ended("cancelled", "its parent was stopped"))
        reason = last.reason if last is not None else "cancelled"
        changed = await asyncio.to_thread(self._changed, child, checkpoints)  # the journal is a blocking connection
        return Handoff(
            agent=agent.name,
            session_id=sid,
            summary=(last.result if last is not None else "")[:SUMMARY_CHARS],
            key_outputs=outputs[-KEY_OUTPUTS:],
            files_changed=changed,
            turns=child.budget.turns,
            cost_usd=round(child.budget.cost_usd, 6),
            completed=reason == "completed",
            reason=reason,
            message=last.message if last is not None and reason != "completed" else "",
        )

    @staticmethod
    def _changed(child: Agent, checkpoint_ids: list[str]) -> list[str]:
        """The paths the child's (and its children's) applied changes touched, from the journal."""
        if not checkpoint_ids:
            return []
        guard: Any = child.checkpoints
        paths: dict[str, None] = {}
        for cid in dict.fromkeys(checkpoint_ids):
            try:
                journal = getattr(guard, "journal", None)  # this thread's connection, opened on first use
                entry = journal.get(cid) if journal is not None else None
            except Exception:  # noqa: BLE001 - a damaged or locked journal: say nothing rather than guess
                return []
            if entry is not None and entry.state == "applied":
                paths.update(dict.fromkeys(entry.paths))
        return list(paths)
