"""Plan mode's side of the loop: the ``exit_plan_mode`` tool, what the model is told, and the decision.

In ``plan`` mode the permission engine refuses every change (:mod:`monkey.permissions.policy`);
the model reads, then proposes its plan (Markdown) with ``exit_plan_mode``, which is offered
only in plan mode. The call is a question for a person, asked through the loop's one approval
path (the app's plan dialog, the terminal's inline question; headless runs record it): approve
and go on in ``accept-edits`` or ``default``, send it back with feedback, or reject it.
:func:`plan_decided` applies the answer: the ``plan_saved`` event keeps the plan with the
session, an approved plan switches the mode (a ``mode_changed`` event, so resuming goes on in
it) and, when the person asked, is also kept in the project's ``.monkey/plans/``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Literal

import msgspec

from monkey.permissions.policy import ApprovalPolicy
from monkey.permissions.requests import Decision
from monkey.permissions.rules import EXIT_PLAN_MODE
from monkey.prompts import load_prompt
from monkey.events import Event, ModeChanged, PlanSaved
from monkey.messages import ToolSpec
from monkey.modes import parse_mode
from monkey.tools.base import Tool, ToolContext, ToolOutcome, load_description

__all__ = [
    "ExitPlanMode",
    "ExitPlanArgs",
    "offered",
    "plan_system_prompt",
    "plan_decided",
    "save_plan",
    "approve_plan",
    "send_back",
    "reject_plan",
    "PLANS_DIR",
]

PLANS_DIR = Path(".monkey") / "plans"
"""Where a person may keep an approved plan in the project."""


class ExitPlanArgs(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Arguments of exit_plan_mode."""

    plan: Annotated[
        str,
        msgspec.Meta(
            description="The plan, in Markdown: the steps, the files each changes, and how to check the result."
        ),
    ]


class ExitPlanMode(Tool[ExitPlanArgs]):
    """Proposes the plan to the person; runs only once they approved it (the loop asks first)."""

    name = EXIT_PLAN_MODE
    Args = ExitPlanArgs
    dangerous = True
    """Every call is a question for a person (the engine never approves it by a rule or a mode)."""
    read_only = False

    def __init__(self, mode: Callable[[], str]) -> None:
        self.mode = mode
        """The session's mode now (an approved plan has switched it)."""
        self.approved_text = ""
        """What the model is told after an approval instead of "carry it out" (a workflow's Plan stage)."""

    @property
    def description(self) -> str:
        return load_description(__package__ or "monkey.agent", self.name)

    async def run(self, args: ExitPlanArgs, ctx: ToolContext) -> ToolOutcome:
        mode = self.mode()
        if self.approved_text:
            return ToolOutcome(output=self.approved_text)
        if mode == "plan":  # recorded only: nobody could approve it
            return ToolOutcome(
                output="The plan is recorded, but nobody is here to approve it, so the session stays in "
                "plan mode: change nothing. End your turn with a short summary of the plan."
            )
        return ToolOutcome(
            output=f"The person approved the plan; the session is now in {mode} mode. "
            "Carry out the plan now, step by step, and check the result."
        )


def offered(specs: list[ToolSpec], mode: str) -> list[ToolSpec]:
    """The tools a model is offered in ``mode``: ``exit_plan_mode`` only in plan mode."""
    if mode == "plan":
        return specs
    return [spec for spec in specs if spec.name != EXIT_PLAN_MODE]


def plan_system_prompt(system: str, mode: str) -> str:
    """The system prompt for a request in ``mode``: plan mode's instructions follow the prompt in plan
    mode (added to each request, never to the conversation, so compaction cannot drop them)."""
    if mode != "plan":
        return system
    return f"{system}\n\n{load_prompt('plan_mode').strip()}"


def approve_plan(mode: str, *, save: bool = False) -> Decision:
    """A person's approval of a plan, going on in ``mode`` (``default`` or ``accept-edits``)."""
    return Decision(approved=True, by="user", mode=mode, save=save, reason=f"plan approved; going on in {mode} mode")


_SENT_BACK = "the person sent the plan back: "
_REVISE = " — stay in plan mode, revise the plan and call exit_plan_mode again"


def send_back(feedback: str) -> Decision:
    """A person sends the plan back: the model stays in plan mode and revises it."""
    return Decision(approved=False, by="user", reason=f"{_SENT_BACK}{feedback.strip()}{_REVISE}")


def _feedback(reason: str) -> str:
    """The person's own words in a :func:`send_back` reason (another denial's reason as it is)."""
    if reason.startswith(_SENT_BACK) and reason.endswith(_REVISE):
        return reason[len(_SENT_BACK) : -len(_REVISE)]
    return reason


def reject_plan() -> Decision:
    """A person rejects the plan: the turn stops, the session stays in plan mode."""
    return Decision(approved=False, by="user", reason="the person rejected the plan", stop=True)


_SLUG = re.compile(r"[^a-z0-9]+")


def save_plan(workspace: Path, plan: str, *, when: float | None = None) -> Path:
    """Keep ``plan`` in ``.monkey/plans/`` (named by the time and its first line); the path written.

    monkey's own record at the person's request, like its config: ``.monkey/`` is never a
    tool's to change, and undo does not cover it.
    """
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(time.time() if when is None else when))
    first = next((line for line in plan.splitlines() if line.strip()), "plan")
    slug = _SLUG.sub("-", first.lower()).strip("-")[:40].strip("-") or "plan"
    folder = workspace / PLANS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{stamp}-{slug}.md"
    n = 1
    while path.exists():
        n += 1
        path = folder / f"{stamp}-{slug}-{n}.md"
    path.write_text(plan if plan.endswith("\n") else plan + "\n", encoding="utf-8")
    return path


def plan_decided(
    policy: ApprovalPolicy,
    workspace: Path,
    session_id: str,
    call_id: str,
    plan: str,
    decision: Decision,
    emit: Callable[[Event], None],
) -> Decision:
    """Apply the decision on a plan: the ``plan_saved`` event, the new mode, the project copy.

    Returns the decision the loop goes on with (a failed project copy is said in its reason).
    """
    path = ""
    if decision.approved and decision.mode != "plan":
        try:
            mode = parse_mode(decision.mode or "default")
        except ValueError:
            mode = "default"
        if mode == "auto" and not policy.auto_allowed:
            mode = "default"  # a plan never widens what the session may do without asking
        if decision.save:
            try:
                path = str(save_plan(workspace, plan).relative_to(workspace))
            except OSError as exc:
                decision = Decision(
                    approved=True,
                    by=decision.by,
                    mode=mode,
                    reason=f"{decision.reason} (the plan could not be kept in {PLANS_DIR}: {exc})",
                )
        previous = policy.mode
        policy.set_mode(mode)
        emit(PlanSaved(session_id=session_id, call_id=call_id, plan=plan, outcome="approved", mode=mode, path=path))
        emit(ModeChanged(session_id=session_id, mode=mode, previous=previous, by="plan"))
        return decision
    outcome: Literal["recorded", "sent_back", "rejected"]
    if decision.approved:
        outcome = "recorded"
    elif decision.by == "user" and not decision.stop:
        outcome = "sent_back"
    else:
        outcome = "rejected"
    feedback = _feedback(decision.reason) if outcome == "sent_back" else ""
    emit(PlanSaved(session_id=session_id, call_id=call_id, plan=plan, outcome=outcome, mode="plan", feedback=feedback))
    return decision
