"""A running sub-agent under its ``task`` call: its tool calls as one-line summaries, then its answer."""

from __future__ import annotations

import json

from rich.text import Text
from textual.widgets import Collapsible, Static

from monkey.events import Event, Handoff, SubagentStarted, ToolCallEvent, ToolResult
from monkey.safe_text import escape_controls

MAX_LINES = 200
"""Tool-call lines kept (the oldest go first)."""


def _summary(name: str, arguments: dict) -> str:
    if name == "shell_execute" and "command" in arguments:
        text = str(arguments["command"])
    elif name == "task":
        text = f"{arguments.get('agent', 'general')}: {arguments.get('description', '')}"
    else:
        text = next((str(arguments[k]) for k in ("path", "pattern") if k in arguments), "")
        if not text:
            try:
                text = json.dumps(arguments, ensure_ascii=False)
            except (TypeError, ValueError):
                text = repr(arguments)
    text = escape_controls(text, keep_newlines=False)
    return text if len(text) <= 80 else text[:79] + "…"


class SubagentBlock(Collapsible):
    """One sub-agent (and its own sub-agents, indented): live tool calls, then the handoff's answer."""

    DEFAULT_CSS = """
    SubagentBlock { margin: 0 0 0 4; padding: 0; border: none; border-left: tall $accent-darken-2;
                    background: transparent; }
    SubagentBlock.-failed CollapsibleTitle { color: $error; }
    SubagentBlock Static { padding: 0 1; }
    """

    def __init__(self, started: SubagentStarted) -> None:
        self.call_id = started.call_id
        """The parent's ``task`` call."""
        self.session_id = started.child_session_id
        """The child's session."""
        self.agent = started.agent
        self.description = started.description
        self.depths: dict[str, int] = {started.child_session_id: 0}
        """Each session shown here (the child's and its descendants') and how far it is indented."""
        self.calls: dict[str, int] = {}
        """Line of each tool call, by call id."""
        self.lines: list[Text] = []
        self.answer = ""
        self.state = "running in the background" if started.background else "running"
        self.count = 0
        """Tool calls made (all levels)."""
        self.body = Static("", markup=False)
        super().__init__(self.body, title=self._make_title(), collapsed=False)

    def _make_title(self) -> str:
        what = escape_controls(self.description or self.agent, keep_newlines=False)
        return f"↳ {escape_controls(self.agent, keep_newlines=False)}: {what} · {self.state} · {self.count} calls"

    def _redraw(self) -> None:
        text = Text()
        for n, line in enumerate(self.lines):
            if n:
                text.append("\n")
            text.append_text(line)
        if self.answer:
            if self.lines:
                text.append("\n")
            text.append(escape_controls(self.answer))
        self.body.update(text if text.plain else Text("(starting)", style="dim"))
        self.title = self._make_title()

    def nested(self, started: SubagentStarted) -> None:
        """A sub-agent of one shown here started: its calls are shown too, indented."""
        depth = self.depths.get(started.session_id, 0) + 1
        self.depths[started.child_session_id] = depth
        line = Text(
            "  " * depth + f"↳ {escape_controls(started.agent, keep_newlines=False)}: "
            f"{escape_controls(started.description, keep_newlines=False)}",
            style="bold",
        )
        self._append(line)

    def _append(self, line: Text) -> None:
        self.lines.append(line)
        if len(self.lines) > MAX_LINES:
            del self.lines[0]
            self.calls = {cid: n - 1 for cid, n in self.calls.items() if n > 0}
        self._redraw()

    def add(self, event: Event) -> None:
        """Show one event of the child (or of a descendant)."""
        depth = self.depths.get(event.session_id, 0)
        match event:
            case ToolCallEvent(call_id=cid, name=name, arguments=args):
                self.count += 1
                self.calls[cid] = len(self.lines)
                self._append(Text("  " * depth + f"● {name} {_summary(name, dict(args))}"))
            case ToolResult(call_id=cid, ok=ok) if cid in self.calls:
                n = self.calls.pop(cid)
                if 0 <= n < len(self.lines):
                    self.lines[n].append(" ✓" if ok else " ✗", style="green" if ok else "red")
                    self._redraw()
            case _:
                pass

    def finish(self, handoff: Handoff) -> None:
        """The child ended: its state and final answer."""
        self.state = "done" if handoff.completed else handoff.reason or "stopped"
        self.set_class(not handoff.completed, "-failed")
        self.answer = handoff.summary.strip() or (handoff.message or "")
        self._redraw()
