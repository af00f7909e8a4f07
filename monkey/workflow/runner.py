"""The Think/Plan/Do/Reflect workflow, run on one agent as a series of turns.

Think (read-only) gathers what the task needs; then, until Reflect says the task is done
or a cap ends it: Plan (plan mode: the plan through ``exit_plan_mode``, decided by the
person, or recorded when nobody can be asked), Do (the configured mode, or the one an
approved plan chose), Reflect (the ``[workflow] verify`` command, if set, run as the
person's own command through the loop's path; then read-only, the changes' diff and a
verdict). A failed verify is fed back to the next Plan at most ``verify_retries`` times.

Each stage is one turn of the agent with its own prompt (``prompts/*.md``), tool set and
mode; it emits ``stage_started`` / ``stage_completed`` (with its tokens, cost, wall time,
outcome and handoff) into the same event stream the driver stores, and writes one line to
the trace. Every tool call goes through the loop as in any turn.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from monkey.permissions.rules import EXIT_PLAN_MODE
from monkey.agent.plan_mode import ExitPlanMode
from monkey.config import WorkflowConfig
from monkey.events import (
    CheckpointCreated,
    Event,
    ModeChanged,
    PlanSaved,
    StageCompleted,
    StageStarted,
    ToolResult,
    TurnCompleted,
    Usage,
)
from monkey.ids import new_id
from monkey.workflow.handoff import Handoff
from monkey.workflow.stages import STAGES, parse_verdict, stage_prompt, stage_tools
from monkey.workflow.trace import Trace, trace_path

if TYPE_CHECKING:
    from monkey.agent.loop import Agent
    from monkey.tools.registry import ToolRegistry

__all__ = ["Workflow", "EXIT_CODES"]

EXIT_CODES = {"done": 0, "error": 1, "not_done": 3, "verify_failed": 3, "rejected": 4, "budget": 5, "cancelled": 130}
"""``monkey agent --workflow`` exit status by the workflow's outcome."""

_ENDS = frozenset({"error", "cancelled", "budget"})
"""Stage outcomes that end the workflow (``budget``: the run's budget, :mod:`monkey.agent.budget`, ran out)."""

DIFF_LIMIT = 20_000
"""Characters of the iteration's diff Reflect is given."""


