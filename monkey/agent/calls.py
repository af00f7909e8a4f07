"""The one call pipeline: pre-hook → decide → ask a person → checkpoint → run → journal →
post-hooks → result.

Every tool call runs here: the model's (the loop's :meth:`~monkey.agent.loop.Agent.run`), a
person's ``!command`` (:meth:`~monkey.agent.loop.Agent.run_shell`), a program's call through
``monkey serve`` (:meth:`~monkey.agent.loop.Agent.run_tool`) and a sub-agent's (the child's own
pipeline, sharing the parent's approver, policy and checkpoint guard). The external agents' own
calls (Claude Code, Codex) pass the same front half (:meth:`CallPipeline.pre_hook`,
:meth:`CallPipeline.admit`) and checkpoint (:meth:`CallPipeline.begin`, :meth:`CallPipeline.finish`)
through :class:`~monkey.permissions.external_gate.ExternalGate`, since the agent runs them itself.

The pipeline is given what it needs (the engine's policy, the approver, the checkpoint guard,
the hooks, an ``emit``), never the loop.
"""

from __future__ import annotations

import asyncio
import time
from contextlib import AbstractContextManager, nullcontext
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from monkey.agent.after_run import AfterRun
from monkey.agent.changes import ChangeGuard, CheckpointError, PendingChange
from monkey.agent.hook_glue import run_hooks
from monkey.agent.plan_mode import plan_decided
from monkey.events import (
    ApprovalRequested,
    ApprovalResolved,
    CheckpointCreated,
    Error,
    Event,
    NotUndoable,
    ToolCallEvent,
    ToolCallSpec,
    ToolImage,
    ToolOutput,
    ToolResult,
    ToolStarted,
)
from monkey.extensions.hooks import HookResult, Hooks
from monkey.extensions.instructions import Instructions
from monkey.messages import Message
from monkey.permissions.decide import Admitted, Call, HookSays, Verdict, decide, outside_sandbox, settle, source
from monkey.permissions.policy import ApprovalPolicy
from monkey.permissions.requests import Approver, Decision, HeadlessApprover
from monkey.permissions.rules import EXIT_PLAN_MODE
from monkey.process import spawns_go_to
from monkey.tools.base import ShellSettings, Tool, ToolContext, ToolError, ToolOutcome
from monkey.tools.errors import SandboxBlocked
from monkey.tools.processes import ProcessTable
from monkey.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from monkey.lsp.diagnostics import Diagnostics

__all__ = ["CallOutcome", "CallPipeline", "Emit"]

Emit = Callable[[Event], None]


@dataclass
class CallOutcome:
    """One call's result message, and what it means for the turn."""

    message: Message
    denied: bool = False
    """Denied by a rule or the headless policy: the task could not do what it meant to."""
    stop: Decision | None = None
    """A person stopped the turn (a denial with stop, or a sub-agent they stopped)."""


