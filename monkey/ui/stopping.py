"""How the app stops: ``q`` / Ctrl-C twice, a stop signal, unmounting; each ends the session once.

A mixin of :class:`monkey.ui.app.MonkeyApp` (the attributes it uses are the app's), kept apart so
the app module stays about what it shows.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from typing import TYPE_CHECKING, Any

from monkey.line.stop_signals import terminal_there

__all__ = ["Stopping"]


class Stopping:
    """Quitting, stop signals and the session's one end, for the app."""

    if TYPE_CHECKING:  # what the app provides
        attention: Any
        stop_signals: Any
        workers: Any
        last_reason: str
        live: Any
        _agent: Any
        _backend: Any
        _session_closed: bool

        def exit(self, result: Any = None) -> None: ...

    async def action_quit(self) -> None:
        """End the session cleanly and quit."""
        self.attention.close()
        if self._agent is not None:
            self._agent.cancel()
        self.workers.cancel_group(self, "turn")
        await self._end_session()
        self.exit(0 if self.last_reason in ("", "completed") else 1)

    def _title_back(self) -> str:
        """A forced exit: the terminal's own title back (what the app queued may not have been written)."""
        from monkey.ui.attention import POP_TITLE

        return POP_TITLE if self.attention.changed_title else ""

    def _stop_for_signal(self, sig: int) -> None:
        """A stop signal: the running turn (and its command) is cancelled and waited for, then the app quits."""
        asyncio.get_running_loop().create_task(self._quit_for_signal(128 + sig))

    async def _quit_for_signal(self, code: int) -> None:
        self.attention.close()
        turn = [worker for worker in self.workers if worker.group == "turn"]
        if self._agent is not None:
            self._agent.cancel()
        with contextlib.suppress(asyncio.TimeoutError):  # the command is stopped, the turn's end stored
            await asyncio.wait_for(self.workers.wait_for_complete(turn), self.stop_signals.grace / 2)
        self.workers.cancel_group(self, "turn")
        if code == 128 + signal.SIGHUP and not terminal_there():  # the terminal is gone: drawing on it could hang
            with contextlib.suppress(Exception):
                await self._end_session()
            self.stop_signals.force()
        await self._end_session()
        self.exit(code)

    async def _end_session(self) -> None:
        """End the session and close what it runs (:meth:`Session.close`); a backend whose agent was
        never built (the app quit before its first frame) is closed alone."""
        if self._session_closed:
            return
        self._session_closed = True
        if self._agent is not None:
            await self.live.close()
        else:
            await self._backend.aclose()

    async def on_unmount(self) -> None:
        self.stop_signals.uninstall()
        self.attention.close()
        with contextlib.suppress(Exception):  # a backend that fails to close: nothing to show it on any more
            await self._end_session()
