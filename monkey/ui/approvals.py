"""The approval requests waiting for the person: one dialog at a time, first asked first shown.

Sub-agents running at once (several ``task`` calls in one response) share their parent's
approver, so two of them may ask at the same moment. Each request comes with the future its
call awaits (:class:`~monkey.ui.approver.ApprovalNeeded`); the app shows the first one's
dialog, which says who asks and how many more wait, and the next when it is answered. Each
answer resolves the future of the call that asked, and nothing else.

Before a request's dialog is shown, the permission engine looks at it again when it offers
that (:attr:`~monkey.permissions.requests.ApprovalRequest.recheck`): a session grant the person gave
on an earlier dialog may cover it, and then the engine's decision answers it, not a dialog.

A request withdrawn by its call (the call was cancelled) leaves the line, or closes its
dialog if it is the one shown. When the person stops the turn (Esc in a dialog, or ``n``
with no reason, or Ctrl-C), every request still waiting is refused as stopped.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from monkey.ui.approver import ApprovalNeeded

if TYPE_CHECKING:
    from textual.screen import Screen

    from monkey.permissions.requests import Decision

    from monkey.ui.attention import Attention
    from monkey.ui.screens.guarded import GuardedDialog

__all__ = ["ApprovalQueue"]


def _stopped(reason: str = "") -> Decision:
    """The refusal of a request the person stopped (the engine is imported with the first question)."""
    from monkey.permissions.requests import stopped_by_user

    return stopped_by_user(reason) if reason else stopped_by_user()


class Host(Protocol):
    """What the queue needs of the app (:class:`~monkey.ui.app.MonkeyApp`)."""

    approval_guard: float
    approval_clock: Callable[[], float]
    attention: Attention

    @property
    def screen(self) -> Screen[Any]: ...

    def push_screen(self, screen: Screen[Any], callback: Callable[[Any], None]) -> Any: ...

    def call_later(self, callback: Callable[..., Any], *args: Any) -> bool: ...


class ApprovalQueue:
    """The app's requests for the person's approval, shown one at a time in the order asked."""

    def __init__(self, app: Host) -> None:
        self.app = app
        self.waiting: deque[ApprovalNeeded] = deque()
        """Requests not shown yet, first asked first."""
        self.shown: tuple[ApprovalNeeded, GuardedDialog] | None = None
        """The request whose dialog is on screen, and the dialog."""
        self.settling: ApprovalNeeded | None = None
        """The request just answered, until its call has taken the answer (then the next is shown)."""

    def add(self, message: ApprovalNeeded) -> None:
        """A call asks: show its dialog now, or after those before it."""
        if message.future.done():
            return
        message.future.add_done_callback(lambda _: self._withdrawn(message))
        self.waiting.append(message)
        if self.shown is None and self.settling is None:
            self._show_next()
        else:
            self._count()

    def stop_all(self) -> None:
        """The turn stops: refuse every waiting request and close the dialog on screen."""
        waiting, self.waiting = list(self.waiting), deque()
        for message in waiting:
            if not message.future.done():
                message.future.set_result(_stopped())
        if self.shown is not None:
            message = self.shown[0]
            if not message.future.done():
                message.future.set_result(_stopped())  # its done-callback closes the dialog

    def _show_next(self) -> None:
        from monkey.ui.screens.approval import ApprovalScreen

        while self.waiting:
            message = self.waiting.popleft()
            if message.future.done():
                continue
            decided = message.request.decided_now()
            if decided is not None:  # a grant given while it waited covers it: the engine decided
                message.future.set_result(decided)
                continue
            if message.request.plan:  # exit_plan_mode: the plan dialog
                from monkey.ui.screens.plan import PlanScreen

                kind: type[GuardedDialog] = PlanScreen
            else:
                kind = ApprovalScreen
            screen = kind(
                message.request, guard=self.app.approval_guard, clock=self.app.approval_clock, waiting=self._waiting()
            )
            self.shown = (message, screen)
            self.app.push_screen(screen, partial(self._answered, message))
            self.app.attention.approval_waiting(message.request.tool, message.request.arguments)
            return

    def _answered(self, message: ApprovalNeeded, decision: Decision | None) -> None:
        """The shown dialog closed: its answer goes to its call; a stop refuses the rest.

        The next request is shown once that call has taken its answer: a session grant the answer
        gives is recorded by then, and the engine's second look at the next request sees it.
        """
        self.app.attention.answered()
        if not message.future.done():  # not withdrawn meanwhile
            decision = decision or _stopped("dismissed")
            message.future.set_result(decision)
            if decision.stop:
                self.stop_all()
        if self.shown is None or self.shown[0] is not message:
            return
        self.shown, self.settling = None, message
        if message.settled is None:
            self._settled(message)
        else:
            message.settled.add_done_callback(lambda _: self.app.call_later(self._settled, message))

    def _settled(self, message: ApprovalNeeded) -> None:
        if self.settling is message:
            self.settling = None
            self._show_next()

    def _withdrawn(self, message: ApprovalNeeded) -> None:
        """A request's future is done: answered, refused, or withdrawn by its call."""
        if self.shown is not None and self.shown[0] is message:
            screen = self.shown[1]
            if screen.is_attached and self.app.screen is screen:
                screen.dismiss(None)  # answered already: _answered shows the next
            return
        if message in self.waiting:
            self.waiting.remove(message)
            self._count()

    def _count(self) -> None:
        """Tell the shown dialog how many wait behind it."""
        if self.shown is not None:
            self.shown[1].set_waiting(self._waiting())

    def _waiting(self) -> int:
        return sum(not m.future.done() for m in self.waiting)
