"""One tool call in the transcript: a collapsible block with arguments, output and result."""

from __future__ import annotations

import json

from rich.console import Group
from rich.syntax import Syntax
from rich.text import Text
from textual.widgets import Static

from monkey.safe_text import escape_controls
from monkey.ui.widgets.quiet_collapsible import QuietCollapsible

MAX_OUTPUT = 20_000
"""Characters of live output kept in a block (the tail)."""


def _args_line(name: str, arguments: dict) -> str:
    if name == "shell_execute" and "command" in arguments:
        return str(arguments["command"])
    if "path" in arguments:
        return str(arguments["path"])
    if name == "task" and "description" in arguments:
        return f"{arguments.get('agent', 'general')}: {arguments['description']}"
    if isinstance(arguments.get("plan"), str):  # exit_plan_mode: the plan's first line, not its JSON
        lines = [line.strip().lstrip("#").strip() for line in arguments["plan"].splitlines()]
        return "plan: " + next((line for line in lines if line), "(empty)")
    shown = []
    for key, value in arguments.items():  # name: value, as a person reads it
        if not isinstance(value, str):
            try:
                value = json.dumps(value, ensure_ascii=False)
            except (TypeError, ValueError):
                value = repr(value)
        shown.append(f"{key}: {' '.join(value.split())}")
    return ", ".join(shown)


class ToolBlock(QuietCollapsible):
    """A tool call: the title says tool, arguments, state and duration; the body the details."""

    DEFAULT_CSS = """
    ToolBlock { margin: 0 0 0 2; padding: 0; border: none; background: $surface; }
    ToolBlock.-failed CollapsibleTitle { color: $error; }
    ToolBlock Static { padding: 0 1; }
    """

    def __init__(self, call_id: str, name: str, arguments: dict) -> None:
        self.call_id = call_id
        """The call's id."""
        self.tool = name
        """The tool's name."""
        self.arguments = arguments
        """The arguments as the model wrote them."""
        self.state = "asked"
        """``asked``, ``running``, ``ok``, ``failed``, ``denied`` ..."""
        self.output = ""
        """Streamed output so far (tail of :data:`MAX_OUTPUT`)."""
        self.shown = ""
        """The plain text the body shows (escaped)."""
        self.duration_ms: float | None = None
        """How long the call ran, once finished (the time a person spent deciding not included)."""
        self.wait_ms = 0.0
        """How long the call waited for a person's approval."""
        self.finished = False
        """Whether the call's result came (or the turn ended without one)."""
        self.body = Static("", markup=False)
        super().__init__(self.body, title=self._make_title(), collapsed=True)

    def _make_title(self) -> str:
        args = escape_controls(_args_line(self.tool, self.arguments), keep_newlines=False)
        if len(args) > 70:
            args = args[:69] + "…"
        took = f" · {self.duration_ms / 1000:.2f}s" if self.duration_ms is not None else ""
        if took and self.wait_ms > 0:
            took += f" · waited {self.wait_ms / 1000:.1f}s"
        return f"⚙ {self.tool} {args} · {self.state}{took}"

    def _refresh_title(self) -> None:
        self.title = self._make_title()

    def progress(self, text: str = "", state: str = "") -> None:
        """Append live output and/or change the state word."""
        if state and self.finished:  # a late word never replaces how the call ended
            return
        if state:
            self.state = state
            self._refresh_title()
        if text:
            self.output = (self.output + text)[-MAX_OUTPUT:]
            self.shown = escape_controls(self.output)
            self.body.update(Text(self.shown))
            if self.collapsed and self.tool == "shell_execute":
                self.set_open(True)

    def finish(self, ok: bool, output: str, duration_ms: float, diff: str, wait_ms: float = 0.0) -> None:
        """Show the result: a syntax-highlighted diff, else the output; the title says run and wait times."""
        self.finished = True
        if self.state not in ("denied",):
            self.state = "ok" if ok else "failed"
        self.duration_ms = duration_ms
        self.wait_ms = wait_ms
        self.set_class(not ok, "-failed")
        self._refresh_title()
        parts: list[object] = []
        if diff:
            self.shown = escape_controls(diff)
            parts.append(Syntax(self.shown, "diff", theme="ansi_dark", word_wrap=True))
            self.set_open(True)
        shown = output  # what the model was given: the same however the live output arrived
        if shown and not diff:
            if self.tool == "shell_execute":
                self.set_open(True)
            lines = escape_controls(shown).splitlines()
            if len(lines) > 40:
                lines = lines[:20] + [f"… {len(lines) - 40} more lines …"] + lines[-20:]
            self.shown = "\n".join(lines)
            parts.append(Text(self.shown, style="" if ok else "red"))
        self.body.update(Group(*parts) if parts else Text("(no output)", style="dim"))
