"""The line-based terminal front end: inline approvals and the plain REPL (prompt-toolkit)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from monkey.permissions.requests import ApprovalRequest, Decision, stopped_by_user
from monkey.agent.loop import Agent
from monkey.line.repl_commands import HELP, EventEcho, ReplState, SessionLost, run_command, tell
from monkey.safe_text import escape_controls
from monkey.line.stop_signals import StopSignals
from monkey.line.terminal import Terminal

if TYPE_CHECKING:
    from monkey.config import NotifyConfig
    from monkey.notify import Notifier
    from monkey.session.setup import Setup

__all__ = ["InlineApprover", "run_repl", "HELP"]


class InlineApprover:
    """Asks on the terminal: ``y`` once, ``a`` for this session, ``n`` deny (with a reason).

    The question goes to the terminal itself (:class:`~monkey.line.terminal.Terminal`), never to
    standard output, so ``--task ... > out.txt`` asks on the screen and keeps the file clean.
    Keys typed before the question appeared are dropped, and the prompt leaves SIGINT to
    monkey (Ctrl-C during the prompt is a key that stops the turn; after it, Ctrl-C cancels).
    """

    def __init__(self, terminal: Terminal) -> None:
        self._lock = asyncio.Lock()
        self.terminal = terminal
        """Where questions are asked."""
        self.notifier: Notifier | None = None
        """Notifications off the terminal when a question waits (``[notify]``; None: none)."""
        self.place = ""

    def notify_with(self, config: NotifyConfig, place: str, monitor: str = "") -> None:
        """Notify as ``config`` says (the terminal's own notification goes to this terminal);
        ``monitor``: the web monitor beside the session, which the notices link to."""
        from monkey.notify import Notifier

        self.notifier = Notifier(config, write=self.terminal.write, monitor=monitor)
        self.place = place

    async def decide(self, request: ApprovalRequest) -> Decision:
        """Show the request and wait for the person's answer."""
        from prompt_toolkit import PromptSession
        from prompt_toolkit.input import create_input
        from prompt_toolkit.output import create_output

        term = self.terminal
        if request.plan:
            async with self._lock:
                return await self._review_plan(request)
        async with self._lock:  # concurrent requests are asked one after the other
            decided = request.decided_now()
            if decided is not None:  # a grant given while it waited covers it: the engine decided
                return decided
            if self.notifier is not None:
                from monkey.notify import Notice, question_line

                self.notifier.send(
                    Notice(
                        "approval",
                        f"monkey · approval needed · {self.place}",
                        question_line(request.tool, request.arguments),
                        session=request.session_id,
                        workspace=self.place,
                    )
                )
            lines = ["", term.style(f"? {request.tool} needs approval", "1;33")]
            if request.asker:  # a sub-agent's call
                lines.append(term.style(f"  asked by {escape_controls(request.asker, keep_newlines=False)}", "2"))
            lines += ["    " + _diff_colour(term, line) for line in request.summary.splitlines() or [""]]
            lines += [term.style(f"  ! {escape_controls(warning)}", "31") for warning in request.warnings]
            choices = ["[y] allow once"]
            if request.grant:
                choices.append(f"[a] allow for this session: {request.grant}")
            if request.grant and request.rules:
                choices.append(
                    f"[f] allow for good (saved to your config): {escape_controls(', '.join(request.rules))}"
                )
            lines += [f"  {choice}" for choice in [*choices, "[n] deny"]]
            if request.unsandboxed:
                lines.append("  (approved here, this command runs again OUTSIDE the sandbox)")
            keys = "/".join(
                ["y", *(["a"] if request.grant else []), *(["f"] if request.grant and request.rules else []), "n"]
            )
            term.write("\n".join(lines) + "\n")
            session: PromptSession[str] = PromptSession(
                input=create_input(term.input), output=create_output(term.output)
            )

            async def ask(question: str) -> str:
                return (await session.prompt_async(question, handle_sigint=False)).strip()

            term.discard_typed_ahead()
            while True:
                try:
                    answer = (await ask(f"  allow? [{keys}] ")).lower()
                except (EOFError, KeyboardInterrupt):
                    return stopped_by_user()
                if answer in ("y", "yes"):
                    return Decision(approved=True, by="user", reason="approved once")
                if answer in ("a", "session") and request.grant:
                    return Decision(
                        approved=True, scope="session", by="user", reason=f"approved for the session: {request.grant}"
                    )
                if answer in ("f", "always") and request.grant and request.rules:
                    return Decision(
                        approved=True,
                        scope="always",
                        by="user",
                        reason=f"approved for good: {', '.join(request.rules)}",
                    )
                if answer in ("n", "no"):
                    try:
                        reason = await ask("  tell the model why (Enter: just stop): ")
                    except (EOFError, KeyboardInterrupt):
                        reason = ""
                    if not reason:
                        return stopped_by_user()
                    return Decision(approved=False, by="user", reason=f"the user said: {reason}")

    async def _review_plan(self, request: ApprovalRequest) -> Decision:
        """The plan dialog in line mode: the plan, then a, d, f (feedback) or r; a ``+s`` keeps it in ``.monkey/plans/``."""
        from prompt_toolkit import PromptSession
        from prompt_toolkit.input import create_input
        from prompt_toolkit.output import create_output

        from monkey.agent.plan_mode import PLANS_DIR, approve_plan, reject_plan, send_back

        term = self.terminal
        lines = ["", term.style("? the model proposes a plan (plan mode)", "1;36")]
        lines += ["    " + line for line in request.summary.splitlines() or [""]]
        lines += [term.style(f"  ! {escape_controls(warning)}", "31") for warning in request.warnings]
        lines += [
            "  [a] approve, and go on accepting edits",
            "  [d] approve, and go on in default mode (asking)",
            "  [f] send it back with feedback",
            "  [r] reject (stop; stay in plan mode)",
            f"  (as, ds: approve and also keep the plan in {PLANS_DIR}/)",
        ]
        term.write("\n".join(lines) + "\n")
        session: PromptSession[str] = PromptSession(input=create_input(term.input), output=create_output(term.output))

        async def ask(question: str) -> str:
            return (await session.prompt_async(question, handle_sigint=False)).strip()

        term.discard_typed_ahead()
        while True:
            try:
                answer = (await ask("  plan? [a/d/f/r] ")).lower()
            except (EOFError, KeyboardInterrupt):
                return reject_plan()
            if answer in ("a", "as", "d", "ds"):
                return approve_plan("accept-edits" if answer[0] == "a" else "default", save=answer.endswith("s"))
            if answer in ("r", "n", "no"):
                return reject_plan()
            if answer == "f":
                try:
                    feedback = await ask("  what should change? ")
                except (EOFError, KeyboardInterrupt):
                    return reject_plan()
                if feedback:
                    return send_back(feedback)


def _diff_colour(term: Terminal, line: str) -> str:
    if line.startswith("+") and not line.startswith("+++"):
        return term.style(line, "32")
    if line.startswith("-") and not line.startswith("---"):
        return term.style(line, "31")
    if line.startswith("@@"):
        return term.style(line, "35")
    return line


def _history_path(agent: Agent):
    from monkey.config import history_path

    path = history_path(agent.workspace)
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


async def _run_turn(state: ReplState, text: str, workflow: str = "") -> None:
    """Run ``text`` as one turn of the session (a message or a ``!command``; or ``workflow`` on it),
    Ctrl-C cancelling it."""
    agent = state.agent
    loop = asyncio.get_running_loop()

    def on_sigint() -> None:
        if agent.cancel():
            sys.stderr.write("\n(cancelling)\n")

    loop.add_signal_handler(signal.SIGINT, on_sigint)
    started = time.monotonic()
    try:
        # each event stored, then shown
        await (state.session.run_workflow(workflow, text) if workflow else state.session.send(text))
    finally:  # between turns a stray Ctrl-C (before the prompt reads keys) is ignored, not fatal
        loop.add_signal_handler(signal.SIGINT, _between_turns)
    state.sink.close()
    approver = agent.approver
    while not isinstance(approver, InlineApprover) and hasattr(approver, "inner"):  # wrapped (monkey web's answers)
        approver = approver.inner
    took = time.monotonic() - started
    if isinstance(approver, InlineApprover) and approver.notifier is not None and took >= state.long_turn:
        from monkey.notify import Notice

        approver.notifier.send(
            Notice(
                "turn_done",
                f"monkey · done · {approver.place}",
                f"the turn took {took:.0f} s",
                session=agent.session_id,
                workspace=approver.place,
            )
        )


def _between_turns() -> None:
    """SIGINT while no turn runs and no prompt reads keys: nothing to cancel."""


async def _repl(setup: Setup, resume: str | None, moved: list[Path] | None = None) -> int:
    from monkey.line.output import TextSink
    from monkey.store import StoreError

    sink = EventEcho(sys.stdout, lambda out: TextSink(out, color=sys.stdout.isatty()))
    state = ReplState(setup.session(show=sink, tell=tell), sink, long_turn=setup.config.ui.long_turn)
    agent = state.agent
    state.turn = lambda text, workflow="": _run_turn(state, text, workflow)  # /init's turn runs as a typed one
    try:
        stored = await state.session.open(continue_=setup.request.continue_, resume=resume)
    except StoreError as exc:
        sys.stderr.write(f"monkey: {exc}\n")
        await state.session.close()
        return 1
    for notice in stored.notices:
        sys.stderr.write(f"monkey: {escape_controls(notice)}\n")
    if watch := setup.watch_notice():  # said once: undo cannot tell a person's edits from a command's
        sys.stderr.write(f"monkey: {escape_controls(watch)}\n")
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGINT, _between_turns)
    prompts: list = []

    def on_stop(sig: int) -> None:
        """SIGTERM, SIGHUP, SIGQUIT: cancel the turn (its command stops), leave the prompt, end."""
        agent.cancel()
        for prompt in prompts:
            if prompt.app.is_running:
                prompt.app.exit(exception=EOFError())

    stops = StopSignals(on_stop, signals=(signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT))
    stops.install(loop)
    try:
        code = await _prompt_loop(state, prompts, stops)
        if state.move_to is not None and moved is not None:
            moved.append(state.move_to)
        return stops.exit_code or code
    except SessionLost as exc:
        sys.stderr.write(f"monkey: no session could be opened: {exc}\n")
        return 1
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        await state.session.close()  # the stored session ended, then the MCP servers and the backend closed
        if stops.received == signal.SIGHUP:  # the terminal is gone: nothing more to say on it
            stops.force()
        stops.uninstall()
        with contextlib.suppress(OSError):
            await _say_how_to_resume(agent.session_id)


