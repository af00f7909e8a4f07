"""The status bar: backend, model, tokens, cost, context, iteration, checkpoints, background processes, spinner."""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.text import Text
from textual.timer import Timer
from textual.widgets import Static

from monkey.modes import LABELS
from monkey.safe_text import escape_controls

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
MODE_STYLES = {"accept-edits": "bold green", "plan": "bold cyan", "auto": "bold yellow"}
"""How the status bar colours each mode other than ``default``."""


class StatusBar(Static):
    """One line of figures about the session; the app sets attributes and calls :meth:`show`."""

    DEFAULT_CSS = """
    StatusBar { height: 1; dock: bottom; background: $panel; color: $text-muted; padding: 0 1;
                text-wrap: nowrap; text-overflow: ellipsis; }
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
        self.processes = 0
        """Background processes running (``/processes`` lists them)."""
        self.started: float | None = None
        """When the running turn began (``None``: idle)."""
        self._timer: Timer | None = None

    def update_fields(self, fields: dict[str, object]) -> None:
        """Apply a :class:`~monkey.ui.bridge.StatusChanged`'s fields and redraw."""
        for key, value in fields.items():
            if key.startswith("add_"):
                name = {
                    "add_in": "tokens_in",
                    "add_out": "tokens_out",
                    "add_cost": "cost",
                    "add_checkpoint": "checkpoints",
                }[key]
                setattr(self, name, getattr(self, name) + value)
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

    def status_text(self, width: int = 0) -> Text:
        """The status line as text; with ``width`` the least needed figures are left out until it
        fits (the model's name, the iteration, the context, the tokens ...), never the mode, the
        checkpoints or the queue."""
        parts: list[tuple[int, Text]] = []  # (drop order: higher goes first; 0 stays, Text)
        if self.started is not None:
            elapsed = max(0.0, self.clock() - self.started)
            parts.append(
                (0, Text(f"{SPINNER[int(elapsed * 10) % len(SPINNER)]} working {elapsed:.0f}s  ", style="bold yellow"))
            )
        label = LABELS.get(self.mode, self.mode)  # type: ignore[call-overload]
        parts.append((0, Text(f"⏵ {label}", style=MODE_STYLES.get(self.mode, ""))))
        parts.append((3, Text.assemble(" · ", (escape_controls(self.backend or "?", keep_newlines=False), "bold"))))
        parts.append((7, Text(f" · {escape_controls(self.model or '?', keep_newlines=False)}")))
        tokens = Text(f" · ↑{self.tokens_in:,} ↓{self.tokens_out:,}")
        if self.max_tokens:
            used = self.tokens_in + self.tokens_out
            tokens.append(f"/{self.max_tokens:,}", style="bold red" if used >= self.max_tokens else "")
        parts.append((4 if not self.max_tokens else 1, tokens))
        cost = Text(f" · ${self.cost:.4f}")
        if self.max_budget_usd:
            cost.append(f"/${self.max_budget_usd:.2f}", style="bold red" if self.cost >= self.max_budget_usd else "")
        parts.append((2 if not self.max_budget_usd else 1, cost))
        if self.context is not None:
            parts.append((5, Text(f" · ctx {self.context:.0%}")))
        if self.max_iterations:
            parts.append((6, Text(f" · iter {self.iteration}/{self.max_iterations}")))
        parts.append((0, Text(f" · {self.checkpoints} checkpoint{'s' if self.checkpoints != 1 else ''}")))
        if self.queued:
            parts.append((0, Text(f" · {self.queued} queued", style="cyan")))
        if self.processes:
            parts.append((0, Text(f" · {self.processes} background", style="cyan")))
        if self.mcp:
            parts.append((1, Text(f" · {self.mcp}", style="red" if "failed" in self.mcp else "")))
        if width > 0:
            for level in range(7, 0, -1):
                if sum(t.cell_len for _, t in parts) <= width:
                    break
                parts = [(n, t) for n, t in parts if n != level]
        text = Text(no_wrap=True, overflow="ellipsis")
        for _, part in parts:
            text.append_text(part)
        return text

    def on_resize(self) -> None:
        self.show()

    def show(self) -> None:
        """Redraw the line (fitted to the width it has once laid out)."""
        self.update(self.status_text(self.content_size.width), layout=False)  # one docked row: never a reflow
