"""The ``--plain`` REPL's rendering of the slash commands (defined once in :mod:`monkey.session.commands`).

The REPL has no screens and no event pane, so every reply is printed: checkpoints and
sessions as numbered lists, a diff in colour, notes as lines, and ``/events`` prints one
line per event while turns run. Everything that comes from the model, a tool or the store
is escaped before it reaches the terminal.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from monkey.events import Event
from monkey.safe_text import escape_controls
from monkey.session.commands import COMMANDS

if TYPE_CHECKING:
    from monkey.agent.loop import Agent
    from monkey.session.switch import BackendSwitcher
    from monkey.checkpoints.api import CheckpointInfo
    from monkey.line.output import TextSink
    from monkey.session.replies import Reply
    from monkey.session.session import Session
    from monkey.store import SessionInfo

__all__ = ["HELP", "ReplState", "EventEcho", "SessionLost", "run_command", "tell"]

HELP = "\n".join(
    [
        "Type a task and press Enter.",
        *(f"  {name:<13}{what}" for name, what in COMMANDS.items()),
        "",
        "@path sends a file with the message · !command runs a shell command yourself (checkpointed, "
        "and the model reads its output with your next message)",
        "In the line REPL: /resume N or ID (from /sessions) · /checkpoints show N prints a diff",
        "/undo --force overrides a refusal · /events prints one line per event (there is no pane)",
        "Keys: Ctrl-C cancels the running turn · Ctrl-D on an empty line quits · ↑/↓ history",
    ]
)
"""What ``/help`` prints: the shared command list, then what differs in the line REPL."""

_DELTAS = frozenset({"text_delta", "thinking_delta", "tool_output"})
"""Streamed pieces the answer already shows; ``/events`` does not list them one by one."""


class SessionLost(Exception):
    """``/resume`` closed the session and could open none: the REPL cannot go on saving."""


def ansi(text: str, code: str) -> str:
    """``text`` in SGR colour ``code`` when stdout is a terminal."""
    return f"\x1b[{code}m{text}\x1b[0m" if sys.stdout.isatty() else text


def diff_colour(line: str) -> str:
    """One line of a unified diff, coloured on a terminal."""
    if line.startswith("+") and not line.startswith("+++"):
        return ansi(line, "32")
    if line.startswith("-") and not line.startswith("---"):
        return ansi(line, "31")
    if line.startswith("@@"):
        return ansi(line, "35")
    return line


def _say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _short(event: Event) -> str:
    fields = {k: getattr(event, k) for k in event.__struct_fields__ if k not in ("ts", "session_id", "type")}
    text = escape_controls(" ".join(f"{k}={v!r}" for k, v in fields.items()), keep_newlines=False)
    return text if len(text) <= 100 else text[:99] + "…"


class _Lines:
    """A text stream that knows whether the cursor is at the start of a line.

    An event line ends the line the answer was streaming on; the newline the text sink then
    writes to end that same line is dropped, so no blank line appears.
    """

    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self.at_line_start = True
        self.drop_newline = False

    def write(self, text: str) -> int:
        if not text:
            return 0
        if self.drop_newline and text == "\n":
            self.drop_newline = False
            return 1
        self.drop_newline = False
        self.out.write(text)
        self.at_line_start = text.endswith("\n")
        return len(text)

    def flush(self) -> None:
        self.out.flush()


class EventEcho:
    """The REPL's sink: the readable output, plus one line per event while ``/events`` is on."""

    def __init__(self, out: IO[str], make: Callable[[IO[str]], TextSink]) -> None:
        self.lines = _Lines(out)
        self.sink = make(self.lines)  # type: ignore[arg-type]
        self.show = False
        """Whether event lines are printed."""

    def __call__(self, event: Event) -> None:
        self.sink(event)
        if self.show and event.type not in _DELTAS:
            if not self.lines.at_line_start:
                self.lines.write("\n")
            self.lines.write(ansi(f"· {event.type} {_short(event)}".rstrip(), "2") + "\n")
            self.lines.drop_newline = True
            self.lines.flush()

    def close(self) -> None:
        """End the answer's line."""
        self.sink.close()


@dataclass
class ReplState:
    """The REPL's side of the conversation: the session it renders and the sink it renders with."""

    session: Session
    sink: EventEcho
    turn: Callable[[str, str], Awaitable[None]] | None = None
    """Runs a turn as a typed message does (Ctrl-C cancelling it), or a workflow on it; set by the REPL."""
    long_turn: float = 10.0
    """Seconds: a turn at least this long notifies when it ends (``[ui] long_turn``)."""
    move_to: Path | None = None
    """``/worktree``: the worktree to go on in, in a new session, once this one has ended."""

    async def run_turn(self, text: str, workflow: str = "") -> None:
        """Run ``text`` as a turn (or ``workflow`` on it), the way the REPL runs what the person types."""
        if self.turn is not None:
            await self.turn(text, workflow)
        else:
            await (self.session.run_workflow(workflow, text) if workflow else self.session.send(text))

    @property
    def agent(self) -> Agent:
        return self.session.agent

    @classmethod
    def make(cls, agent: Agent, switcher: BackendSwitcher, sink: EventEcho) -> ReplState:
        """A REPL state whose session shows events with ``sink`` and tells lines on the terminal."""
        from monkey.session.session import Session

        return cls(Session(agent, switcher, show=sink, tell=tell), sink)