@dataclass
class CallPipeline(AfterRun):
    """Runs tool calls for one agent: what it needs, given, not reached for."""

    session_id: str
    workspace: Path
    tools: ToolRegistry
    policy: ApprovalPolicy
    approver: Approver
    checkpoints: ChangeGuard | None = None
    shell: ShellSettings = field(default_factory=ShellSettings)
    hooks: Hooks | None = None
    instructions: Instructions | None = None
    asker: str = ""
    """Who the approval requests say asks (a sub-agent); empty for the agent a person talks to."""
    shown: Callable[[], Awaitable[None]] | None = None
    """Waits until the consumer handled every event so far (intent is stored before effect)."""
    ran: set[str] = field(default_factory=set)
    """Calls that started running (a stopped turn says 'may have run' for them)."""
    changed: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    """Lines added, removed and files changed by each finished call's change, until its result says so."""
    processes: ProcessTable | None = None
    """The agent's background processes (``shell_execute`` with ``background``); None: none may start."""
    diagnostics: Diagnostics | None = None
    """The session's language servers, asked what a file write newly broke (None: none configured)."""

    async def _shown(self) -> None:
        if self.shown is not None:
            await self.shown()

    # -- the calls of one response ----------------------------------------------------------

    async def run_all(
        self, calls: list[ToolCallSpec], turn: int, emit: Emit, spent: Callable[[], bool] = lambda: False
    ) -> list[CallOutcome]:
        """Run a response's calls in order; consecutive read-only calls run concurrently, and so do
        consecutive calls of a tool that says it may (``concurrent``: the ``task`` tool's sub-agents).
        ``spent``: whether a budget is reached (checked before each call; none runs after)."""
        outcomes: list[CallOutcome] = []
        batch: list[ToolCallSpec] = []
        batch_kind = ""

        async def flush() -> None:
            if batch and spent():
                batch.clear()
                return
            if len(batch) == 1:
                outcomes.append(await self.run(batch[0], turn, emit))
            elif batch:
                outcomes.extend(await asyncio.gather(*(self.run(c, turn, emit) for c in batch)))
            batch.clear()

        for call in calls:
            tool = self.tools.find(call.name)
            kind = (
                ""
                if tool is None or tool.dangerous
                else ("read" if tool.read_only else "concurrent" if getattr(tool, "concurrent", False) else "")
            )
            if kind and batch and kind != batch_kind:
                await flush()
            if kind:
                batch.append(call)
                batch_kind = kind
                continue
            await flush()
            if spent():
                return outcomes
            outcome = await self.run(call, turn, emit)
            outcomes.append(outcome)
            if outcome.stop is not None:
                return outcomes
        await flush()
        return outcomes

    # -- the whole path of one call ----------------------------------------------------------

    async def run(
        self,
        call: ToolCallSpec,
        turn: int,
        emit: Emit,
        *,
        by_person: bool = False,
        sandboxed: bool | None = None,
        admitted: Admitted | None = None,
    ) -> CallOutcome:
        """Decide, checkpoint, run and report one call (``by_person``: a line the person typed, ``!command``).

        ``admitted``: the call was decided already by this pipeline's front half (:meth:`admit`), as an
        external agent's permission request for exactly this call; its hooks and the engine are not asked again.

        A shell command runs in the sandbox unless the person typed it (``sandboxed`` says otherwise: a
        command monkey runs for the person, such as ``[workflow] verify``, in the sandbox unless their own
        config trusts it); one a person approved and the sandbox then blocked is run again outside only
        when a person says so to a second question (:meth:`outside`)."""
        sid = self.session_id
        tool = self.tools.find(call.name)
        emit(
            ToolCallEvent(
                session_id=sid,
                call_id=call.id,
                name=call.name,
                arguments=call.arguments,
                dangerous=bool(tool and tool.dangerous),
            )
        )
        started = time.perf_counter()
        waited = 0.0  # seconds a person spent deciding: not part of the call's run time

        def finish(
            ok: bool,
            output: str,
            diff: str = "",
            denied: bool = False,
            stop: Decision | None = None,
            images: list[ToolImage] | None = None,
            denied_by: str = "",
        ) -> CallOutcome:
            ran_ms = max(0.0, time.perf_counter() - started - waited) * 1000
            added, removed, files = self.changed.pop(call.id, (0, 0, 0))
            emit(
                ToolResult(
                    session_id=sid,
                    call_id=call.id,
                    name=call.name,
                    ok=ok,
                    output=output,
                    duration_ms=ran_ms,
                    diff=diff,
                    wait_ms=waited * 1000,
                    images=images or [],
                    denied_by=denied_by,
                    lines_added=added,
                    lines_removed=removed,
                    files_changed=files,
                )
            )
            msg = Message(
                role="tool", tool_call_id=call.id, name=call.name, content=output, is_error=not ok, images=images or []
            )
            return CallOutcome(msg, denied=denied, stop=stop)

        if tool is None:
            return finish(False, f"unknown tool {call.name!r}; available tools: {', '.join(self.tools.names())}")
        if call.error:
            return finish(False, call.error)
        ctx = ToolContext(
            workspace=self.workspace,
            call_id=call.id,
            emit=emit,
            shell=self.shell,
            read_denied=self.read_denied(),
            net_named=self.policy.names_host,
            processes=self.processes,
            session_id=sid,
            emit_output=lambda stream, text: emit(
                ToolOutput(session_id=sid, call_id=call.id, stream=stream, text=text)  # type: ignore[arg-type]
            ),
        )
        try:
            args = tool.parse(call.arguments)
            hook = await self.pre_hook(call, emit) if admitted is None else None
            if hook is not None and hook.decision != "deny" and hook.updated_input is not None:
                call = msgspec.structs.replace(call, arguments=hook.updated_input)  # decided and shown as changed
                args = tool.parse(call.arguments)
            guarded = tool.dangerous and self.checkpoints is not None
            paths = tool.touched_paths(args, ctx) if guarded else []
            if admitted is None:
                admitted = await self.admit(
                    call,
                    emit,
                    dangerous=tool.dangerous,
                    paths=paths,
                    hook=hook,
                    by_person=by_person,
                    protects=lambda: tool.needs_person(args),
                    preview=lambda: tool.preview(args, ctx),
                )
                waited = admitted.waited
            decision = admitted.decision
            if not decision.approved:
                return finish(
                    False,
                    admitted.said,
                    denied=decision.by != "user",
                    stop=decision if decision.stop else None,
                    denied_by="person" if decision.by == "user" else "hook" if admitted.route == "hook" else "rule",
                )
            ctx.line = admitted.line  # what was decided is what runs
            if admitted.route == "engine":
                # Shell syntax runs through a shell only when a person approved this exact line.
                ctx.shell_line_approved = decision.by == "user" or decision.exact_line
            # approved or not, a command runs in the sandbox; a line the person typed is theirs
            ctx.sandboxed = sandboxed if sandboxed is not None else not by_person
            tool.check(args, ctx)
            checkpointed = guarded and paths != []
            try:
                outcome = await self._execute(
                    tool, args, ctx, call, paths if checkpointed else [], turn, emit, announce=True
                )
            except SandboxBlocked as blocked:
                if not (ctx.sandboxed and admitted.route == "engine" and decision.by == "user"):
                    raise  # only what a person approved is offered to them again, to run outside
                again = await self.outside(call, blocked, emit)
                waited += again.waited
                if not again.decision.approved:
                    said = f"{blocked}\n[not run outside the sandbox: {again.decision.reason or 'the person said no'}]"
                    return finish(
                        False,
                        await self.post_hooks(call, False, said, emit),
                        stop=again.decision if again.decision.stop else None,
                        denied_by="person" if again.decision.by == "user" else "rule",
                    )
                ctx.sandboxed = False
                outcome = await self._execute(tool, args, ctx, call, paths if checkpointed else [], turn, emit)
                outcome.output = (
                    f"[the sandbox blocked the first run; a person approved running it outside]\n{outcome.output}"
                )
        except ToolError as exc:
            return finish(False, await self.post_hooks(call, False, str(exc), emit))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return finish(False, f"{call.name} failed: {type(exc).__name__}: {exc}")
        if outcome.stopped:  # a person stopped a sub-agent: this turn stops as if they had stopped it
            return finish(
                False,
                outcome.output,
                outcome.diff,
                stop=Decision(approved=False, by="user", reason=outcome.stopped, stop=True),
            )
        output = await self.diagnose(call, outcome.edits, outcome.output, emit)
        output = self.nested_instructions(call, args, output, emit)
        return finish(True, await self.post_hooks(call, True, output, emit), outcome.diff, images=outcome.images)

    async def _execute(
        self,
        tool: Tool[Any],
        args: Any,
        ctx: ToolContext,
        call: ToolCallSpec,
        paths: list[str] | None,
        turn: int,
        emit: Emit,
        *,
        announce: bool = False,
    ) -> ToolOutcome:
        """Checkpoint (unless ``paths == []``), run the tool once (``announce``: say it started, the first
        time), and finish the journal entry."""
        pending = await self.begin(call, paths, turn, emit) if paths != [] else None
        if announce:
            emit(ToolStarted(session_id=self.session_id, call_id=call.id, name=call.name))
        await self._shown()  # intent before effect: the call is stored as started before it runs
        self.ran.add(call.id)
        ran = False
        try:
            with self.spawns(pending):
                outcome = await tool.run(args, ctx)
            ran = True
            if pending is not None and outcome.process and self.processes is not None:
                # a background process goes on changing things: its change stays open on it, finished at
                # the turn's end (monkey.agent.processes.settle)
                self.processes.get(outcome.process).change, pending = pending, None
        finally:
            if pending is not None:
                await self.finish(pending, ran, emit)
        return outcome

    async def outside(self, call: ToolCallSpec, blocked: SandboxBlocked, emit: Emit) -> Admitted:
        """The second question about a command a person approved and the sandbox blocked: run it again
        outside the sandbox (:func:`~monkey.permissions.decide.outside_sandbox`), through the same approver."""
        verdict = outside_sandbox(
            Call(id=call.id, tool=call.name, arguments=call.arguments, workspace=self.workspace, asker=self.asker),
            blocked.blocked,
        )
        decision, waited = await self.ask(call, verdict, emit)
        label: Literal["approved", "denied"] = "approved" if decision.approved else "denied"
        emit(
            ApprovalResolved(
                session_id=self.session_id,
                call_id=call.id,
                name=call.name,
                decision=label,
                by=decision.by,
                reason=decision.reason,
                source=source(verdict, decision),
                wait_ms=waited * 1000,
            )
        )
        return Admitted(decision, "", verdict.line, waited)

    # -- the front half: hooks, the engine's verdict, a person -------------------------------

    async def pre_hook(self, call: ToolCallSpec, emit: Emit) -> HookResult | None:
        """The ``PreToolUse`` hooks' word on ``call`` (None without hooks)."""
        if not self.hooks:
            return None
        return await run_hooks(self.hooks, self.session_id, self.workspace, "PreToolUse", emit, call=call)

    async def admit(
        self,
        call: ToolCallSpec,
        emit: Emit,
        *,
        dangerous: bool = True,
        paths: list[str] | None = None,
        hook: HookSays | None = None,
        by_person: bool = False,
        person_only: str = "",
        unsandboxed: bool = False,
        protects: Callable[[], str | None] | None = None,
        preview: Callable[[], str] | None = None,
    ) -> Admitted:
        """The engine's verdict on ``call`` (:func:`~monkey.permissions.decide.decide`), a person asked
        when it says so, and the approval events every sink sees."""
        big = self.checkpoints.oversized(paths) if dangerous and self.checkpoints is not None and paths else []
        verdict = decide(
            self.policy,
            Call(
                id=call.id,
                tool=call.name,
                arguments=call.arguments,
                workspace=self.workspace,
                dangerous=dangerous,
                protects=protects,
                preview=preview,
                oversized=tuple(big),
                by_person=by_person,
                person_only=person_only,
                unsandboxed=unsandboxed,
                hook=hook,
                asker=self.asker,
            ),
        )
        waited = 0.0
        decision = verdict.decision
        if decision is None:
            decision, waited = await self.ask(call, verdict, emit)
        if verdict.route == "engine" and call.name == EXIT_PLAN_MODE and self.policy.mode == "plan":
            decision = plan_decided(
                self.policy,
                self.workspace,
                self.session_id,
                call.id,  # kept; approved, it
                str(call.arguments.get("plan", "")),
                decision,
                emit,
            )  # switches the mode
        if not verdict.quiet:
            label = (
                {"once": "approved", "session": "approved_session", "always": "approved_always"}[decision.scope]
                if decision.approved
                else "denied"
            )
            emit(
                ApprovalResolved(
                    session_id=self.session_id,
                    call_id=call.id,
                    name=call.name,
                    decision=label,  # type: ignore[arg-type]
                    by=decision.by,
                    reason=decision.reason,
                    source=source(verdict, decision),
                    wait_ms=waited * 1000,
                )
            )
        if verdict.route == "hook":
            said = f"denied by a hook: {hook.reason if hook is not None else ''}"
        else:
            said = f"denied: {decision.reason or 'no reason given'}"
        return Admitted(decision, said, verdict.line, waited, verdict.route)

    async def ask(self, call: ToolCallSpec, verdict: Verdict, emit: Emit) -> tuple[Decision, float]:
        """Ask the approver the verdict's question; the answer as it holds, and the seconds it took."""
        request = verdict.question
        assert request is not None
        emit(
            ApprovalRequested(
                session_id=self.session_id,
                call_id=call.id,
                name=call.name,
                arguments=call.arguments,
                summary=request.summary,
                warnings=request.warnings,
            )
        )
        if not isinstance(self.approver, HeadlessApprover):  # somebody is asked: tell the person's tools
            await run_hooks(
                self.hooks,
                self.session_id,
                self.workspace,
                "Notification",
                emit,
                target="permission_prompt",
                notification_type="permission_prompt",
                message=f"monkey needs your permission to use {call.name}",
            )
        await self._shown()
        asked = time.perf_counter()
        answer = await self.approver.decide(replace(request, session_id=self.session_id))
        waited = time.perf_counter() - asked
        decision = settle(self.policy, verdict, answer)
        if decision.approved and decision.scope == "always":
            self.keep_rules(call, emit)
        return decision, waited

    def keep_rules(self, call: ToolCallSpec, emit: Emit) -> None:
        """ "Always allow": save the call's rules to the user's config (a failure is said, not fatal)."""
        try:
            self.policy.keep(call.name, call.arguments, self.workspace)
        except OSError as exc:
            emit(
                Error(
                    session_id=self.session_id,
                    kind="config",
                    message=f"could not save the rule to your config (it holds for this session): {exc}",
                )
            )

    # -- checkpoint and journal ----------------------------------------------------------------

    async def begin(self, call: ToolCallSpec, paths: list[str] | None, turn: int, emit: Emit) -> PendingChange:
        """Checkpoint what the call will change (None: the whole tree); a failure means it does not run."""
        assert self.checkpoints is not None
        try:
            pending = await asyncio.to_thread(
                self.checkpoints.begin,
                tool=call.name,
                paths=paths,
                session_id=self.session_id,
                turn=turn,
                call_id=call.id,
            )
        except CheckpointError as exc:
            raise ToolError(str(exc)) from None
        emit(
            CheckpointCreated(
                session_id=self.session_id,
                checkpoint_id=pending.checkpoint_id,
                tool=call.name,
                paths=list(pending.paths),
                turn=turn,
                call_id=call.id,
            )
        )
        return pending

    def spawns(self, pending: PendingChange | None) -> AbstractContextManager[None]:
        """Around a call's run: the processes it starts are handed to its checkpoint, so the write
        watch tells its writes from those of another command running at the same time."""
        if pending is None or self.checkpoints is None:
            return nullcontext()
        guard = self.checkpoints
        return spawns_go_to(lambda pid: guard.claim(pending, pid))

    def claim(self, pending: PendingChange, pid: int) -> None:
        """An external agent runs the change's command itself: what the agent's children write while the
        change is open is its change (the agent's own writes are not)."""
        if self.checkpoints is not None and pid:
            self.checkpoints.claim(pending, pid, children=True)

    async def finish(self, pending: PendingChange, ok: bool, emit: Emit) -> None:
        """Complete the journal entry of a change that ran (or failed)."""
        assert self.checkpoints is not None
        warning = await asyncio.to_thread(
            self.checkpoints.finish, pending, ok=ok, error="" if ok else "the tool failed"
        )
        if not warning and (call_id := getattr(pending, "call_id", "")) in self.ran:  # its lines, for monkey stats
            self.changed[call_id] = await asyncio.to_thread(self.checkpoints.line_counts, pending)
        if items := pending.not_undoable():  # said now, not found out at undo time
            emit(
                NotUndoable(
                    session_id=self.session_id,
                    checkpoint_id=pending.checkpoint_id,
                    tool=getattr(pending, "tool", ""),
                    call_id=getattr(pending, "call_id", ""),
                    items=items,
                )
            )
        if warning:
            emit(Error(session_id=self.session_id, message=warning, kind="checkpoint"))

    def read_denied(self):  # Callable[[str], bool] | None
        """Whether a deny rule forbids reading a file (searches skip it); None when no rule can."""
        if not any(rule.tool == "file_read" for rule in self.policy.deny):
            return None
        return lambda rel: self.policy.denied("file_read", {"path": rel}, self.workspace) is not None
