"""SIGTERM, SIGHUP, SIGQUIT (and SIGINT) to an interactive front end: stop cleanly, say which.

Without handlers these signals end Python at once: the app leaves the terminal in the
alternate screen with mouse reporting on, the cursor hidden and the tty raw, and nothing is
stored of the turn that ran. :class:`StopSignals` turns the first one into an orderly stop
that the front end carries out (cancel the turn, which stops the running command; end the
session; restore the terminal) and remembers the signal, so the exit status is ``128 + N``
as a shell reports it. If that takes longer than ``grace`` seconds, or a second signal
comes, the terminal is restored here (the tty mode saved at the start, the screen modes
switched off) and the process exits with ``128 + N`` at once; its children die with it
(:mod:`monkey.children`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

from monkey import children

__all__ = ["StopSignals", "RESET_SCREEN", "MODES_BACK", "HANGUP_GRACE", "terminal_there", "modes_back"]

HANGUP_POLL = 0.25
"""Seconds between two looks at whether the controlling terminal is still there."""
HANGUP_GRACE = 3.0
"""Seconds an orderly stop may take after SIGHUP: the terminal is gone, nobody waits to see it."""

MODES_BACK = (
    "\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?1015l\x1b[?1016l"  # mouse reporting off
    "\x1b[?2004l\x1b[?1004l\x1b[?2048l"  # bracketed paste, focus events, in-band resize off
    "\x1b[?7h"  # autowrap on (Textual turns it off)
    "\x1b[?25h"  # show the cursor
)
"""The modes a full-screen program changes, as a shell expects them (safe to send again, and
outside the alternate screen)."""
RESET_SCREEN = (
    "\x1b[<u"  # the kitty keyboard protocol off, before leaving the alternate screen (as Textual does)
    "\x1b[?1049l" + MODES_BACK  # leave the alternate screen
)
"""What a full-screen program switches on, switched off."""


class StopSignals:
    """The catchable signals that ask monkey to stop, handled on an asyncio loop.

    Args:
        on_stop: Called (on the loop) with the first signal; starts the front end's own stop.
        signals: The signals handled.
        grace: Seconds the orderly stop may take before the forced one.
    """

    def __init__(
        self,
        on_stop: Callable[[int], None],
        *,
        signals: tuple[int, ...] = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGINT),
        grace: float = 10.0,
    ) -> None:
        self.on_stop = on_stop
        self.signals = signals
        self.grace = grace
        self.received: int | None = None
        """The first signal that came, or None."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._previous: dict[int, Callable[[int, FrameType | None], Any] | int | signal.Handlers | None] = {}
        self._tty: tuple[int, list] | None = None
        self.last_words: Callable[[], str] = lambda: ""
        """More for the terminal when the stop is forced (the app: its window title given back)."""

    @property
    def exit_code(self) -> int | None:
        """``128 + N`` for signal N, or None when no signal came."""
        return None if self.received is None else 128 + self.received

    def save_terminal(self) -> None:
        """Remember the tty's mode now (before a full-screen program changes it)."""
        self._tty = _tty_mode()

    def install(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Handle the signals, calling ``on_stop`` on ``loop`` (the running one by default).

        The handlers are the process's own (``signal.signal``), not the loop's: they run even
        while the loop is stuck (a write to a terminal that is gone), so the forced stop
        always comes. Call from the main thread.
        """
        self._loop = loop or asyncio.get_running_loop()
        if self._tty is None:
            self.save_terminal()
        for sig in self.signals:
            try:
                self._previous[sig] = signal.signal(sig, self._handle)
            except (ValueError, OSError):  # not the main thread
                continue
        if signal.SIGHUP in self.signals and _controlling_tty():
            threading.Thread(target=self._watch_hangup, daemon=True, name="monkey-hangup").start()

    def _watch_hangup(self) -> None:
        """SIGHUP without the signal: the process lost its controlling terminal (Linux).

        Python runs signal handlers in the main thread only, and a front end drawing on a
        terminal that is gone can be stuck there for good (Textual's writer queue); the kernel
        clears the controlling terminal at the hangup, which this thread sees.
        """
        while self._previous and self.received is None:  # until uninstalled or a signal came
            if not _controlling_tty():
                self._handle(signal.SIGHUP)
                return
            time.sleep(HANGUP_POLL)

    def uninstall(self) -> None:
        """Stop handling the signals (the handlers from before come back)."""
        for sig, previous in self._previous.items():
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(sig, previous)
        self._previous.clear()

    def _handle(self, sig: int, frame: object = None) -> None:
        if sig == signal.SIGHUP and self.received == signal.SIGHUP:
            return  # seen by the hangup watcher and by the handler: one hangup
        if self.received is not None:  # a second signal: no more waiting
            self.force()
            return
        self.received = sig
        # A thread, not the loop: a front end stuck on a terminal that is gone still exits.
        grace = min(self.grace, HANGUP_GRACE) if sig == signal.SIGHUP else self.grace
        timer = threading.Timer(grace, self.force)
        timer.daemon = True
        timer.start()
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self.on_stop, sig)

    def force(self) -> None:
        """Kill the children, restore the terminal as it was saved, and exit with ``128 + N`` now."""
        try:
            with contextlib.suppress(Exception):
                children.kill_everything()
            with contextlib.suppress(Exception):
                restore_terminal(self._tty, screen=True, more=self.last_words())
        finally:
            os._exit(self.exit_code or 1)


def terminal_there() -> bool:
    """Whether the process still has its controlling terminal (a SIGHUP sent by someone, not a hangup)."""
    return _controlling_tty()


def modes_back() -> None:
    """Send :data:`MODES_BACK` straight to the terminal on stdout, if there is one (after a full-screen
    program ended: whatever it or a late frame of it left, the shell gets its modes back)."""
    with contextlib.suppress(OSError, ValueError):
        fd = sys.__stdout__.fileno() if sys.__stdout__ is not None else 1
        if os.isatty(fd):
            os.write(fd, MODES_BACK.encode())


def _controlling_tty() -> bool:
    """Whether the process has a controlling terminal (``tty_nr`` of ``/proc/self/stat``); False elsewhere."""
    try:
        with open("/proc/self/stat", "rb") as fh:
            data = fh.read()
        return int(data[data.rfind(b")") + 2 :].split()[4]) != 0
    except (OSError, ValueError, IndexError):
        return False


def _tty_mode() -> tuple[int, list] | None:
    try:
        import termios

        fd = sys.stdin.fileno()
        if not os.isatty(fd):
            return None
        return fd, termios.tcgetattr(fd)
    except (ImportError, OSError, ValueError):
        return None


def restore_terminal(saved: tuple[int, list] | None, *, screen: bool, more: str = "") -> None:
    """Put the tty back in ``saved`` mode and (``screen``) switch the screen modes off (and write
    ``more``); a gone terminal is fine."""
    if screen:
        with contextlib.suppress(OSError, ValueError):
            fd = sys.__stdout__.fileno() if sys.__stdout__ is not None else 1
            if os.isatty(fd):
                os.write(fd, (RESET_SCREEN + more).encode())
    if saved is not None:
        with contextlib.suppress(Exception):  # termios.error is no OSError
            import termios

            termios.tcsetattr(saved[0], termios.TCSANOW, saved[1])