def tell(text: str, level: str = "info") -> None:
    """A line for the person: on stdout, an error on stderr."""
    if level == "error":
        sys.stderr.write(f"\nmonkey: {escape_controls(text)}\n")
        sys.stderr.flush()
    else:
        _say(escape_controls(text))


async def run_command(state: ReplState, text: str) -> bool:
    """Run one slash command (defined in :mod:`monkey.session.commands`) and print its replies; False to quit."""
    from monkey.store import StoreError

    try:
        for reply in await state.session.command(text):
            if not await _render(state, reply):
                return False
    except StoreError as exc:
        recorder = state.session.recorder
        if recorder is None or exc is not recorder.failed:  # a failed write was told; the REPL goes on unsaved
            _say(escape_controls(f"monkey: {exc}"))
    return True


async def _render(state: ReplState, reply: Reply) -> bool:  # noqa: C901 - one case per reply type
    """Print one reply; False when it says to quit."""
    from monkey.session import replies as r

    match reply:
        case r.Note(text=text):
            _say(escape_controls(text))
        case r.Help():
            _say(HELP)
        case r.Quit():
            return False
        case r.Cleared() | r.InstructionsChanged():
            pass  # the REPL keeps no view of the conversation or of the instruction files; the note says it
        case r.ModeChanged(text=text):
            _say(escape_controls(text))
        case r.ToggleEvents():
            state.sink.show = not state.sink.show
            _say(
                "(event lines on: one per event, streamed text not repeated)"
                if state.sink.show
                else "(event lines off)"
            )
        case r.CheckpointList(checkpoints=infos):
            _checkpoint_lines(infos)
        case r.CheckpointDiff(text=text):
            for line in escape_controls(text).rstrip("\n").splitlines():
                _say(diff_colour(line))
        case r.SessionList(sessions=sessions, current=current):
            _session_lines(sessions, current)
        case r.ResumeSession(session_id=session_id):
            await _resume(state, session_id)
        case r.SendPrompt(prompt=prompt, shown=shown):
            _say(escape_controls(shown))
            await state.run_turn(prompt)
        case r.StartWorkflow(name=name, task=task, shown=shown):
            _say(escape_controls(shown))
            await state.run_turn(task, workflow=name)
        case r.CopyText(text=text, what=what):
            _copy(text, what)
        case r.ProcessView(text=text):
            _say(escape_controls(text))
        case r.MoveToWorktree(path=path):
            state.move_to = Path(path)
            return False  # this session ends; the REPL starts the next one there
    return True


def _checkpoint_lines(infos: list[CheckpointInfo]) -> None:
    from monkey.session.stored import format_when

    if not infos:
        _say("no checkpoints in this session yet (monkey takes one before every change it makes)")
        return
    _say("checkpoints of this session, oldest first (/checkpoints show N prints one's diff):")
    for n, info in enumerate(infos, 1):
        stats = "binary" if info.binary and not (info.added or info.removed) else f"+{info.added} -{info.removed}"
        paths = ", ".join(escape_controls(p, keep_newlines=False) for p in info.paths) or "(unknown)"
        _say(
            f"  {n:>2}. {format_when(info.created_at)}  {escape_controls(info.tool, keep_newlines=False)}  "
            f"{info.state}  {stats}  {paths}"
        )


def _session_lines(sessions: list[SessionInfo], current: str) -> None:
    from monkey.session.stored import format_when

    if not sessions:
        _say("no stored sessions in this workspace yet")
        return
    _say("sessions of this workspace, most recent first (/resume N or ID switches; * is this one):")
    for n, s in enumerate(sessions, 1):
        mark = "*" if s.id == current else " "
        title = escape_controls(" ".join(s.title.split())[:60], keep_newlines=False) or "(untitled)"
        _say(
            f"{mark}{n:>3}. {s.id}  {format_when(s.updated)}  {s.turns:>3} {'turn ' if s.turns == 1 else 'turns'}"
            f"  ${s.cost_usd:.4f}  "
            f"{s.state:<11} {title}"
        )


async def _resume(state: ReplState, session_id: str) -> None:
    """End this session and go on with stored session ``session_id`` (checked by the command), in this process."""
    from monkey.ids import new_id
    from monkey.store import StoreError

    session, agent = state.session, state.agent
    try:
        handle = await session.open(resume=session_id)
    except StoreError as exc:  # it went away or broke between the check and now: go on in a new session
        _say(escape_controls(f"cannot resume {session_id}: {exc}; this is a new session"))
        agent.session_id, agent.resumed = new_id("s"), False
        try:
            await session.open()
        except StoreError as again:
            raise SessionLost(str(again)) from again
        return
    for line in handle.notices:  # describe_restored(): what came back, and any damage
        _say(escape_controls(line))
    last = next((m.content for m in reversed(agent.messages) if m.role == "user" and m.content), "")
    if last:
        _say("  last message: " + escape_controls(" ".join(last.split())[:100], keep_newlines=False))


def _copy(text: str, what: str) -> None:
    """Put ``text`` on the clipboard through the terminal (OSC 52)."""
    from monkey.session.commands import copied_note
    from monkey.line.terminal import Terminal, clipboard_sequence

    terminal = Terminal.open()
    if terminal is None:
        _say("no terminal to copy through (OSC 52 needs one)")
        return
    try:
        terminal.write(clipboard_sequence(text))
    finally:
        terminal.close()
    _say(copied_note(text, what))
