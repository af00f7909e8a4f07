"""One running conversation: the agent, its stored session and the backend switcher.

A front end gets a :class:`Session` from its :class:`~monkey.session.setup.Setup` with two
callbacks — ``show`` (an event, after it is stored; returning False says nothing more can be
shown, and the turn is cancelled) and ``tell`` (a line for the person) — and then only parses
input and renders. Every event goes through one loop, :meth:`Session.pump`: stored first
(:meth:`~monkey.store.Recorder.keep`, a burst the agent has ready at once in one commit,
durable types synced), then shown. :meth:`Session.turn` runs what a person typed (``!command``
and ``@path`` included), :meth:`Session.message`, :meth:`Session.shell` and
:meth:`Session.tool_call` what a program sent, :meth:`Session.command` a slash command;
:meth:`Session.open` opens the stored session and :meth:`Session.close` ends it and closes
the backend and the MCP servers (with the child processes they run). With ``MONKEY_ENABLE_TELEMETRY``
the OpenTelemetry export (:mod:`monkey.telemetry`) observes each event once it is stored.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from monkey.agent.loop import Agent
    from monkey.session.switch import BackendSwitcher
    from monkey.session.stored import SessionHandle
    from monkey.events import Event, ToolImage
    from monkey.session.replies import Level, Reply
    from monkey.store import Recorder, SessionStore

__all__ = ["Session"]


class Session:
    """The conversation a front end shows; every command and turn goes through it."""

    def __init__(
        self,
        agent: Agent,
        switcher: BackendSwitcher,
        *,
        show: Callable[[Event], object],
        tell: Callable[[str, Level], None],
        store_path: Path | None = None,
        working: Callable[[], bool] | None = None,
    ) -> None:
        self.agent = agent
        self.switcher = switcher
        self.show = show
        """Shows one event (called after the event is stored); False: nothing more can be shown."""
        self.tell = tell
        """Tells the person one line (a store failure, what a mention attached)."""
        self.store_path = store_path
        self.handle: SessionHandle | None = None
        """The open stored session (None: not open, or sessions are not saved)."""
        self._working = working
        self.closed = False
        """Whether :meth:`close` ran (the backend and the MCP servers are closed)."""
        self._quiet = False
        """A write of the store failed in this stream: nothing more of it is shown (it was not stored)."""
        self.interrupted: Callable[[str], None] = lambda said: tell(said, "warning")
        """The front end's own reaction to its turn cancelled elsewhere (``monkey web``), as to its Esc or
        Ctrl-C: the app closes its dialogs; the line says it."""
        self._steering: Any = None
        """The task doing what ``monkey web`` asks of the open session (see :mod:`monkey.session.steer`)."""
        self.told: Exception | None = None
        """The store's failure the person was told of (a front end need not say it again)."""
        from monkey.telemetry import watch

        self.telemetry = watch()
        """The OpenTelemetry export watching each stored event (None: off, ``MONKEY_ENABLE_TELEMETRY``)."""

        _watch_the_store(self)

    # -- what commands see (monkey.session.commands.Host) --------------------------------

    @property
    def working(self) -> bool:
        """Whether a turn runs (or, as the front end sees it, is about to)."""
        return self._working() if self._working is not None else self.agent.running

    @property
    def store(self) -> SessionStore | None:
        return self.handle.store if self.handle is not None else None

    @property
    def recorder(self) -> Recorder | None:
        return self.handle.recorder if self.handle is not None else None

    async def emit(self, event: Event, *, more: bool = False) -> None:
        """Store ``event`` (opening the session with ``session_started`` first), then show it.

        ``more``: further events are ready at once (a turn's backlog): the event may be held
        and shown, stored, with them (see :meth:`~monkey.store.Recorder.keep`).
        A failed write (a full disk) is told once and stops the turn there: nothing of the turn
        is shown after it (it was not stored); a later turn goes on unsaved.
        """
        agent = self.agent
        if not agent.started and event.type != "session_started":
            await self.emit(agent.session_started())  # an undo or a switch before any turn
        if self._quiet:
            return
        recorder = self.recorder
        saving = recorder is not None and recorder.failed is None
        ready = await _kept(recorder, event, more=more)
        if saving and recorder is not None and recorder.failed is not None:
            self._quiet = True
            self._lost(recorder.failed)
            return
        for shown in ready:
            self._show(shown)

    def _show(self, event: Event) -> None:
        if self.telemetry is not None:  # an observer of what is stored, before it is shown
            self.telemetry.observe(event)
        if self.show(event) is False:  # the renderer cannot show more (stdout's reader went away): stop the turn
            self.agent.cancel()

    def _lost(self, exc: Exception) -> None:
        said = f"{exc}; the turn was stopped there: this session is no longer saved (what was saved is kept)"
        self.told = exc
        self.tell(said, "error")
        self.agent.cancel(why=said)

    async def pump(self, events: AsyncIterator[Event]) -> AsyncIterator[Event]:
        """The one loop every front end's events go through: each event stored, then shown, then yielded.

        While the agent has more events ready at once (``Agent.backlog``), they are committed together
        (see :meth:`~monkey.store.Recorder.keep`); an event may then be yielded before it is shown, and is
        shown, stored, with the ones after it. A stream that ends the session itself (``--task``'s
        ``session_ended``) leaves nothing for :meth:`end` to add.
        """
        agent = self.agent
        self._quiet = False  # a write that failed in an earlier stream was told: this one goes on unsaved
        try:
            async for event in events:  # emit() opens the stored session with session_started first
                await self.emit(event, more=agent.backlog > 0)
                if event.type == "session_ended" and event.session_id == agent.session_id:
                    agent.started = False
                yield event
        finally:
            self._quiet = False  # what comes after the stream (a command's reply, /undo) is shown, unsaved

    async def stored(self, types: tuple[str, ...] = ()) -> list[bytes]:
        """The open session's events as stored (only ``types``, when given), what is buffered written first;
        none when no session is open."""
        handle = self.handle
        if handle is None:
            return []
        if handle.recorder.failed is None and handle.recorder.pending:
            await handle.recorder.flush()
        return await handle.store.event_lines(self.agent.session_id, types)

    # -- opening and closing -------------------------------------------------------------

    async def open(self, *, continue_: bool = False, resume: str | None = None) -> SessionHandle:
        """End the open session, if any, and open a new one (or the one to continue or resume).

        Raises :class:`~monkey.store.StoreError` when none can be opened.
        """
        from monkey.session.stored import open_session

        if self.handle is not None:
            await self.end()
            self.agent.leave_session()
        handle = await open_session(self.agent, continue_=continue_, resume=resume, path=self.store_path)
        if self.closed:  # closed while it opened (the app quit meanwhile): nothing may keep its store open
            await handle.close()
            return handle
        self.handle = handle
        if self.telemetry is not None and self.telemetry.problems:  # told once
            for problem in self.telemetry.problems:
                self.tell(problem, "warning")
            self.telemetry.problems = []
        if self.agent.mcp is not None:  # MCP servers connect in the background while the person types
            self.agent.mcp.start()
        from monkey.session.steer import start

        self._steering = start(self)  # cancel and mode asked in monkey web, from now on
        return self.handle

    async def end(self, *, record: bool = True) -> None:
        """Store ``session_ended`` (if the session started), show it and close the store.

        ``record=False``: close the store with what is stored (a ``--task`` quit at once records no end).
        """
        from monkey.agent.processes import end as end_processes

        agent = self.agent
        handle: SessionHandle | None = None
        try:
            stopped = await end_processes(agent.processes, agent.checkpoints, agent.session_id, agent.turns)
            handle = self._detach()
            if handle is not None:
                await self._record_end(handle, stopped, record)
        finally:  # cancelled or failed part way (the app torn down): left open, its thread would keep monkey running
            handle = handle or self._detach()
            if handle is not None:
                try:
                    await handle.close()
                except Exception as exc:  # noqa: BLE001 - told, not fatal on the way out
                    self.tell(f"closing the session failed: {exc}", "error")

    def _detach(self) -> SessionHandle | None:
        """The open stored session, no longer the session's (nothing records through it any more)."""
        handle, self.handle = self.handle, None
        if self._steering is not None:
            self._steering.cancel()
            self._steering = None
        return handle

    async def _record_end(self, handle: SessionHandle, stopped: list[Event], record: bool) -> None:
        if self.agent.started and record:
            recorder = handle.recorder
            ready: list[Event] = []
            failed = recorder.failed
            for event in [
                *stopped,
                *await self.agent.end_hooks("prompt_input_exit"),
                self.agent.session_ended("completed"),
            ]:
                ready += await _kept(recorder, event)
            self.agent.started = False
            if recorder.failed is not None:
                if failed is None:  # told once: a failure told during a turn is not told again
                    self.tell(f"{recorder.failed}; the end of the session was not saved", "error")
                ready = []  # not stored: not shown
            for shown in ready:
                if self.telemetry is not None:
                    self.telemetry.observe(shown)
                self.show(shown)

    async def close(self, *, record: bool = True) -> None:
        """The one way a session ends: stop a running turn, end the stored session (see :meth:`end`),
        stop the background processes, then close the MCP servers, the backend and the language servers, and with
        them the child processes they run. Once."""
        if self.closed:
            return
        self.closed = True
        agent = self.agent
        agent.cancel()
        try:
            await self.end(record=record)
        finally:
            try:
                await agent.processes.stop_all()  # the ones the person kept too: nothing outlives the session
                if agent.mcp is not None:
                    await agent.mcp.aclose()
            finally:
                try:
                    await agent.backend.aclose()
                finally:
                    if agent.options.diagnostics is not None:  # the language servers, with their processes
                        await agent.options.diagnostics.aclose()
                    if self.telemetry is not None:  # the last export, waited for a short while at most
                        await self.telemetry.close()

    # -- input ---------------------------------------------------------------------------

    async def command(self, text: str) -> list[Reply]:
        """Run the slash command ``text``."""
        from monkey.session.commands import run_command
        from monkey.session.replies import SendPrompt

        replies = await run_command(self, text)
        if self.recorder is not None and any(isinstance(r, SendPrompt) for r in replies):
            self.recorder.name(text)  # "/release-notes", not the skill's instructions
        return replies

    async def send(self, text: str) -> None:
        """Run ``text`` as one turn: a ``!command`` the person runs, or a message (``@path`` attached)."""
        async for _ in self.turn(text):
            pass

    async def run_workflow(self, name: str, task: str) -> None:
        """Run workflow ``name`` (``tpdr``) on ``task``: its stages as turns, every event stored, then shown."""
        async for _ in self.workflow_turn(name, task):
            pass

    async def workflow_turn(self, name: str, task: str) -> AsyncIterator[Event]:
        """Like :meth:`run_workflow`, yielding each event once it is stored (see :meth:`pump`)."""
        from monkey.config import monkey_home
        from monkey.workflow.runner import Workflow

        flow = Workflow(self.agent, task, settings=self.switcher.config.workflow, home=monkey_home())
        self.tell(f"workflow {flow.id} (monkey workflows show {flow.id} prints its trace)", "info")
        async for event in self.pump(flow.run()):
            yield event
        self.tell(
            f"workflow {flow.id} ended: {flow.outcome}" + (f" ({flow.reason})" if flow.reason else ""),
            "info" if flow.outcome == "done" else "warning",
        )

    def turn(self, text: str) -> AsyncIterator[Event]:
        """Like :meth:`send`, yielding each event once it is stored (see :meth:`pump`)."""
        from monkey.agent.person_shell import shell_line

        command = shell_line(text)
        if command is not None:  # !command: the person runs it, recorded and undoable
            return self.shell(command)
        if self.recorder is not None:  # the title is what the person typed, not the attached files
            self.recorder.name(text)
        return self.message(*self.attach(text))

    def attach(self, text: str) -> tuple[str, list[ToolImage]]:
        """``text`` with the files its ``@path`` mentions attached, and the images it attaches that the
        backend takes (each note told: attached, cut, refused, an image not sent)."""
        from monkey.session.mentions import expand_mentions

        expanded = expand_mentions(text, self.agent.workspace)  # @path: the file goes with the message
        for note in expanded.notes:
            self.tell(note, "info" if note.startswith("attached ") else "warning")
        return expanded.prompt, self.sendable(expanded.images)

    def sendable(self, images: Sequence[ToolImage]) -> list[ToolImage]:
        """``images`` if the backend takes images; none otherwise, and the person is told."""
        if images and not self.agent.backend.capabilities.images:
            n = len(images)
            self.tell(
                f"{'the image was' if n == 1 else f'the {n} images were'} not sent: the {self.agent.backend.name} "
                "backend takes only text",
                "warning",
            )
            return []
        return list(images)

    def message(self, prompt: str, images: Sequence[ToolImage] = ()) -> AsyncIterator[Event]:
        """``prompt`` as one turn of the model, as it is (no ``!command``, no ``@path``), with the
        ``images`` attached that the backend takes (see :meth:`sendable`)."""
        return self.pump(self.agent.run(prompt, self.sendable(images)))

    def shell(self, command: str) -> AsyncIterator[Event]:
        """A shell command the person typed, as a turn of its own (decided, checkpointed, recorded)."""
        return self.pump(self.agent.run_shell(command))

    def tool_call(self, name: str, arguments: dict[str, Any], *, via: str) -> AsyncIterator[Event]:
        """One tool call a program asked for (``via``: who), as a turn without a model."""
        return self.pump(self.agent.run_tool(name, arguments, via=via))


def _watch_the_store(session: Session) -> None:
    """Let an approval of the session be answered in ``monkey web`` too (see :mod:`monkey.session.remote`)."""
    from monkey.permissions.requests import HeadlessApprover
    from monkey.session.remote import RemoteAnswers

    agent = session.agent
    if isinstance(agent.approver, (HeadlessApprover, RemoteAnswers)):  # nobody waits, or already watched
        return
    agent.approver = RemoteAnswers(
        agent.approver, lambda: session.store, lambda: agent.session_id, lambda text: session.tell(text, "info")
    )


async def _kept(recorder: Recorder | None, event: Event, *, more: bool = False) -> list[Event]:
    """Store ``event`` (durable before visible) and return the events now ready to be shown: ``event`` alone,
    unstored, when there is no store or its writes have failed (see :meth:`~monkey.store.Recorder.keep`)."""
    if recorder is None or recorder.failed is not None:
        return [event]
    return await recorder.keep(event, more=more)