class Workflow:
    """One run of the Think/Plan/Do/Reflect workflow on ``agent`` for ``task``."""

    def __init__(
        self,
        agent: Agent,
        task: str,
        *,
        settings: WorkflowConfig | None = None,
        home: Path,
        do_mode: str | None = None,
        workflow_id: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.agent = agent
        self.task = task
        self.settings = settings or WorkflowConfig()
        self.home = home
        self.id = workflow_id or new_id("wf")
        self.trace = Trace(trace_path(home, self.id))
        self.do_mode = do_mode or (agent.policy.mode if agent.policy.mode != "plan" else "default")
        """The mode Do runs in unless an approved plan chose one (plan mode is no mode to do anything in)."""
        self.clock = clock
        self.outcome = ""
        """``done``, ``not_done`` (the iteration cap), ``verify_failed``, ``rejected``, ``budget``, ``error`` or
        ``cancelled``."""
        self.reason = ""
        self.handoffs: list[Handoff] = []
        self._registries: dict[str, ToolRegistry] = {}
        self._diff = ""
        """The latest Do stage's changes as a diff (what Reflect reads)."""

    @property
    def exit_code(self) -> int:
        """The exit status of ``monkey agent --workflow`` for this outcome."""
        return EXIT_CODES.get(self.outcome, 1)

    async def run_task(self) -> AsyncIterator[Event]:
        """The whole workflow as one session: ``session_started``, the stages, ``session_ended``."""
        agent = self.agent
        if not agent.started:
            yield agent.session_started()
        async for event in self.run():
            yield event
        ends = {
            "done": "completed",
            "cancelled": "cancelled",
            "error": "error",
            "rejected": "denied",
            "budget": "budget",
        }
        said = f"workflow {self.id}: {self.outcome}" + (f" ({self.reason})" if self.reason else "")
        yield agent.session_ended(ends.get(self.outcome, "max_iterations"), said)  # type: ignore[arg-type]

    async def run(self) -> AsyncIterator[Event]:
        """Run the stages, yielding every event of every stage as it happens; the agent gets its tools
        and mode back at the end."""
        agent = self.agent
        full, first_mode = agent.tools, agent.policy.mode
        self._registries["_full"] = full
        proposer = full.find(EXIT_PLAN_MODE)
        if isinstance(proposer, ExitPlanMode):  # the Do stage carries the plan out, not the Plan stage's turn
            proposer.approved_text = (
                "The plan is approved (or recorded). End your turn now with one line: "
                "the next stage of the workflow carries it out."
            )
        try:
            async for event in self._stages():
                yield event
        finally:
            if isinstance(proposer, ExitPlanMode):
                proposer.approved_text = ""
            agent.tools = full
            last_mode = agent.policy.mode
            agent.policy.set_mode(first_mode)
        if last_mode != first_mode:
            yield ModeChanged(session_id=agent.session_id, mode=first_mode, previous=last_mode, by="workflow")

    async def _stages(self) -> AsyncIterator[Event]:
        """Think once, then Plan, Do and Reflect until done or a cap; the outcome in :attr:`outcome`."""
        async for event in self._stage("think", 1, stage_prompt("think", task=self.task)):
            yield event
        think = self.handoffs[-1]
        if self._ended(think):
            return
        previous, feedback, failures = think, "", 0
        for iteration in range(1, max(1, self.settings.max_iterations) + 1):
            async for event in self._stage(
                "plan",
                iteration,
                stage_prompt(
                    "plan", task=self.task, iteration=iteration, handoff=previous.for_prompt(), feedback=feedback
                ),
            ):
                yield event
            plan = self.handoffs[-1]
            if self._ended(plan):
                return
            if plan.plan_outcome == "rejected":
                self.outcome, self.reason = "rejected", "the plan was rejected"
                return
            async for event in self._stage(
                "do",
                iteration,
                stage_prompt("do", task=self.task, iteration=iteration, handoff=plan.for_prompt()),
                mode=plan.mode or self.do_mode,
            ):
                yield event
            done = self.handoffs[-1]
            if self._ended(done):
                return
            async for event in self._reflect(iteration, done, plan.mode or self.do_mode):
                yield event
            reflect = self.handoffs[-1]
            if self._ended(reflect):
                return
            if reflect.verdict == "done":
                self.outcome, self.reason = "done", reflect.reason
                return
            if reflect.verify_ok is False:
                failures += 1
                if failures > self.settings.verify_retries:
                    self.outcome = "verify_failed"
                    self.reason = (
                        f"the verify command still failed after {self.settings.verify_retries} retries"
                        if self.settings.verify_retries
                        else "the verify command failed"
                    )
                    return
            self.outcome, self.reason = "not_done", reflect.reason
            previous = reflect
            feedback = (
                "Reflect found the task not done; plan what is still missing, and mind the verify "
                "command's failure above."
                if reflect.verify_ok is False
                else "Reflect found the task not done; plan what is still missing."
            )
        self.reason = f"not done after {self.settings.max_iterations} iterations: {self.reason}"

    def _ended(self, handoff: Handoff) -> bool:
        """Whether the workflow stops after this stage (an error, a cancel, a budget)."""
        if handoff.outcome in _ENDS:
            self.outcome = handoff.outcome
            self.reason = handoff.reason or f"the {handoff.stage} stage ended: {handoff.outcome}"
            return True
        budget = getattr(self.agent, "budget", None)  # the run's --max-* limits, spent over every stage
        over = budget.check(starting=True) if budget is not None else None
        if over is not None:
            self.outcome, self.reason = "budget", over.describe()
            return True
        return False

    def _tools(self, name: str) -> ToolRegistry:
        if name not in self._registries:  # kept for the whole run: the loop caches specs by registry
            self._registries[name] = stage_tools(self._registries["_full"], STAGES[name].tools)
        return self._registries[name]

    def _enter(self, name: str, mode: str | None) -> Event | None:
        """Give the agent the stage's tools and mode; the ``mode_changed`` event, if it changed."""
        agent = self.agent
        agent.tools = self._tools(name)
        wanted = "plan" if STAGES[name].read_only else (mode or self.do_mode)
        if wanted == "auto" and not agent.policy.auto_allowed:
            wanted = "default"
        if agent.policy.mode == wanted:
            return None
        previous = agent.policy.mode
        agent.policy.set_mode(wanted)  # type: ignore[arg-type]
        return ModeChanged(session_id=agent.session_id, mode=wanted, previous=previous, by="workflow")

    async def _stage(
        self,
        name: str,
        iteration: int,
        prompt: str | Callable[[], str],
        *,
        mode: str | None = None,
        before: Handoff | None = None,
        first: AsyncIterator[Event] | None = None,
    ) -> AsyncIterator[Event]:
        """Run one stage as a turn; its :class:`Handoff` is appended to :attr:`handoffs`.

        ``first``: events to run once the stage has started, before its turn (Reflect's verify
        command); ``prompt`` may then be made after them.
        """
        agent = self.agent
        sid = agent.session_id
        started, began = self.clock(), time.time()
        yield StageStarted(session_id=sid, workflow_id=self.id, stage=name, iteration=iteration)
        if first is not None:
            async for event in first:
                yield event
        changed = self._enter(name, mode)
        if changed is not None:
            yield changed
        if callable(prompt):
            prompt = prompt()
        tokens = [0, 0]
        cost = 0.0
        last: TurnCompleted | None = None
        plan: PlanSaved | None = None
        checkpoints: list[str] = []
        diffs: list[str] = []
        async for event in agent.run(prompt):
            match event:
                case Usage():
                    tokens[0] += event.input_tokens
                    tokens[1] += event.output_tokens
                    cost += event.cost_usd
                case TurnCompleted():
                    last = event
                case PlanSaved():
                    plan = event
                case CheckpointCreated():
                    checkpoints.append(event.checkpoint_id)
                case ToolResult() if event.ok and event.diff:
                    diffs.append(event.diff)
            yield event
        outcome = last.reason if last is not None else "cancelled"
        handoff = Handoff(
            stage=name,
            iteration=iteration,
            outcome=outcome,
            summary=last.result if last else "",
            reason=last.message if last is not None and outcome != "completed" else "",
        )
        if before is not None:  # Reflect: what the verify command said
            handoff.verify_command, handoff.verify_ok, handoff.verify_output = (
                before.verify_command,
                before.verify_ok,
                before.verify_output,
            )
        if name == "plan":
            handoff.plan = plan.plan if plan is not None else handoff.summary
            handoff.plan_outcome = plan.outcome if plan is not None else ""
            handoff.mode = plan.mode if plan is not None and plan.outcome == "approved" else ""
        if name == "do":
            handoff.files_changed, self._diff = await self._changes(checkpoints, diffs)
        if name == "reflect":
            verdict, reason = parse_verdict(handoff.summary)
            if handoff.verify_ok is False and verdict == "done":
                verdict, reason = "not_done", f"the verify command failed (Reflect said: {reason})"
            handoff.verdict, handoff.reason = verdict, reason
        self.handoffs.append(handoff)
        wall = self.clock() - started
        line = {
            "workflow_id": self.id,
            "session_id": sid,
            "stage": name,
            "iteration": iteration,
            "outcome": outcome,
            "input_tokens": tokens[0],
            "output_tokens": tokens[1],
            "cost_usd": round(cost, 6),
            "wall_s": round(wall, 3),
            "started": began,
            "verdict": handoff.verdict,
            "reason": handoff.reason,
        }
        try:
            await asyncio.to_thread(self.trace.write, line)
        except OSError:
            pass  # the events still say it; a full disk must not end the run here
        yield StageCompleted(
            session_id=sid,
            workflow_id=self.id,
            stage=name,
            iteration=iteration,
            outcome=outcome,
            input_tokens=tokens[0],
            output_tokens=tokens[1],
            cost_usd=cost,
            wall_s=wall,
            verdict=handoff.verdict,
            reason=handoff.reason,
            handoff=handoff.to_json(),
        )

    async def _reflect(self, iteration: int, done: Handoff, mode: str) -> AsyncIterator[Event]:
        """Reflect: the verify command (in Do's mode, as the person's own, but in the sandbox unless their
        config trusts such commands: its inputs are what the model wrote), then the read-only turn."""
        command = self.settings.verify.strip()
        checked = Handoff(stage="verify", iteration=iteration, outcome="", verify_command=command)

        async def verify() -> AsyncIterator[Event]:
            if not command:
                return
            changed = self._enter("do", mode)  # the person's command runs where Do ran (plan mode would refuse it)
            if changed is not None:
                yield changed
            async for event in self.agent.run_shell(command, typed=False):  # the sandbox's, unless trusted
                if isinstance(event, ToolResult):
                    checked.verify_ok, checked.verify_output = event.ok, event.output
                yield event

        def prompt() -> str:
            said = ""
            if command:
                state = "passed" if checked.verify_ok else "FAILED" if checked.verify_ok is not None else "did not run"
                said = f"The verify command `{command}` {state}:\n{checked.verify_output.strip() or '(no output)'}"
            return stage_prompt(
                "reflect",
                task=self.task,
                iteration=iteration,
                handoff=done.for_prompt(),
                diff=self._diff or "(no change was recorded)",
                verify=said,
            )

        async for event in self._stage("reflect", iteration, prompt, before=checked, first=verify()):
            yield event

    async def _changes(self, checkpoint_ids: list[str], diffs: list[str]) -> tuple[list[str], str]:
        """The paths and the diff of the Do stage's changes, from its checkpoints (else the tools' diffs)."""
        agent = self.agent
        if agent.checkpoints is None or not checkpoint_ids:
            return [], "\n".join(diffs)[:DIFF_LIMIT]

        def read() -> tuple[list[str], str]:
            from monkey.checkpoints.api import Checkpoints

            api = Checkpoints(agent.workspace, home=self.home)
            wanted = set(checkpoint_ids)
            paths: dict[str, None] = {}
            texts: list[str] = []
            for info in api.list(agent.session_id):
                if info.id in wanted and info.state == "applied":
                    paths.update(dict.fromkeys(info.paths))
                    texts.append(api.show(info.id))
            return list(paths), "\n".join(texts)[:DIFF_LIMIT]

        try:
            return await asyncio.to_thread(read)
        except Exception:  # noqa: BLE001 - a damaged journal: Reflect reads the files itself
            return [], "\n".join(diffs)[:DIFF_LIMIT]
