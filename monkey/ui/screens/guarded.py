"""What the approval and plan dialogs share: a guard against keys typed ahead, and who asks.

A person typing while the agent works does not see a dialog appear between two keys; what they type
in the next moments must not answer it. A :class:`GuardedDialog` ignores its answer keys until the
keyboard has been quiet for ``guard`` seconds since it opened (every key pressed meanwhile starts
the wait again, so someone typing steadily never answers it by accident) and says so on its key line
(``#keys``) until they work; the key that only refuses (Esc) works at once. While a text box of the
dialog is open (:attr:`GuardedDialog.typing`: a reason, feedback) the answer keys type into it
instead.

Its title (``#title``) also says who asks when a sub-agent does, and how many more requests
wait behind it (the app shows one dialog at a time: :mod:`monkey.ui.approvals`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import ClassVar

from rich.text import Text
from textual.screen import ModalScreen
from textual.widgets import Static

from monkey.permissions.requests import ApprovalRequest, Decision
from monkey.safe_text import escape_controls
from monkey.ui.approver import GUARD_SECONDS

__all__ = ["GuardedDialog", "GUARD_SECONDS"]


class GuardedDialog(ModalScreen[Decision]):
    """A dialog answering one :class:`ApprovalRequest` with a :class:`Decision` (see the module).

    Subclasses name their answer actions in :attr:`ANSWER_ACTIONS`, say their keys in
    :meth:`keys_text` and what they wait for in :attr:`WAIT_TEXT`, and compose :meth:`heading`
    as their ``#title`` and ``#keys`` (:meth:`keys_line`).
    """

    ANSWER_ACTIONS: ClassVar[frozenset[str]] = frozenset()
    """Actions that wait for the guard and stop working while a text box is open."""
    WAIT_TEXT: ClassVar[str] = "look first: the answer keys work in a moment"
    """The key line while the guard lasts (no key is offered before it works)."""

    def __init__(
        self,
        request: ApprovalRequest,
        *,
        guard: float = GUARD_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        waiting: int = 0,
    ) -> None:
        super().__init__()
        self.request = request
        """The call waiting for an answer."""
        self.guard = guard
        """Seconds after opening during which the answer keys are ignored (keys typed ahead)."""
        self.clock = clock
        """The clock of the guard."""
        self.opened_at: float | None = None
        """When the dialog was first shown (by :attr:`clock`)."""
        self.quiet_since: float | None = None
        """When the guard's wait last started: the dialog opened, or a key was pressed since."""
        self._armed = False
        self.typing = False
        """Whether a text box of the dialog is open (the answer keys type into it)."""
        self.waiting = waiting
        """How many more requests wait for the person behind this one."""

    @property
    def armed(self) -> bool:
        """Whether the answer keys work: the keyboard has been quiet for :attr:`guard` seconds since
        the dialog opened. Once they work they keep working."""
        if not self._armed and self.quiet_since is not None:
            self._armed = self.clock() - self.quiet_since >= self.guard
        return self._armed

    def note_key(self, at: float) -> None:
        """A key was pressed at ``at`` (by :attr:`clock`): while the guard lasts, its wait starts again."""
        if self.quiet_since is not None and not self.armed:
            self.quiet_since = max(self.quiet_since, at)

    def on_key(self) -> None:
        """Every key reaches the screen before its binding is looked up, so an answer key pressed
        while the guard lasts restarts it and is then ignored."""
        self.note_key(self.clock())

    def on_mount(self) -> None:
        self.opened_at = self.quiet_since = self.clock()
        if self.guard > 0:
            self._arming = self.set_interval(0.05, self._show_keys_when_armed)

    def _show_keys_when_armed(self) -> None:
        if not self.armed:
            return
        self._arming.stop()
        if not self.typing:
            self.query_one("#keys", Static).update(self.keys_text())

    def keys_text(self) -> Text:
        """The answer keys, as the key line shows them."""
        raise NotImplementedError

    def keys_line(self) -> Static:
        """The ``#keys`` line: the answer keys, or while the guard lasts :attr:`WAIT_TEXT`."""
        return Static(self.keys_text() if self.guard <= 0 else Text(self.WAIT_TEXT, style="italic"), id="keys")

    def title_text(self) -> Text:
        """The dialog's question (first line of ``#title``)."""
        raise NotImplementedError

    def heading(self) -> Static:
        """The ``#title``: the question, then who asks and how many wait, when there is any of that."""
        return Static(self._heading_text(), id="title")

    def _heading_text(self) -> Text:
        text = self.title_text()
        said = []
        if self.request.asker:
            said.append(f"asked by {escape_controls(self.request.asker, keep_newlines=False)}")
        if self.waiting:
            said.append(f"{self.waiting} more waiting")
        if said:
            text.append("\n" + "   ·   ".join(said), style="italic")
        return text

    def set_waiting(self, waiting: int) -> None:
        """Say how many more requests wait behind this one."""
        if waiting != self.waiting:
            self.waiting = waiting
            if self.is_mounted:
                self.query_one("#title", Static).update(self._heading_text())

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Answer keys wait for the guard and stop working while a text box is open."""
        if action in self.ANSWER_ACTIONS and (self.typing or not self.armed):
            return False
        return self.offers(action)

    def offers(self, action: str) -> bool:
        """Whether this request offers ``action`` at all (the guard aside)."""
        return True
