"""Run :class:`~monkey.ui.app.MonkeyApp` from the CLI and return the exit status."""

from __future__ import annotations

import contextlib
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from monkey.agent.loop import Agent
    from monkey.ui.app import AgentSetup

__all__ = ["run_app"]


def run_app(
    agent: Agent | AgentSetup,
    *,
    task: str | None = None,
    continue_: bool = False,
    resume: str | None = None,
    notices: list[str] | None = None,
    inline: bool = False,
) -> int:
    """Run the app until the person quits; Textual restores the terminal on every exit path.

    With ``task``, the task is sent at once and the app quits when the turn ends (``--tui``):
    the answer is printed once the screen is restored, and the exit status is the task's.
    Given an :class:`~monkey.ui.app.AgentSetup`, the agent is built just after the first frame.
    """
    from monkey.ui.app import MonkeyApp

    app = MonkeyApp(
        agent,
        task=task,
        continue_=continue_,
        resume=resume,
        notices=notices,
        exit_when_done=task is not None,
        inline=inline,
    )
    from monkey.line.stop_signals import modes_back
    from monkey.ui.whole_writes import whole_frames

    try:
        with whole_frames():  # a frame the terminal takes only part of at a time still arrives whole
            app.run(inline=inline)
    except KeyboardInterrupt:
        return 130
    finally:  # what building the agent found (the sandbox's line, repairs...) stays in the terminal's scrollback
        modes_back()  # the cursor, autowrap...: whatever a late frame left, however the app ended
        with contextlib.suppress(OSError):  # a closed terminal (SIGHUP) takes no more lines
            for notice in app.prepare_notices:
                sys.stderr.write(f"monkey: {notice}\n")
            _print_scrollback(app)
    with contextlib.suppress(OSError):
        _say_how_to_resume(app)
    if app.stop_signals.exit_code is not None:  # SIGTERM, SIGHUP...: 128 + N, as a shell says it
        return app.stop_signals.exit_code
    if app.return_code not in (None, 0):  # the app failed (an error it could not show)
        return app.return_code
    if task is None:  # an ordinary quit (/exit, Ctrl-D, Ctrl-C twice) is a success, as in --plain
        return 0
    return _task_ended(app)


def _print_scrollback(app) -> None:
    """``--inline``: the region the app drew is gone; the conversation goes into the scrollback."""
    from monkey.line.output import TextSink
    from monkey.ui.whole_writes import whole

    events, app.scrollback = app.scrollback, None
    if not events:
        return
    sink = TextSink(whole(sys.stdout), color=sys.stdout.isatty(), show_prompts=True)
    for event in events:
        sink(event)
    sys.stdout.flush()


def _task_ended(app) -> int:
    """``--tui --task``: the answer stays on the terminal after the app closes; the status says how it ended."""
    from monkey.line.output import EXIT_CODES
    from monkey.safe_text import escape_controls
    from monkey.ui.whole_writes import whole

    if not app.last_reason:  # quit before the task's turn ended
        sys.stderr.write("monkey: the task did not finish (the app was closed)\n")
        return 130
    if app.last_result:  # a long answer is written whole, however slowly the terminal reads it
        whole(sys.stdout).write(escape_controls(app.last_result) + "\n")
    code = EXIT_CODES.get(app.last_reason, 1)
    if code or app.last_message:  # a completed turn has a message only when its answer was cut off
        sys.stderr.write(f"monkey: {escape_controls(app.last_message or app.last_reason)}\n")
    return code


def _say_how_to_resume(app) -> None:
    """``monkey agent --resume ID`` on stderr when the session has something stored."""
    import asyncio

    from monkey.session.stored import resume_hint

    try:
        session_id = app.agent.session_id
    except RuntimeError:  # the agent was never built: nothing was stored
        return
    hint = asyncio.run(resume_hint(session_id, app.store_path))
    if hint:
        sys.stderr.write(f"monkey: {hint}\n")
        sys.stderr.flush()
