"""Real data for the screen tests: approval requests built by the real tools, checkpoints
made by the real agent loop, sessions recorded by real scripted runs; and a tiny app that
pushes one screen and keeps what it was dismissed with."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.app import App
from textual.screen import Screen
from textual.widget import Widget

from monkey.permissions.policy import ApprovalPolicy
from monkey.permissions.requests import ApprovalRequest, build_request
from monkey.agent.loop import Agent
from monkey.backends.scripted import Script, ScriptCall, ScriptedBackend, ScriptTurn
from monkey.checkpoints.api import Checkpoints
from monkey.checkpoints.guard import CheckpointGuard
from monkey.events import UndoApplied
from monkey.tools.base import ToolContext
from monkey.tools.registry import ToolRegistry
from tests.support.app import until

FIXED_TIME = "2026-11-21 12:00:00"
"""What every time on a screen reads in these tests."""

HIDDEN_SHELL_LINE = "echo hi\u202e; rm -rf x \x1b[2K\x1b[1Ahidden"
"""A shell line with a bidi override, shell syntax and ANSI escapes that erase a line."""


def fixed_time(ts: float) -> str:
    """The clock of the tests: every timestamp reads the same."""
    return FIXED_TIME


class ScreenApp(App[None]):
    """Pushes one screen on mount; keeps its result and the timeline's messages."""

    def __init__(self, screen: Screen[Any]) -> None:
        super().__init__()
        self.pushed = screen
        self.results: list[Any] = []
        self.undone: list[UndoApplied] = []

    def on_mount(self) -> None:
        self.push_screen(self.pushed, self.results.append)

    def on_timeline_screen_undone(self, message: Any) -> None:
        self.undone.append(message.event)


def shown_text(widget: Widget) -> str:
    """What a widget shows on the terminal, as plain text."""
    return "\n".join(strip.text for strip in widget.render_lines(widget.size.region))


def request_for(workspace: Path, tool: str, arguments: dict[str, Any], call_id: str = "c1") -> ApprovalRequest:
    """The request the loop would build: the real tool's preview, then ``build_request``."""
    real = ToolRegistry.default().get(tool)
    preview = real.preview(real.parse(arguments), ToolContext(workspace=workspace, call_id=call_id))
    return build_request(call_id, tool, arguments, preview, workspace)


def edit_request(workspace: Path) -> ApprovalRequest:
    """A ``file_edit`` of a small Python file, with its diff."""
    (workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n\n\nprint(add(1, 2))\n")
    return request_for(
        workspace,
        "file_edit",
        {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b  # [bold red]not markup[/]"},
    )


def shell_request(workspace: Path, command: str = HIDDEN_SHELL_LINE) -> ApprovalRequest:
    """A ``shell_execute`` call of ``command``."""
    return request_for(workspace, "shell_execute", {"command": command, "timeout": 30})


SESSION = "s-timeline-0001"


async def run_changes(workspace: Path, home: Path, calls: list[ScriptCall], *, session_id: str = SESSION) -> list:
    """Run one task of the real agent loop that makes ``calls``, with a checkpoint guard."""
    agent = Agent(
        backend=ScriptedBackend(Script(turns=[ScriptTurn(tool_calls=calls), ScriptTurn(text="done")])),
        workspace=workspace,
        policy=ApprovalPolicy(mode="auto"),
        session_id=session_id,
        checkpoints=CheckpointGuard(workspace, home=home),
    )
    return [event async for event in agent.run_task("change things")]


async def three_changes(workspace: Path, home: Path) -> Checkpoints:
    """Create ``notes.txt``, edit it, create ``src/app.py``: three checkpoints of one session."""
    await run_changes(
        workspace,
        home,
        [
            ScriptCall(id="c1", name="file_write", arguments={"path": "notes.txt", "content": "one\ntwo\nthree\n"}),
        ],
    )
    await run_changes(
        workspace,
        home,
        [
            ScriptCall(
                id="c2",
                name="file_edit",
                arguments={"path": "notes.txt", "old_string": "two", "new_string": "TWO [red]x[/red]"},
            ),
            ScriptCall(
                id="c3",
                name="file_write",
                arguments={"path": "src/app.py", "content": "import sys\n\nprint(sys.argv)\n"},
            ),
        ],
    )
    return Checkpoints(workspace, home=home)


SESSION_IDS = ["s-picker-0001", "s-picker-0002", "s-picker-0003"]
SESSION_PROMPTS = [
    "fix the failing test in calc.py",
    "explain [bold]it[/bold]\x1b]0;pwned\x07",
    "add a README section about undo",
]


async def record_sessions(workspace: Path) -> None:
    """Three one-turn sessions recorded in the store by the real CLI driver."""
    from tests.support.agent import drive, make_agent

    for sid, prompt in zip(SESSION_IDS, SESSION_PROMPTS, strict=True):
        agent = make_agent(workspace, [ScriptTurn(text=f"ok: {sid}")], session_id=sid)
        await drive(agent, prompt)


async def timeline_loaded(pilot: Any) -> None:
    """Wait until the timeline on top has read its checkpoints."""
    await until(pilot, lambda: getattr(pilot.app.screen, "loaded", False), "the timeline's checkpoints")

    def measured() -> bool:  # the table sizes its columns to the rows when it is next idle (late under load)
        columns = pilot.app.screen.query_one("#table").ordered_columns
        return bool(columns) and all(c.content_width > 0 for c in columns)

    await until(pilot, measured, "the timeline's columns sized to its rows")
    await pilot.pause()
