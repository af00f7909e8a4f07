"""The status bar: backend, model, tokens, cost, context, iteration, checkpoints, spinner."""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.text import Text
from textual.widgets import Static

from monkey.modes import LABELS
from monkey.safe_text import escape_controls

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
MODE_STYLES = {"accept-edits": "bold green", "plan": "bold cyan", "auto": "bold yellow"}
"""How the status bar colours each mode other than ``default``."""


class StatusBar(Static):
    """One line of figures about the session; the app sets attributes and calls :meth:`show`."""

    DEFAULT_CSS = """
    StatusBar { height: 1; dock: bottom; background: $panel; color: $text-muted; padding: 0 1; }
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic, **kwargs: object) -> None:
        super().__init__("", **kwargs)  # type: ignore[arg-type]
        self.clock = clock
        """Where elapsed time comes from (tests freeze it)."""
        self.mode = "default"
        """The permission mode (:mod:`monkey.modes`)."""
        self.backend = ""
        """The backend's name."""
        self.model = ""
        """The model's name."""
        self.tokens_in = 0
        """Input tokens used in this app run."""
        self.tokens_out = 0
        """Output tokens used in this app run."""
        self.cost = 0.0
        """Cost in US dollars."""
        self.max_budget_usd = 0.0
        """The run's dollar budget (0: none); the cost is shown against it."""
        self.max_tokens = 0
        """The run's token budget, input plus output (0: none)."""
        self.context: float | None = None
        """Fraction of the context window the last request used."""
        self.iteration = 0
        """The current model call of the turn."""
        self.max_iterations = 0
        """The most model calls a turn may make."""
        self.checkpoints = 0
        """Checkpoints taken in this session."""
        self.queued = 0
        """Messages waiting for the turn to end."""
        self.mcp = ""
        """The MCP servers' status (``mcp 2/3 ready``; empty: none configured)."""
        self.started: float | None = None
        """When the running turn began (``None``: idle)."""
        self._timer = None

    def update_fields(self, fields: dict[str, object]) -> None:
        """Apply a :class:`~monkey.ui.bridge.StatusChanged`'s fields and redraw."""
        for key, value in fields.items():
            if key.startswith("add_"):
                name = {"add_in": "tokens_in", "add_out": "tokens_out", "add_cost": "cost",
                        "add_checkpoint": "checkpoints"}[key]
                setattr(self, name, getattr(self, name) + value)  # type: ignore[operator]
            else:
                setattr(self, key, value)
        self.show()

    def reset_totals(self) -> None:
        """A new conversation: tokens, cost, context and iteration start again from zero (``/clear`` then
        shows what the session's budget still counts)."""
        self.tokens_in = self.tokens_out = 0
        self.cost = 0.0
        self.context = None
        self.iteration = 0
        self.show()

    def set_working(self, working: bool) -> None:
        """Start or stop the spinner and the elapsed time."""
        if working and self.started is None:
            self.started = self.clock()
            self._timer = self.set_interval(0.1, self.show)
        elif not working and self.started is not None:
            self.started = None
            if self._timer is not None:
                self._timer.stop()
                self._timer = None
        self.show()

    def status_text(self) -> Text:
        """The status line as text."""
        text = Text(no_wrap=True, overflow="ellipsis")
        if self.started is not None:
            elapsed = max(0.0, self.clock() - self.started)
            text.append(f"{SPINNER[int(elapsed * 10) % len(SPINNER)]} working {elapsed:.0f}s", style="bold yellow")
            text.append("  ")
        label = LABELS.get(self.mode, self.mode)  # type: ignore[call-overload]
        text.append(f"⏵ {label}", style=MODE_STYLES.get(self.mode, ""))
        text.append(" · ")
        text.append(escape_controls(self.backend or "?", keep_newlines=False), style="bold")
        text.append(f" · {escape_controls(self.model or '?', keep_newlines=False)}")
        text.append(f" · ↑{self.tokens_in:,} ↓{self.tokens_out:,}")
        if self.max_tokens:
            used = self.tokens_in + self.tokens_out
            text.append(f"/{self.max_tokens:,}", style="bold red" if used >= self.max_tokens else "")
        text.append(f" · ${self.cost:.4f}")
        if self.max_budget_usd:
            text.append(f"/${self.max_budget_usd:.2f}", style="bold red" if self.cost >= self.max_budget_usd else "")
        if self.context is not None:
            text.append(f" · ctx {self.context:.0%}")
        if self.max_iterations:
            text.append(f" · iter {self.iteration}/{self.max_iterations}")
        text.append(f" · {self.checkpoints} checkpoint{'s' if self.checkpoints != 1 else ''}")
        if self.queued:
            text.append(f" · {self.queued} queued", style="cyan")
        if self.mcp:
            text.append(f" · {self.mcp}", style="red" if "failed" in self.mcp else "")
        return text

    def show(self) -> None:
        """Redraw the line."""
        self.update(self.status_text(), layout=False)  # one docked row: never a reflow
