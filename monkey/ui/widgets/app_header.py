"""The header at the top of the app: where monkey works, with what, and tips."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.widgets import Static

from monkey.gitinfo import current_branch, short_path
from monkey.safe_text import escape_controls

TIPS = "/help commands · @ mention a file · Shift+Tab mode · Esc cancels a turn · Ctrl+E events · Ctrl+C twice quits"
"""The line of tips under the header."""
SHORT_TIPS = "/help commands · @ file · Shift+Tab mode · Esc cancels · Ctrl+C twice quits"
"""The tips where the whole line does not fit (80 columns): the way out stays."""


class AppHeader(Static):
    """Two lines: workspace, git branch, backend, model and the instruction files the model
    follows (``/memory`` lists them all); then tips (the status bar shows the mode).

    The app sets :attr:`backend` and :attr:`model` through :meth:`set_backend` when
    ``/model`` or ``/backend`` switches.
    """

    DEFAULT_CSS = """
    AppHeader { height: 2; padding: 0 1; color: $text-muted; border-bottom: none;
                text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def __init__(self, workspace: Path, backend: str, model: str, **kwargs: object) -> None:
        super().__init__("", **kwargs)  # type: ignore[arg-type]
        self.workspace = workspace
        """The workspace folder."""
        self.branch = current_branch(workspace)
        """The checked-out git branch (None outside a repository)."""
        self.backend = backend
        """The backend's name."""
        self.model = model
        """The model's name."""
        self.instructions: list[str] = []
        """The instruction files the model follows (``AGENTS.md``...), as the session named them."""

    def on_mount(self) -> None:
        self.show()

    def set_backend(self, backend: str | None = None, model: str | None = None) -> None:
        """A switch of backend or model: show the new ones."""
        if backend is not None:
            self.backend = backend
        if model is not None:
            self.model = model
        self.show()

    def set_instructions(self, paths: list[str], *, more: bool = False) -> None:
        """The instruction files a session started with (or, ``more``, found below since)."""
        self.instructions = list(dict.fromkeys([*(self.instructions if more else []), *paths]))
        self.show()

    def header_text(self) -> Text:
        """The two lines as text."""
        clean = lambda s: escape_controls(s, keep_newlines=False)  # noqa: E731
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append("monkey", style="bold")
        text.append(f" · {clean(short_path(self.workspace))}", style="bold")
        if self.branch:
            text.append(f" · ⎇ {clean(self.branch)}")
        text.append(f" · {clean(self.backend or '?')} · {clean(self.model or '?')}")
        if self.instructions:
            names = ", ".join(clean(p) for p in self.instructions[:2])
            extra = f" +{len(self.instructions) - 2}" if len(self.instructions) > 2 else ""
            text.append(f" · follows {names}{extra}", style="dim")
        text.append("\n")
        width = self.content_size.width
        text.append(SHORT_TIPS if 0 < width < len(TIPS) else TIPS, style="dim")
        return text

    def on_resize(self) -> None:
        self.show()

    def show(self) -> None:
        """Redraw."""
        self.update(self.header_text())
