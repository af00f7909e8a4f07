"""The app's rendering of the slash commands (defined once in :mod:`monkey.session.commands`).

The app parses nothing and decides nothing here: it hands the typed line to the session
layer and shows each reply its own way (a list of checkpoints as the timeline screen, the
stored sessions as the picker, notes in the transcript).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from monkey.session.commands import COMMANDS

if TYPE_CHECKING:
    from monkey.agent.loop import Agent
    from monkey.session.stored import SessionHandle
    from monkey.events import Event
    from monkey.session.replies import Reply
    from monkey.session.session import Session


class MonkeyApp(Protocol):
    """What the commands use of :class:`monkey.ui.app.MonkeyApp` (named here, so this module does not
    import the app that imports it)."""

    @property
    def agent(self) -> Agent: ...
    @property
    def live(self) -> Session: ...
    @property
    def session(self) -> SessionHandle | None: ...
    @property
    def transcript(self) -> Any: ...
    @property
    def status(self) -> Any: ...
    @property
    def event_pane(self) -> Any: ...
    @property
    def working(self) -> bool: ...
    @property
    def run_worker(self) -> Callable[..., Any]: ...
    def show_mode(self, mode: str) -> None: ...
    def submit(self, text: str) -> None: ...
    def run_turn(self, prompt: str, workflow: str = "") -> Any: ...
    async def feed(self, event: Event) -> None: ...
    async def action_quit(self) -> None: ...
    def show_events(self, show: bool) -> None: ...
    def show_spent(self) -> None: ...
    def show_instructions(self, files: list[str]) -> None: ...
    def open_session(self, resume: str | None = None) -> Any: ...
    def copy_to_clipboard(self, text: str) -> None: ...
    def push_screen(self, screen: Any, callback: Any = None) -> Any: ...
    @property
    def session_request(self) -> Any: ...
    async def start_over(self, setup: Any) -> None: ...


__all__ = ["run_command", "HELP"]

KEYS = [
    "@path sends a file with the message · !command runs a shell command yourself (checkpointed, "
    "and the model reads its output with your next message)",
    "Enter sends · Shift+Enter or Ctrl+J new line · Tab completes a command or @path · ↑/↓ history",
    "Esc or Ctrl-C cancels the turn (queued messages wait: Enter on an empty box sends them, Esc clears them)",
    "Ctrl-C twice or Ctrl-D on an empty box quits · Ctrl+E events",
    "Shift+Tab cycles the permission mode (default, accept edits, plan) · Tab moves to the transcript to scroll it",
    "Select text with the mouse (Shift+drag in some terminals) and press Ctrl-C to copy it · /copy copies the last answer",
]
"""What ``/help`` adds about the app's own keys."""

HELP = "\n".join([f"{name:<13}{what}" for name, what in COMMANDS.items()] + ["", *KEYS])
"""What ``/help`` shows."""


async def run_command(app: MonkeyApp, text: str) -> None:
    """Run one slash command typed in the app and show what it answers."""
    for reply in await app.live.command(text):
        await _render(app, reply)


async def _render(app: MonkeyApp, reply: Reply) -> None:  # noqa: C901 - one case per reply type
    from monkey.session import replies as r

    show = app.transcript.add_notice
    match reply:
        case r.Note(text=text, level=level):
            show(text, level)
        case r.Help():
            show(HELP)
        case r.Quit():
            await app.action_quit()
        case r.ModeChanged(mode=mode, text=text):
            app.show_mode(mode)
            show(text)
        case r.InstructionsChanged(files=files):
            app.show_instructions(files)
        case r.ToggleEvents():
            app.show_events(not app.event_pane.has_class("-open"))
        case r.Cleared():
            app.transcript.clear()
            app.status.reset_totals()
            if app.status.max_budget_usd or app.status.max_tokens:  # shown against a budget, which goes on counting
                app.show_spent()
        case r.CheckpointList(api=api):
            from monkey.ui.screens.timeline import TimelineScreen

            assert api is not None, "/checkpoints lists through the session's checkpoints"
            app.push_screen(TimelineScreen(api, app.agent.session_id))
        case r.CheckpointDiff(text=text):
            show(text)
        case r.SessionList():
            _pick(app)
        case r.ResumeSession(session_id=session_id):
            app.transcript.clear()
            app.open_session(session_id)
        case r.SendPrompt(prompt=prompt, shown=shown):
            show(shown)  # says what runs; the prompt itself is monkey's, not something the person typed
            if app.working:
                app.submit(prompt)
            else:
                app.status.set_working(True)
                app.run_turn(prompt)
        case r.StartWorkflow(name=name, task=task, shown=shown):
            show(shown)
            app.transcript.add_user(task)
            app.status.set_working(True)
            app.run_turn(task, workflow=name)
        case r.ProcessView(table=table):
            from monkey.ui.screens.processes import ProcessesScreen

            app.push_screen(ProcessesScreen(table))
        case r.CopyText(text=text, what=what):
            from monkey.session.commands import copied_note

            app.copy_to_clipboard(text)
            show(copied_note(text, what))
        case r.MoveToWorktree(path=path, name=name):
            await _move(app, Path(path), name)


async def _move(app: MonkeyApp, path: Path, name: str) -> None:
    """``/worktree``: this session ends (stored) and a new one, set up as this one was, opens in the worktree."""
    from monkey.backends.base import BackendError
    from monkey.session.setup import SetupError, resolve_setup

    request = app.session_request
    if request is None:
        app.transcript.add_notice(f"start a session there yourself: monkey agent --cwd {path}", "warning")
        return
    try:
        setup = resolve_setup(request.but(workspace=path, continue_=False, resume=None), app.agent.approver)
    except (SetupError, BackendError) as exc:
        app.transcript.add_notice(f"no session can start in {path}: {exc}", "error")
        return
    app.transcript.clear()
    app.transcript.add_notice(f"a new session in worktree {name}: {path} (branch monkey/{name})")
    await app.start_over(setup)


def _pick(app: MonkeyApp) -> None:
    from monkey.ui.screens.picker import SessionPickerScreen

    assert app.session is not None  # the command said so otherwise

    async def chosen(session_id: str | None) -> None:
        if session_id:
            await run_command(app, f"/resume {session_id}")

    app.push_screen(
        SessionPickerScreen(app.session.store, app.agent.workspace),
        lambda chosen_id: app.run_worker(chosen(chosen_id), group="command"),
    )
