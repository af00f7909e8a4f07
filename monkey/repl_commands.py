"""The ``--plain`` REPL's slash commands, the same ones the app has (see :mod:`monkey.slash_commands`).

The REPL has no screens and no event pane, so every command prints text: ``/checkpoints``
and ``/sessions`` list, ``/undo``, ``/resume``, ``/model`` and ``/backend`` say what they
did, and ``/events`` prints one line per event while turns run. Everything that comes from
the model, a tool or the store is escaped before it reaches the terminal.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING

from monkey.events import Event
from monkey.safe_text import escape_controls
from monkey.slash_commands import COMMANDS

if TYPE_CHECKING:
    from monkey.agent.loop import Agent
    from monkey.agent.switch import BackendSwitcher
    from monkey.commands.resume import SessionHandle
    from monkey.output import TextSink
    from monkey.store import Recorder, SessionInfo

__all__ = ["HELP", "ReplState", "EventEcho", "SessionLost", "run_command", "record", "compact_command"]

HELP = "\n".join(
    ["Type a task and press Enter.", *(f"  {name:<13}{what}" for name, what in COMMANDS.items()), "",
     "@path sends a file with the message · !command runs a shell command yourself (checkpointed, "
     "and the model reads its output with your next message)",
     "In the line REPL: /resume N or ID (from /sessions) · /checkpoints show N prints a diff",
     "/undo --force overrides a refusal · /events prints one line per event (there is no pane)",
     "Keys: Ctrl-C cancels the running turn · Ctrl-D on an empty line quits · ↑/↓ history"]
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
    """What the commands work on; ``handle`` changes when ``/resume`` switches sessions."""

    agent: Agent
    handle: SessionHandle
    sink: EventEcho
    switcher: BackendSwitcher
    closed: bool = False
    """Whether ``handle`` was closed (and no other opened yet)."""

    @property
    def recorder(self) -> Recorder:
        """The open session's recorder."""
        return self.handle.recorder

    async def emit(self, event: Event) -> None:
        """Show and record an event made outside a turn (the session is started first)."""
        await start_session(self.agent, self.sink, self.recorder)
        self.sink(event)
        await record(self.recorder, event)

    async def end_session(self) -> None:
        """End the open session (``session_ended`` if it started) and close the store."""
        if self.closed:
            return
        self.closed = True
        if self.agent.started:
            ended = self.agent.session_ended("completed")
            self.sink(ended)
            self.recorder.add(ended)
            self.agent.started = False
        try:
            await self.handle.close()
        except Exception as exc:  # noqa: BLE001 - shown; the REPL goes on
            sys.stderr.write(f"monkey: closing the session failed: {exc}\n")


async def start_session(agent: Agent, sink: Callable[[Event], None], recorder: Recorder | None) -> None:
    """Show and record ``session_started`` unless this session has started already."""
    if not agent.started:
        started = agent.session_started()
        sink(started)
        await record(recorder, started)


async def record(recorder: Recorder | None, event: Event) -> None:
    """Hand one event to the session store; a write error is shown and raised."""
    from monkey.store import StoreError

    if recorder is None or recorder.failed is not None:
        return
    recorder.add(event)
    if recorder.should_flush(event):
        try:
            await recorder.flush(wait=recorder.durable(event))
        except StoreError as exc:
            sys.stderr.write(f"\nmonkey: {exc}; this session is no longer saved\n")
            raise


async def run_command(state: ReplState, text: str) -> bool:
    """Run one slash command; False when the REPL should quit."""
    from monkey.store import StoreError

    name, _, rest = text.strip().partition(" ")
    rest = rest.strip()
    agent = state.agent
    try:
        match name:
            case "/exit" | "/quit":
                return False
            case "/help":
                _say(HELP)
            case "/clear":
                agent.messages.clear()
                state.recorder.reconcile()
                _say("(new conversation)")
            case "/compact":
                await compact_command(agent, state.sink, state.recorder)
            case "/approvals":
                _approvals(agent, rest)
            case "/undo":
                await _undo(state, rest)
            case "/checkpoints":
                await _checkpoints(state, rest)
            case "/sessions":
                await _sessions(state)
            case "/resume":
                await _resume(state, rest)
            case "/model" | "/backend":
                from monkey.agent.switch import switch_command

                result = await switch_command(agent, state.switcher, name, rest)
                if result.event is not None:
                    await state.emit(result.event)
                for line in result.lines:
                    _say(escape_controls(line))
            case "/copy":
                _copy(agent)
            case "/events":
                state.sink.show = not state.sink.show
                _say("(event lines on: one per event, streamed text not repeated)" if state.sink.show
                     else "(event lines off)")
            case _:
                _say(f"unknown command {escape_controls(name, keep_newlines=False)}; /help lists them")
    except StoreError as exc:
        if exc is not state.recorder.failed:  # a failed write was shown by record(); the REPL goes on unsaved
            _say(escape_controls(f"monkey: {exc}"))
    return True


