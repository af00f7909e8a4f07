"""The slash commands or ``@paths`` that match what is typed, shown above the message box."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


class CommandHints(Static):
    """Shows matching commands; hidden when there are none."""

    DEFAULT_CSS = """
    CommandHints { height: auto; max-height: 13; padding: 0 2; color: $text-muted; display: none; }
    CommandHints.-shown { display: block; }
    """

    shown: tuple[str, ...] = ()
    """The commands shown now."""

    def show_matches(self, matches: list[str]) -> None:
        """Show ``matches`` (Tab completes), or hide. Unchanged matches cost nothing, so
        typing an ordinary message never re-lays out the screen."""
        if tuple(matches) == self.shown:
            return
        self.shown = tuple(matches)
        self.set_class(bool(matches), "-shown")
        from monkey.session.commands import COMMANDS  # imported once a hint is shown, not before the first frame

        text = Text()
        for i, cmd in enumerate(matches):
            if i:
                text.append("\n")
            text.append(f"{cmd:<13}", style="bold")
            text.append(COMMANDS.get(cmd, ""))
        self.update(text)
