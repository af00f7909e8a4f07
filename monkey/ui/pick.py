"""``monkey agent --resume`` without an id, on a terminal with the app: the session picker alone.

It runs before the app so that the app starts on the chosen session like ``--resume ID``
(checked, restored and shown the same way); the picker screen is the app's own
(:class:`~monkey.ui.screens.picker.SessionPickerScreen`, also behind ``/sessions``).
"""

from __future__ import annotations

from pathlib import Path

from textual.app import App

from monkey.store import SessionStore
from monkey.ui.screens.picker import SessionPickerScreen

__all__ = ["PickerApp", "pick_in_app"]


class PickerApp(App[str | None]):
    """Shows the workspace's sessions; ``run()`` returns the chosen id, or None (Esc)."""

    TITLE = "monkey"

    def __init__(self, workspace: Path, *, store_path: Path | None = None) -> None:
        super().__init__()
        self.workspace = workspace
        """Whose sessions are listed."""
        self.store_path = store_path
        """The session database (default: the monkey home's)."""
        self.store: SessionStore | None = None

    async def on_mount(self) -> None:
        self.store = await SessionStore.open(self.store_path)
        self.push_screen(SessionPickerScreen(self.store, self.workspace), self.exit)

    async def on_unmount(self) -> None:
        if self.store is not None:
            await self.store.close()


def pick_in_app(workspace: Path, *, inline: bool = False) -> str | None:
    """Run the picker; the chosen session's id, or None when the person pressed Esc."""
    from monkey.ui.whole_writes import whole_frames

    with whole_frames():
        return PickerApp(workspace).run(inline=inline)