async def compact_command(agent: Agent, sink: Callable[[Event], None], recorder: Recorder) -> None:
    """``/compact``: summarise the older messages now."""
    from monkey.store import StoreError

    if agent.context is None:
        print("(this agent has no context manager)")
        return
    made: list[Event] = []
    result = await agent.context.compact(agent, made.append, trigger="manual")
    if made and not agent.started:  # nothing happened: no session is stored for it
        made.insert(0, agent.session_started())
    for event in made:
        sink(event)
        recorder.add(event)
    recorder.reconcile()
    try:
        await recorder.flush()
    except StoreError as exc:
        sys.stderr.write(f"monkey: {exc}; this session is no longer saved\n")
    if result is None:
        if not any(e.type == "error" for e in made):
            print("(nothing to compact yet)")
    else:
        print(f"(compacted {result.messages_compacted} messages: {result.tokens_before} → {result.tokens_after} tokens)")


def _approvals(agent: Agent, rest: str) -> None:
    grants = list(agent.policy.grants.items())
    words = rest.split()
    if len(words) == 2 and words[0] == "revoke":
        if words[1].isdigit() and 0 < int(words[1]) <= len(grants):
            key, what = grants[int(words[1]) - 1]
            agent.policy.revoke(key)
            _say(f"revoked: {escape_controls(what)}")
        else:
            _say(f"no grant number {escape_controls(words[1])}; /approvals lists them")
        return
    if rest:
        _say("usage: /approvals, or /approvals revoke N")
        return
    if not grants:
        _say("no approvals granted in this session")
    for i, (_, what) in enumerate(grants, 1):
        _say(f"  {i}. {escape_controls(what)}")


# -- checkpoints ------------------------------------------------------------------------


def _checkpoints_api(agent: Agent, emit: Callable[[Event], None] | None = None):  # type: ignore[no-untyped-def]
    from monkey.checkpoints.api import Checkpoints
    from monkey.config import monkey_home

    return Checkpoints(agent.workspace, home=monkey_home(), emit=emit)


async def _undo(state: ReplState, rest: str) -> None:
    """``/undo [--force]``: undo the latest change of this session."""
    from monkey.checkpoints.undo import UndoError

    if rest not in ("", "--force", "-f"):
        _say("usage: /undo, or /undo --force to overwrite what changed since")
        return
    agent = state.agent
    made: list[Event] = []
    try:
        outcome = await asyncio.to_thread(lambda: _checkpoints_api(agent, made.append).undo(
            steps=1, session_id=agent.session_id, force=bool(rest)))
    except UndoError as exc:
        _say(escape_controls(str(exc)))
        return
    except Exception as exc:  # noqa: BLE001 - a git or database failure is shown, not fatal
        _say(f"undo failed: {escape_controls(str(exc))}")
        return
    for event in made:
        await state.emit(event)
    what = [*(f"removed {p}" for p in outcome.removed), *(f"restored {p}" for p in outcome.restored)]
    what += [f"reverted {p}" for p in outcome.paths if p not in outcome.removed and p not in outcome.restored]
    _say(escape_controls(f"undone: {', '.join(what) or 'nothing to change'}"
                         + (f" (overwrote {', '.join(outcome.overwritten)})" if outcome.overwritten else "")))


