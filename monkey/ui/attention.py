"""Calling the person back: a bell and the terminal's title when monkey needs them.

A person who lets the agent work switches to another window; they should hear and see
when an approval waits for them, and when a long turn is over. The title says it
(``monkey · approval needed · proj``) in the terminal's tab and window list, and goes
back to ``monkey · proj`` once the person is back (they typed or answered). The title
the terminal had before is saved on the first change (XTWINOPS push) and given back
when the app closes (pop). ``[ui] bell``, ``[ui] title`` and ``[ui] long_turn`` set it. The same
moments go out as notifications off the terminal (:mod:`monkey.notify`, ``[notify]``).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from typing import TYPE_CHECKING, Any

from monkey.safe_text import escape_controls

if TYPE_CHECKING:
    from monkey.notify import Notifier

__all__ = ["Attention"]

BELL = "\a"
PUSH_TITLE = "\x1b[22;0t"
POP_TITLE = "\x1b[23;0t"


def title_sequence(title: str) -> str:
    """OSC 2: set the window title (control characters removed: they would end the sequence)."""
    clean = "".join(ch for ch in escape_controls(title, keep_newlines=False) if ch.isprintable())
    return f"\x1b]2;{clean}\a"


class Attention:
    """Rings and retitles through ``write`` (the app's terminal), as the settings allow."""

    def __init__(
        self,
        write: Callable[[str], None],
        *,
        place: str,
        bell: bool = True,
        title: bool = True,
        long_turn: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
        notifier: Notifier | None = None,
        session: Callable[[], str] = lambda: "",
    ) -> None:
        self.write = write
        self.notifier = notifier
        """Notifications off the terminal for the same moments (None: none)."""
        self.session = session
        self.place = place
        """What the title names (the workspace folder's name)."""
        self.bell = bell
        self.title = title
        self.long_turn = long_turn
        """A turn at least this many seconds long calls the person when it ends."""
        self.clock = clock
        self._pushed = False
        self._ever = False
        self._turn_started: float | None = None
        self.state = ""
        """What the title says now (``""``: the plain title)."""

    def _set(self, state: str) -> None:
        if not self.title or state == self.state:
            return
        if not self._pushed:
            self.write(PUSH_TITLE)
            self._pushed = self._ever = True
        self.state = state
        self.write(title_sequence(" · ".join(part for part in ("monkey", state, self.place) if part)))

    def _ring(self) -> None:
        if self.bell:
            self.write(BELL)

    def turn_started(self) -> None:
        """The person sent a message: they are here; the turn's clock starts."""
        self._turn_started = self.clock()
        self._set("working")

    def approval_waiting(self, tool: str = "", arguments: dict[str, Any] | None = None) -> None:
        """An approval dialog opened: nothing goes on until the person answers."""
        self._ring()
        self._set("approval needed")
        if self.notifier is not None and tool:
            from monkey.notify import Notice, question_line

            self.notifier.send(
                Notice(
                    "approval",
                    self._title("approval needed"),
                    question_line(tool, arguments or {}),
                    session=self.session(),
                    workspace=self.place,
                )
            )

    def _title(self, state: str) -> str:
        return " · ".join(part for part in ("monkey", state, self.place) if part)

    def answered(self) -> None:
        """The person answered the dialog."""
        self._set("working" if self._turn_started is not None else "")

    def turn_ended(self, reason: str) -> None:
        """The turn ended: a long one calls the person back; the title says how it ended."""
        started, self._turn_started = self._turn_started, None
        took = self.clock() - started if started is not None else 0.0
        long = started is not None and took >= self.long_turn
        if long:
            self._ring()
            if self.notifier is not None:
                from monkey.notify import Notice

                said = "done" if reason == "completed" else f"stopped: {reason}"
                self.notifier.send(
                    Notice(
                        "turn_done",
                        self._title(said),
                        f"the turn took {took:.0f} s",
                        session=self.session(),
                        workspace=self.place,
                    )
                )
        if reason == "completed":
            self._set("done" if long else "")
        elif reason == "cancelled":
            self._set("")
        else:
            self._set(f"stopped: {reason}")

    def back(self) -> None:
        """The person is typing again: the plain title."""
        if self._turn_started is None:
            self._set("")

    @property
    def changed_title(self) -> bool:
        """Whether the title was ever changed (a forced exit gives the terminal its own back, to be sure)."""
        return self._ever

    def close(self) -> None:
        """The app closes: give the terminal its own title back."""
        if self._pushed:
            self.write(POP_TITLE)
            self._pushed = False