async def _say_how_to_resume(session_id: str) -> None:
    from monkey.session.stored import resume_hint

    hint = await resume_hint(session_id)
    if hint:
        sys.stderr.write(f"monkey: {hint}\n")
        sys.stderr.flush()


_NEXT_MODE = "\0mode next"
"""What the prompt returns for Shift+Tab: run ``/mode next``, then give the line back."""


def _mode_keys(kept: list[str]):  # KeyBindings
    """Shift+Tab switches the permission mode, as in the app; the half-typed line is kept."""
    from prompt_toolkit.key_binding import KeyBindings

    keys = KeyBindings()

    @keys.add("s-tab")
    def _(event) -> None:
        kept[0] = event.current_buffer.text
        event.app.exit(result=_NEXT_MODE)

    return keys


async def _prompt_loop(state: ReplState, prompts: list, stops: StopSignals) -> int:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory

    agent = state.agent
    kept: list[str] = [""]

    class History(FileHistory):
        """The history file, without the lines that hold a secret (``/login KEY``)."""

        def store_string(self, string: str) -> None:
            if not (string.split(maxsplit=1)[:1] == ["/login"] and len(string.split()) > 1):
                super().store_string(string)

    session: PromptSession[str] = PromptSession(
        history=History(str(_history_path(agent))), key_bindings=_mode_keys(kept)
    )
    prompts.append(session)
    print(escape_controls(f"monkey · {agent.backend.name} · {agent.backend.model} · {agent.workspace}"))
    print("Type a task, /help for commands, Shift+Tab for the permission mode, Ctrl-D to quit.")
    while True:
        if stops.received is not None:
            break
        try:
            typed = await session.prompt_async("› ", handle_sigint=False, default=kept[0])
        except KeyboardInterrupt:
            continue
        except EOFError:
            break
        if typed == _NEXT_MODE:  # the next prompt starts with the line as it was
            await run_command(state, "/mode next")
            continue
        kept[0] = ""
        text = typed.strip()
        if not text:
            continue
        if text.startswith("/"):
            if not await run_command(state, text):
                break
        else:  # a message (@path attached) or a !command the person runs
            await _run_turn(state, text)
        if stops.received is not None:
            break
    return 0


def run_repl(setup: Setup, *, resume: str | None = None) -> int:
    """Run the plain REPL on the built ``setup``'s session until the person quits (new, continued or
    ``resume``d: the id the person picked, else the request's)."""
    try:
        moved: list[Path] = []
        code = asyncio.run(_repl(setup, resume if resume is not None else setup.request.resume, moved))
        while moved:  # /worktree: a new session in the worktree, as monkey agent --worktree starts one
            from monkey.backends.base import BackendError
            from monkey.session.setup import SetupError, build_agent

            request = setup.request.but(workspace=moved.pop(), continue_=False, resume=None)
            try:
                setup = build_agent(request, setup.approver)
            except (SetupError, BackendError) as exc:
                sys.stderr.write(f"monkey: no session can start in {request.workspace}: {exc}\n")
                return 2
            for notice in setup.notices:
                sys.stderr.write(f"monkey: {notice}\n")
            code = asyncio.run(_repl(setup, None, moved))
        return code
    except KeyboardInterrupt:
        return 130