async def _checkpoints(state: ReplState, rest: str) -> None:
    """``/checkpoints``: this session's changes, oldest first; ``/checkpoints show N``: one's diff."""
    from monkey.commands.resume import format_when

    agent, words = state.agent, rest.split()
    api = _checkpoints_api(agent)
    try:
        infos = await asyncio.to_thread(api.list, agent.session_id)
    except Exception as exc:  # noqa: BLE001 - a damaged journal or shadow repository
        _say(f"cannot list the checkpoints: {escape_controls(str(exc))}")
        return
    if words[:1] == ["show"] and len(words) == 2:
        ident = words[1]
        if ident.isdigit() and 0 < int(ident) <= len(infos):
            ident = infos[int(ident) - 1].id
        try:
            text = await asyncio.to_thread(api.show, ident)
        except Exception as exc:  # noqa: BLE001 - UndoError (no such checkpoint) or a git failure
            _say(escape_controls(str(exc)))
            return
        for line in escape_controls(text).rstrip("\n").splitlines():
            _say(diff_colour(line))
        return
    if words:
        _say("usage: /checkpoints, or /checkpoints show N")
        return
    if not infos:
        _say("no checkpoints in this session yet (monkey takes one before every change it makes)")
        return
    _say("checkpoints of this session, oldest first (/checkpoints show N prints one's diff):")
    for n, info in enumerate(infos, 1):
        stats = "binary" if info.binary and not (info.added or info.removed) else f"+{info.added} -{info.removed}"
        paths = ", ".join(escape_controls(p, keep_newlines=False) for p in info.paths) or "(unknown)"
        _say(f"  {n:>2}. {format_when(info.created_at)}  {escape_controls(info.tool, keep_newlines=False)}  "
             f"{info.state}  {stats}  {paths}")


# -- sessions ---------------------------------------------------------------------------


async def _recent(state: ReplState) -> list[SessionInfo]:
    return await state.handle.store.list_sessions(str(state.agent.workspace), limit=20)


async def _sessions(state: ReplState) -> None:
    """``/sessions``: this workspace's recent sessions, most recent first."""
    from monkey.commands.resume import format_when

    sessions = await _recent(state)
    if not sessions:
        _say("no stored sessions in this workspace yet")
        return
    _say("sessions of this workspace, most recent first (/resume N or ID switches; * is this one):")
    for n, s in enumerate(sessions, 1):
        mark = "*" if s.id == state.agent.session_id else " "
        title = escape_controls(" ".join(s.title.split())[:60], keep_newlines=False) or "(untitled)"
        _say(f"{mark}{n:>3}. {s.id}  {format_when(s.updated)}  {s.turns:>3} turns  ${s.cost_usd:.4f}  "
             f"{s.state:<11} {title}")


async def _resume(state: ReplState, ref: str) -> None:
    """``/resume N|ID``: end this session and go on with a stored one, in this process."""
    from monkey.commands.resume import open_session
    from monkey.ids import new_id
    from monkey.store import StoreError

    agent = state.agent
    if not ref or len(ref.split()) > 1:
        _say("usage: /resume N or /resume ID (an id prefix will do); /sessions lists them")
        return
    try:
        if ref.isdigit():
            recent = await _recent(state)
            if not 0 < int(ref) <= len(recent):
                _say(f"no session number {ref}; /sessions lists them")
                return
            target = recent[int(ref) - 1]
        else:
            target = await state.handle.store.find(ref)
    except StoreError as exc:
        _say(escape_controls(str(exc)))
        return
    if target.id == agent.session_id:
        _say("that is this session")
        return
    if target.workspace != str(agent.workspace):
        _say(escape_controls(f"session {target.id} belongs to {target.workspace}; run monkey there to resume it"))
        return
    if target.state == "active" and target.pid and target.pid != os.getpid():
        _say(f"session {target.id} is open in another monkey process (pid {target.pid})")
        return
    await state.end_session()
    agent.messages.clear()
    agent.started = False
    agent.turns = 0
    try:
        state.handle, state.closed = await open_session(agent, resume=target.id), False
    except StoreError as exc:  # it went away or broke between the check and now: go on in a new session
        _say(escape_controls(f"cannot resume {target.id}: {exc}; this is a new session"))
        agent.session_id, agent.resumed = new_id("s"), False
        try:
            state.handle, state.closed = await open_session(agent), False
        except StoreError as again:
            raise SessionLost(str(again)) from again
        return
    for line in state.handle.notices:  # describe_restored(): what came back, and any damage
        _say(escape_controls(line))
    last = next((m.content for m in reversed(agent.messages) if m.role == "user" and m.content), "")
    if last:
        _say("  last message: " + escape_controls(" ".join(last.split())[:100], keep_newlines=False))


def _copy(agent: Agent) -> None:
    """``/copy``: the last answer to the clipboard, through the terminal (OSC 52)."""
    from monkey.slash_commands import copied_note, last_answer
    from monkey.terminal import Terminal, clipboard_sequence

    text = last_answer(agent.messages)
    if not text:
        _say("nothing to copy yet: there is no answer in this conversation")
        return
    terminal = Terminal.open()
    if terminal is None:
        _say("no terminal to copy through (OSC 52 needs one)")
        return
    try:
        terminal.write(clipboard_sequence(text))
    finally:
        terminal.close()
    _say(copied_note(text, "the last answer"))
