"""The plan dialog: the plan a model proposed with ``exit_plan_mode``, and the person's answer.

The app's approver pushes a :class:`PlanScreen` for a request that carries a plan (see
:mod:`monkey.agent.plan_mode`) and awaits the :class:`~monkey.permissions.requests.Decision` it is
dismissed with: approve and go on in ``accept-edits`` (``a``) or ``default`` (``d``), send it
back with feedback (``f``, then the feedback and Enter), or reject it (``r`` or Esc: the turn
stops, the session stays in plan mode). ``s`` also keeps an approved plan in ``.monkey/plans/``.
The plan came from the model: it is shown as Markdown, its control characters escaped.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Input, Markdown, Static

from monkey.permissions.requests import ApprovalRequest
from monkey.agent.plan_mode import PLANS_DIR, approve_plan, reject_plan, send_back
from monkey.ui.screens.guarded import GUARD_SECONDS, GuardedDialog

__all__ = ["PlanScreen"]


class PlanScreen(GuardedDialog):
    """Asks a person about a plan; dismissed with a :class:`Decision` (see the module)."""

    CSS_PATH = "plan.tcss"
    AUTO_FOCUS = "#plan-box"
    BINDINGS = [
        Binding("a", "approve('accept-edits')", "approve, accept edits"),
        Binding("d", "approve('default')", "approve, default mode"),
        Binding("f", "feedback", "send back with feedback"),
        Binding("s", "toggle_save", "keep in .monkey/plans/"),
        Binding("r", "reject", "reject"),
        Binding("escape", "stop", "reject", priority=True),
    ]
    ANSWER_ACTIONS = frozenset({"approve", "feedback", "toggle_save", "reject"})
    WAIT_TEXT = "read it first: the answer keys work in a moment"

    def __init__(
        self,
        request: ApprovalRequest,
        *,
        guard: float = GUARD_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        waiting: int = 0,
    ) -> None:
        super().__init__(request, guard=guard, clock=clock, waiting=waiting)
        self.save = False
        """Whether an approved plan is also kept in the project's ``.monkey/plans/``."""

    @property
    def asking_feedback(self) -> bool:
        """Whether the feedback input is showing (``f`` was pressed)."""
        return self.typing

    def keys_text(self) -> Text:
        return Text("a approve, accept edits   d approve, default mode   f send back with feedback   r or Esc reject")

    def title_text(self) -> Text:
        return Text.assemble(("Approve this plan?", "bold"), "  the model is in plan mode and asks to start on it")

    def _save_text(self) -> Text:
        box = "[x]" if self.save else "[ ]"
        return Text.assemble(("s", "bold"), f" {box} also keep the approved plan in {PLANS_DIR}/ in the project")

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield self.heading()
            if self.request.warnings:
                yield Static(Text("⚠ " + "\n⚠ ".join(self.request.warnings), style="bold"), id="warnings")
            with VerticalScroll(id="plan-box"):
                yield Markdown(self.request.summary.strip() or "(an empty plan)", id="plan")
            yield Static(self._save_text(), id="save")
            yield Input(placeholder="what should change in the plan? (Enter sends it back to the model)", id="feedback")
            yield self.keys_line()

    def action_approve(self, mode: str) -> None:
        """Approve the plan; the session goes on in ``mode``."""
        self.dismiss(approve_plan(mode, save=self.save))

    def action_toggle_save(self) -> None:
        """Keep (or not) the approved plan in ``.monkey/plans/``."""
        self.save = not self.save
        self.query_one("#save", Static).update(self._save_text())

    def action_feedback(self) -> None:
        """Show the feedback input; Enter in it sends the plan back."""
        self.typing = True
        box = self.query_one("#feedback", Input)
        box.display = True
        box.focus()
        self.query_one("#keys", Static).update(Text("Enter send it back   Esc reject the plan"))

    def action_stop(self) -> None:
        """Esc: reject at once (no guard; rejecting changes nothing)."""
        self.action_reject()

    def action_reject(self) -> None:
        """Reject the plan: the turn stops, the session stays in plan mode."""
        self.dismiss(reject_plan())

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Send the plan back with the typed feedback (nothing typed: the input closes)."""
        event.stop()
        feedback = event.value.strip()
        if not feedback:
            self.typing = False
            event.input.display = False
            self.query_one("#plan-box").focus()
            self.query_one("#keys", Static).update(self.keys_text())
            return
        self.dismiss(send_back(feedback))
