"""``MonkeyApp``: the Textual front end of one agent session.

The agent runs in a ``@work`` worker; each event goes to the session recorder and through
:func:`monkey.ui.bridge.translate`, whose messages the handlers here hand down to widgets.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical

from monkey.config import UIConfig
from monkey import gitinfo
from monkey.events import Event
from monkey.line.stop_signals import StopSignals
from monkey.ui import memory
from monkey.ui.agent_setup import AgentSetup
from monkey.ui.approver import GUARD_SECONDS, ApprovalNeeded, TuiApprover
from monkey.ui.bridge_handlers import BridgeHandlers
from monkey.ui.stopping import Stopping
from monkey.ui.subagents import SubagentBlocks
from monkey.ui.widgets.app_header import AppHeader
from monkey.ui.widgets.command_hints import CommandHints
from monkey.ui.widgets.event_pane import EventPane
from monkey.ui.widgets.more_below import MoreBelow
from monkey.ui.widgets.prompt_input import PromptInput
from monkey.ui.widgets.status_bar import StatusBar
from monkey.ui.widgets.transcript import Transcript

if TYPE_CHECKING:
    from monkey.session.stored import SessionHandle
    from monkey.session.session import Session
    from monkey.agent.loop import Agent
    from monkey.session.switch import BackendSwitcher
    from monkey.backends.base import Backend

__all__ = ["MonkeyApp", "AgentSetup"]

QUIT_WINDOW = 2.0
"""Seconds within which a second Ctrl-C quits."""


def history_path(workspace: Path) -> Path:
    """The per-workspace input history of the app (its own file: the format differs from the REPL's)."""
    from monkey.config import history_path as workspace_history

    return workspace_history(workspace, "tui-")


class MonkeyApp(Stopping, BridgeHandlers, App[int]):
    """The interactive app. ``run()`` returns the exit status."""

    CSS_PATH = "app.tcss"
    TITLE = "monkey"
    BINDINGS = [
        Binding("ctrl+c", "interrupt", "Cancel / quit", priority=True, show=False),
        Binding("escape", "cancel_turn", "Cancel turn", show=False),
        Binding("ctrl+e", "toggle_events", "Events", priority=True, show=False),
        Binding("ctrl+end", "jump_down", "Jump to the end", priority=True, show=False),
        Binding("shift+tab", "cycle_mode", "Permission mode", priority=True, show=False),
    ]

    def __init__(
        self,
        agent: Agent | AgentSetup,
        *,
        task: str | None = None,
        continue_: bool = False,
        resume: str | None = None,
        notices: list[str] | None = None,
        clock: Callable[[], float] = time.monotonic,
        store_path: Path | None = None,
        exit_when_done: bool = False,
        approval_guard: float | None = None,
        approval_clock: Callable[[], float] = time.monotonic,
        inline: bool = False,
        ui: UIConfig | None = None,
        terminal_write: Callable[[str], None] | None = None,
    ) -> None:
        """``agent`` is the agent to drive, or an :class:`AgentSetup` to build it from after the first frame."""
        super().__init__()
        pending = agent if isinstance(agent, AgentSetup) else None
        self._agent: Agent | None = None if pending is not None else agent  # type: ignore[assignment]
        self._setup: AgentSetup | None = pending
        self.session_request = getattr(pending, "request", None)  # /worktree starts over from it
        self.workspace: Path = agent.workspace
        self._mode: str = pending.mode if pending is not None else agent.policy.mode  # type: ignore[union-attr]
        """The permission mode the session starts in (the status bar shows it)."""
        self._backend: Backend = agent.backend
        """The backend shown and closed until the agent exists (then the agent's own)."""
        self._switcher: BackendSwitcher | None = pending.switcher if pending is not None else None
        self.first_task = task
        """A first message to send as soon as the session is open."""
        self.continue_ = continue_
        self.resume = resume
        self.notices = list(notices or [])
        """Lines to show at start (config warnings, repairs)."""
        self.clock = clock
        """Elapsed-time source for the status bar (frozen in snapshot tests)."""
        self.approval_guard = GUARD_SECONDS if approval_guard is None else approval_guard
        """Seconds a new approval dialog ignores its answer keys (keys typed ahead are not answers)."""
        self.approval_clock = approval_clock
        """The clock of that guard."""
        self.store_path = store_path
        self.exit_when_done = exit_when_done
        """Quit after the first task's turn (``--task --tui`` scripts)."""
        from monkey.ui.attention import Attention

        config = getattr(pending, "config", None)
        if ui is None:
            ui = config.ui if config is not None else UIConfig()
        self._terminal_write = terminal_write
        notify = getattr(config, "notify", None)
        notifier = None
        if notify is not None:
            from monkey.notify import Notifier

            notifier = Notifier(notify, write=self.write_to_terminal, monitor=getattr(pending, "monitor", ""))
        self.attention = Attention(
            self.write_to_terminal,
            place=self.workspace.name,
            bell=ui.bell,
            title=ui.title,
            long_turn=ui.long_turn,
            notifier=notifier,
            session=lambda: str(getattr(self.agent, "session_id", "") or ""),
        )
        """Bell and terminal title when an approval waits or a long turn ends (``[ui]``)."""
        self.scrollback: list[Event] | None = [] if inline else None
        """``--inline``: this run's events, printed into the terminal's scrollback when the app closes."""
        self.prepare_notices: list[str] = []
        """What building the agent reported (the CLI repeats it on stderr after the app exits)."""
        self.stop_signals = StopSignals(self._stop_for_signal)
        """SIGTERM, SIGHUP, SIGQUIT and SIGINT, handled while the app runs on a terminal."""
        self.stop_signals.save_terminal()  # before the app makes the tty raw
        self.stop_signals.last_words = self._title_back
        self._live: Session | None = None
        self.queue: deque[str] = deque()
        self.queue_held = False
        """Whether the queue waits for the person: the turn was cancelled (Enter on an empty box sends
        the next message, Esc clears them)."""
        """Messages typed while the agent works, sent in order when the turn ends."""
        self.last_reason = ""
        self._subagents = SubagentBlocks()
        """Where each sub-agent's events are shown."""
        """How the last turn ended."""
        self.last_result = ""
        """The final answer of the last turn (``--tui --task`` prints it after the app closes)."""
        self.last_message = ""
        """Why the last turn ended, when it did not simply complete."""
        self._ctrl_c_at = -1e9
        self._session_closed = False
        """Whether the session was ended and what it runs closed (``_closed`` is Textual's own)."""
        from monkey.ui.approvals import ApprovalQueue

        self._approvals = ApprovalQueue(self)
        """The approval requests waiting for the person, one dialog at a time."""
        self._session_opened = asyncio.Event()
        """Set once the first session-opening attempt has ended; turns wait for it."""
        if isinstance(agent.approver, TuiApprover):
            agent.approver.app = self

    @property
    def live(self) -> Session:
        """The running conversation (:mod:`monkey.session`): turns, commands, the stored session."""
        if self._live is None:
            from monkey.session.session import Session

            self._live = Session(
                self.agent,
                self.switcher,
                show=self._show_event,
                tell=lambda text, level: self.transcript.add_notice(text, level),
                store_path=self.store_path,
                working=lambda: self.working,
            )
            self._live.interrupted = self._stopping
        return self._live

    @property
    def session(self) -> SessionHandle | None:
        """The open stored session (None until mounted, or when sessions are not saved)."""
        return self._live.handle if self._live is not None else None

    @property
    def agent(self) -> Agent:
        """The agent this app drives (with a setup, built just after the first frame)."""
        if self._agent is None:
            raise RuntimeError("the agent is built after the first frame; wait for the session to open")
        return self._agent

    # -- layout ----------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield AppHeader(self.workspace, self._backend.name, self._backend.model, id="header")
        with Horizontal(id="main"):
            with Vertical(id="chat"):
                yield Transcript(id="transcript")
                yield MoreBelow(id="more-below")
                yield CommandHints(id="hints")
                yield PromptInput(history_path(self.workspace), self.workspace, id="prompt")
            yield EventPane(id="events")
        yield StatusBar(self.clock, id="status")

    @property
    def switcher(self) -> BackendSwitcher:
        """Builds backends for ``/model`` and ``/backend`` (from the workspace's config if not given)."""
        if self._switcher is None:
            from monkey.session.switch import BackendSwitcher

            self._switcher = BackendSwitcher.for_workspace(self.workspace)
        return self._switcher

    @property
    def more_below(self) -> MoreBelow:
        """The line that says the conversation goes on below the view."""
        return self.query_one(MoreBelow)

    def on_transcript_more_below(self, message: Transcript.MoreBelow) -> None:
        self.query(MoreBelow).set_class(message.below, "-shown")  # none while the screen is taken down

    def on_more_below_jump_down(self, _: MoreBelow.JumpDown) -> None:
        self.action_jump_down()

    def action_jump_down(self) -> None:
        """Ctrl+End: show the end of the conversation and follow it again."""
        self.transcript.jump_to_end()

    @property
    def transcript(self) -> Transcript:
        """The conversation widget."""
        return self._transcript

    @property
    def status(self) -> StatusBar:
        """The status bar."""
        return self._status

    @property
    def event_pane(self) -> EventPane:
        """The live event pane."""
        return self._events

    @property
    def working(self) -> bool:
        """Whether a turn is running."""
        return (self._agent is not None and self._agent.running) or self.status.started is not None

    async def on_mount(self) -> None:
        self._transcript = self.query_one(Transcript)
        self._status = self.query_one(StatusBar)
        self._events = self.query_one(EventPane)
        self._prompt = self.query_one(PromptInput)
        self._hints = self.query_one(CommandHints)
        status = self.status
        status.backend, status.model = self._backend.name, self._backend.model
        status.mode = self._mode
        status.max_iterations = (
            self._setup.max_iterations if self._setup is not None else self.agent.options.max_iterations
        )
        limits = self._setup.limits if self._setup is not None else self.agent.options.limits
        status.max_budget_usd, status.max_tokens = limits.max_budget_usd, limits.max_tokens
        status.show()
        self._prompt.focus()
        for notice in self.notices:
            self.transcript.add_notice(notice, "warning")
        # SIGTERM, SIGHUP, SIGQUIT, SIGINT: stop the turn, end the session, restore the terminal.
        if not self.is_headless:
            self.stop_signals.install()
        # The agent, its checkpoint guard and the store are built just after the first frame.
        self.call_after_refresh(self.open_session)

    async def start_over(self, setup: AgentSetup) -> None:
        """``/worktree``: end this session (it stays stored) and open a new one built from ``setup``."""
        if self._live is not None:
            await self._live.close()
        self._live, self._agent, self._setup, self._switcher = None, None, setup, setup.switcher
        self.workspace = setup.workspace
        header = self.query_one(AppHeader)
        header.workspace, header.branch = setup.workspace, gitinfo.current_branch(setup.workspace)
        header.show()
        self._prompt.workspace = setup.workspace  # @path completes in the new workspace
        self.status.reset_totals()
        self.open_session()

    @work(exclusive=True, group="session")
    async def open_session(self, resume: str | None = None) -> None:
        """Open (or switch to) the stored session, then send the first task if any."""
        memory.tune_collector()  # the first frame is drawn: the collector runs again, less often
        if self._session_closed:  # the person quit before it began: nothing is built, no store is opened
            return
        if self._setup is not None:  # if it fails, the worker's error ends the app and no turn runs
            setup, self._setup = self._setup, None
            self._agent, self.prepare_notices = setup.build()  # what building found (an untrusted folder's too)
            for notice in self.prepare_notices:
                self.transcript.add_notice(notice, "warning")
            if watch := setup.watch_notice():  # said once: undo cannot tell a person's edits from a command's
                self.transcript.add_notice(watch, "warning")
            if self._agent.mcp is not None:  # the status bar follows the MCP servers
                self._agent.mcp.listeners.append(self._show_mcp)
                self._show_mcp()
            self._agent.processes.listeners.append(self._show_processes)  # and the background processes
        instructions = self.agent.options.instructions
        if instructions is not None:  # the header names what the model follows
            self.show_instructions([f.shown for f in instructions.files])
        try:
            await self._switch_session(resume)
        finally:
            self._session_opened.set()
        if self.first_task:
            task, self.first_task = self.first_task, None
            self.submit(task)

    def _show_processes(self) -> None:
        self.status.processes = self.agent.processes.running
        self.status.show()

    def _show_mcp(self) -> None:
        mcp = self.agent.mcp
        self.status.mcp = mcp.summary() if mcp is not None else ""
        self.status.show()

    async def _switch_session(self, resume: str | None) -> None:
        """End the open session, if any, and open the requested (or a new) one."""
        from monkey.store import StoreError

        try:
            handle = await self.live.open(continue_=self.continue_ and resume is None, resume=resume or self.resume)
        except StoreError as exc:
            self.transcript.add_notice(f"sessions are not saved: {exc}", "error")
        else:
            self.continue_, self.resume = False, None
            self.transcript.export_hint = (
                f"monkey sessions export {self.agent.session_id} --format markdown shows the whole session"
            )
            for n, notice in enumerate(handle.notices):  # describe_restored(): what came back, any damage
                self.transcript.add_notice(notice, "warning" if n else "info")
            if handle.restored is not None:
                self.show_mode(self.agent.policy.mode)  # the mode the session was left in
                self.show_spent()
                await self._show_restored()

    def show_instructions(self, files: list[str]) -> None:
        """The header names the instruction files the model follows (``files``, outermost first)."""
        self.query_one(AppHeader).set_instructions(files)

    def show_spent(self) -> None:
        """After a resume (or a ``/clear`` with a dollar or token budget shown), the status bar's tokens
        and cost are what the budget counts (the session's earlier runs too with ``--budget-scope session``;
        ``/clear`` keeps the session, so its budget goes on counting)."""
        budget = self.agent.budget
        status = self.status
        status.tokens_in, status.tokens_out, status.cost = budget.input_tokens, budget.output_tokens, budget.cost_usd
        status.show()

    async def _show_restored(self) -> None:
        """Show the resumed session's earlier messages, answers and tool calls, as they were seen."""
        from monkey.store import StoreError
        from monkey.store.history import HISTORY_TYPES, history_items

        assert self.session is not None
        try:
            lines = await self.session.store.event_lines(self.agent.session_id, HISTORY_TYPES)
        except StoreError as exc:
            self.transcript.add_notice(f"the earlier conversation cannot be shown: {exc}", "warning")
            return
        self.transcript.load_items(history_items(lines))
        await self._subagents.restore(self.session.store, self.agent.session_id, self.transcript)
        self.call_after_refresh(memory.settle)

    # -- sending ---------------------------------------------------------------------

    def submit(self, text: str) -> None:
        """Send a message, or queue it while a turn runs; slash commands run at once; nothing (Enter on
        an empty box) sends the next message a cancelled turn left queued."""
        if not text:
            if self.queue and not self.working:
                self.queue_held = False
                self._send_queued()
            return
        if text.startswith("/"):
            self.run_worker(self._run_command(text), group="command")
            return
        if self.working:
            self.queue.append(text)
            self.status.queued = len(self.queue)
            self.status.show()
            self.transcript.add_notice(f"queued: {text}")
            return
        self.transcript.add_user(text)
        self.status.set_working(True)
        self.run_turn(text)

    async def _run_command(self, text: str) -> None:
        from monkey.ui.slash import run_command

        await self._session_opened.wait()  # checkpoints are repaired and the session open first
        await run_command(self, text)

    @on(PromptInput.Submitted)
    def _on_submitted(self, message: PromptInput.Submitted) -> None:
        self.submit(message.text)

    @on(PromptInput.Hints)
    def _on_hints(self, message: PromptInput.Hints) -> None:
        """The message box changed: show its completions; the person is here again."""
        self.attention.back()
        self._hints.show_matches(message.matches)

    @on(PromptInput.Quit)
    async def _on_quit(self) -> None:
        await self.action_quit()

    @work(exclusive=True, group="turn")
    async def run_turn(self, prompt: str, workflow: str = "") -> None:
        """Run one turn of the agent (or ``workflow`` on ``prompt``), feeding every event to the store and the bridge."""
        self.attention.turn_started()
        try:
            await self._session_opened.wait()  # a message typed at once is recorded too
            await (self.live.run_workflow(workflow, prompt) if workflow else self.live.send(prompt))
        except Exception as exc:  # a bug or a backend failure must not take the app down
            self.transcript.add_notice(f"the turn failed: {type(exc).__name__}: {exc}", "error")
        finally:
            self.status.set_working(False)
            if self.exit_when_done and not self.queue:
                self.call_later(self.action_quit)
            elif self.queue and self.queue_held:  # cancelled: the person sends or clears what waits
                self.transcript.add_notice(
                    f"{len(self.queue)} queued message(s) kept: Enter on an empty message box "
                    "sends the next, Esc clears them",
                    "warning",
                )
            elif self.queue:  # popped only when sent, so the queue shows until the next turn starts
                self.call_later(self._send_queued)

    def _send_queued(self) -> None:
        if self.queue and not self.working:
            text = self.queue.popleft()
            self.status.queued = len(self.queue)
            self.submit(text)

    async def feed(self, event: Event) -> None:
        """Record one event, then show it (opening the session first if nothing has yet)."""
        if self._agent is None:  # nothing can be stored before the agent and its session exist
            self._show_event(event)
            return
        await self.live.emit(event)

    def _show_event(self, event: Event) -> None:
        """Show one stored event: the bridge turns it into the widgets' messages (a sub-agent's
        events go to its block under the ``task`` call)."""
        if self.scrollback is not None:
            self.scrollback.append(event)
        from monkey.ui import bridge  # imported with the first event, after the first frame

        child = self._subagents.route(event)
        for message in bridge.translate_child(event) if child else bridge.translate(event):
            self.post_message(message)

    async def on_timeline_screen_undone(self, message) -> None:
        """An undo or restore from the checkpoint timeline: record and show it."""
        from monkey.session.commands import describe_undo

        event = message.event
        await self.feed(event)
        self.transcript.add_notice(describe_undo(event.removed, event.restored, event.paths))

    def on_approval_needed(self, message: ApprovalNeeded) -> None:
        """A call waits for the person: its dialog is shown now, or after the ones asked before it."""
        self._approvals.add(message)

    # -- actions ---------------------------------------------------------------------

    def action_cancel_turn(self) -> None:
        """Cancel the running turn (the app stays)."""
        if self._agent is not None and self._agent.cancel():
            self._stopping("cancelling…")
        elif self.queue and not self.working:
            self.transcript.add_notice(f"queue cleared: {len(self.queue)} message(s) not sent", "warning")
            self.queue.clear()
            self.queue_held = False
            self.status.queued = 0
            self.status.show()

    def action_interrupt(self) -> None:
        """Ctrl-C: copy the selected text if there is some; else cancel the turn, and a second press within two
        seconds quits."""
        selected = self.selected_text()
        if selected:
            from monkey.session.commands import copied_note

            self.copy_to_clipboard(selected)
            self.notify(copied_note(selected, "the selection"), timeout=3)
            return
        now = time.monotonic()
        if now - self._ctrl_c_at < QUIT_WINDOW:
            self.run_worker(self.action_quit(), group="quit")
            return
        self._ctrl_c_at = now
        if self._agent is not None and self._agent.cancel():
            self._stopping("cancelling… (Ctrl-C again to quit)")
        else:
            self.notify("Press Ctrl-C again to quit", timeout=QUIT_WINDOW)

    def _stopping(self, said: str) -> None:
        """The turn is being cancelled (Esc, Ctrl-C, or in monkey web): its dialogs close, the queue waits."""
        self.queue_held = bool(self.queue)
        self._approvals.stop_all()
        self.transcript.add_notice(said, "warning")

    def selected_text(self) -> str:
        """Text selected with the mouse on the screen, or in the focused text box."""
        from textual.widgets import Input, TextArea

        focused = self.focused
        if isinstance(focused, (TextArea, Input)) and focused.selected_text:
            return focused.selected_text
        return self.screen.get_selected_text() or ""

    def action_toggle_events(self) -> None:
        """Ctrl+E: open the event pane with the focus in its filter; from inside the pane, close it.

        With the pane open and the focus elsewhere (Esc from the filter goes back to the
        message box), Ctrl+E goes to the filter again.
        """
        pane = self._events
        if not pane.has_class("-open") or pane.has_focus_within:
            self.show_events(not pane.has_class("-open"))
        else:
            pane.focus_filter()

    async def action_cycle_mode(self) -> None:
        """Shift+Tab: the next permission mode (``/mode next``)."""
        if self._agent is None:
            return  # the session opens just after the first frame
        from monkey.ui.slash import run_command

        await run_command(self, "/mode next")

    def show_mode(self, mode: str) -> None:
        """The permission mode changed: the status bar says the new one."""
        self.status.mode = mode
        self.status.show()

    def show_events(self, show: bool) -> None:
        """Open the event pane (focus in its filter) or close it (focus back in the message box)."""
        pane = self._events
        pane.set_class(show, "-open")
        if show:
            pane.open()
        else:
            self._prompt.focus()

    def write_to_terminal(self, text: str) -> None:
        """Send control sequences (bell, title) to the person's terminal; nothing when there is none."""
        if self._terminal_write is not None:
            self._terminal_write(text)
        elif not self.is_headless and self._driver is not None:
            self._driver.write(text)
