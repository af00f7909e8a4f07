"""The app's slash commands. Each runs as a worker of the app."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from monkey.events import Event
from monkey.slash_commands import COMMANDS

if TYPE_CHECKING:
    from monkey.ui.app import MonkeyApp

__all__ = ["run_command", "HELP"]

HELP = "\n".join(
    [f"{name:<13}{what}" for name, what in COMMANDS.items()]
    + ["", "@path sends a file with the message · !command runs a shell command yourself (checkpointed, "
           "and the model reads its output with your next message)",
       "Enter sends · Shift+Enter or Ctrl+J new line · Tab completes a command or @path · ↑/↓ history",
       "Esc or Ctrl-C cancels the turn · Ctrl-C twice or Ctrl-D on an empty box quits · Ctrl+E events",
       "Select text with the mouse (Shift+drag in some terminals) and press Ctrl-C to copy it · /copy copies the last answer"]
)
"""What ``/help`` shows."""


async def run_command(app: MonkeyApp, text: str) -> None:
    """Run one slash command typed in the app."""
    name, _, rest = text.strip().partition(" ")
    rest = rest.strip()
    show = app.transcript.add_notice
    agent = app.agent
    match name:
        case "/help":
            show(HELP)
        case "/exit" | "/quit":
            await app.action_quit()
        case "/events":
            app.show_events(not app.event_pane.has_class("-open"))
        case "/model" | "/backend":
            await _switch(app, name, rest)
        case "/clear":
            if app.working:
                show("a turn is running; cancel it first (Esc)", "warning")
                return
            agent.messages.clear()
            if app.session is not None:
                app.session.recorder.reconcile()
            app.transcript.clear()
            app.status.reset_totals()
            show("(new conversation)")
        case "/approvals":
            _approvals(app, rest)
        case "/undo":
            await _undo(app)
        case "/checkpoints":
            _checkpoints(app)
        case "/sessions" | "/resume":
            if rest and name == "/resume":
                _resume(app, rest)
            else:
                _pick(app)
        case "/compact":
            await _compact(app)
        case "/copy":
            _copy(app)
        case _:
            show(f"unknown command {name}; /help lists them", "warning")


def _copy(app: MonkeyApp) -> None:
    from monkey.slash_commands import copied_note, last_answer

    text = last_answer(app.agent.messages)
    if not text:
        app.transcript.add_notice("nothing to copy yet: there is no answer in this conversation", "warning")
        return
    app.copy_to_clipboard(text)
    app.transcript.add_notice(copied_note(text, "the last answer"))


async def _switch(app: MonkeyApp, name: str, rest: str) -> None:
    from monkey.agent.switch import switch_command

    result = await switch_command(app.agent, app.switcher, name, rest)
    if result.event is not None:
        await app.feed(result.event)
    app.transcript.add_notice("\n".join(result.lines), "info" if result.ok else "warning")


def _approvals(app: MonkeyApp, rest: str) -> None:
    policy = app.agent.policy
    grants = list(policy.grants.items())
    show = app.transcript.add_notice
    words = rest.split()
    if len(words) == 2 and words[0] == "revoke":
        if words[1].isdigit() and 0 < int(words[1]) <= len(grants):
            key, what = grants[int(words[1]) - 1]
            policy.revoke(key)
            show(f"revoked: {what}")
        else:
            show(f"no grant number {words[1]}; /approvals lists them", "warning")
        return
    if rest:
        show("usage: /approvals, or /approvals revoke N", "warning")
        return
    if not grants:
        show("no approvals granted in this session")
        return
    show("approvals granted in this session (/approvals revoke N drops one):\n"
         + "\n".join(f"  {i}. {what}" for i, (_, what) in enumerate(grants, 1)))


def _checkpoints_api(app: MonkeyApp, emit=None):  # type: ignore[no-untyped-def]
    from monkey.checkpoints.api import Checkpoints
    from monkey.config import monkey_home

    return Checkpoints(app.agent.workspace, home=monkey_home(), emit=emit)


async def _undo(app: MonkeyApp) -> None:
    from monkey.checkpoints.undo import UndoError

    if app.working:
        app.transcript.add_notice("a turn is running; cancel it first (Esc)", "warning")
        return
    made: list[Event] = []
    try:
        await asyncio.to_thread(
            lambda: _checkpoints_api(app, made.append).undo(steps=1, session_id=app.agent.session_id))
    except UndoError as exc:
        app.transcript.add_notice(str(exc), "warning")
        return
    except Exception as exc:  # noqa: BLE001 - a git or database failure is shown, not fatal
        app.transcript.add_notice(f"undo failed: {exc}", "error")
        return
    for event in made:
        await app.feed(event)


def _checkpoints(app: MonkeyApp) -> None:
    from monkey.ui.screens.timeline import TimelineScreen

    app.push_screen(TimelineScreen(_checkpoints_api(app), app.agent.session_id))


def _pick(app: MonkeyApp) -> None:
    from monkey.ui.screens.picker import SessionPickerScreen

    if app.session is None:
        app.transcript.add_notice("the session store is not open", "error")
        return

    def chosen(session_id: str | None) -> None:
        if session_id:
            _resume(app, session_id)

    app.push_screen(SessionPickerScreen(app.session.store, app.agent.workspace), chosen)


def _resume(app: MonkeyApp, session_id: str) -> None:
    if app.working:
        app.transcript.add_notice("a turn is running; cancel it first (Esc)", "warning")
        return
    if session_id == app.agent.session_id:
        app.transcript.add_notice("that is this session")
        return
    app.transcript.clear()
    app.open_session(session_id)


async def _compact(app: MonkeyApp) -> None:
    agent = app.agent
    if app.working:
        app.transcript.add_notice("a turn is running; cancel it first (Esc)", "warning")
        return
    if agent.context is None:
        app.transcript.add_notice("this agent has no context manager", "warning")
        return
    made: list[Event] = []
    result = await agent.context.compact(agent, made.append, trigger="manual")
    for event in made:
        await app.feed(event)
    if app.session is not None:
        app.session.recorder.reconcile()
    if result is None and not any(e.type == "error" for e in made):
        app.transcript.add_notice("nothing to compact yet")
