"""``monkey agent --task``: one task as a session whose renderer is standard output, then an exit status.

:func:`run_task` is what the command line calls; :func:`drive_task` runs the task in a
:class:`~monkey.session.session.Session` (every event stored, then printed by the sink of
``--output-format``), cancelling cleanly on the first Ctrl-C (or SIGTERM) and giving up on the
second. A sink whose reader went away (``| head``) stops the task; what was stored is kept.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from monkey.events import CheckpointCreated, TurnCompleted
from monkey.line import output
from monkey.safe_text import escape_controls

if TYPE_CHECKING:
    from monkey.agent.loop import Agent
    from monkey.session.session import Session
    from monkey.session.setup import Setup

__all__ = ["run_task", "drive_task", "make_sink", "changed_files", "where_line"]


def make_sink(fmt: str) -> output.StdoutGuard:
    """The sink of ``--output-format`` (``text``, ``json``, ``stream-json``) on standard output."""
    if fmt == "stream-json":
        return output.StdoutGuard(output.StreamJsonSink(sys.stdout.buffer))
    if fmt == "json":
        return output.StdoutGuard(output.JsonSink(sys.stdout))
    color = sys.stdout.isatty() and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"
    # the error that ends a task is said once, in the reason line on stderr
    return output.StdoutGuard(output.TextSink(sys.stdout, color=color, show_fatal_errors=False))


def tell(text: str, level: str = "info") -> None:
    """A line for the person, on stderr (stdout is the task's output)."""
    sys.stderr.write(f"{chr(10) if level == 'error' else ''}monkey: {escape_controls(text)}\n")
    sys.stderr.flush()


async def drive_task(
    session: Session,
    task: str,
    *,
    continue_: bool = False,
    resume: str | None = None,
    checkpoints: list[str] | None = None,
    workflow: Callable[[Agent], Any] | None = None,
) -> TurnCompleted | None:
    """Open the stored session, run ``task`` as a whole session through :meth:`Session.pump`, close it.

    MCP servers are waited for before the first model call (a failure is said on stderr). The ids of
    the checkpoints the run took are appended to ``checkpoints``. ``workflow`` makes the
    :class:`~monkey.workflow.runner.Workflow` to run instead of one turn. Returns the last turn's end.

    Raises:
        StoreError: the session cannot be opened, or a write failed (what was written is kept).
    """
    agent = session.agent
    try:
        handle = await session.open(continue_=continue_, resume=resume)
    except BaseException:
        await session.close(record=False)
        raise
    for notice in handle.notices:
        sys.stderr.write(f"monkey: {notice}\n")
    recorder = handle.recorder
    loop = asyncio.get_running_loop()
    presses = 0
    main = asyncio.current_task()

    def on_sigint() -> None:
        nonlocal presses
        presses += 1
        if presses == 1 and agent.cancel():
            sys.stderr.write("\nmonkey: cancelling (Ctrl-C again to quit at once)\n")
            sys.stderr.flush()
        elif main is not None:
            main.cancel()

    installed = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, on_sigint)
            installed.append(sig)
        except (NotImplementedError, RuntimeError):  # no signal handlers here (not the main thread, or no Unix)
            pass  # Python's own KeyboardInterrupt then ends the task, as caught by the caller
    last: TurnCompleted | None = None
    try:
        if agent.mcp is not None:  # a headless task waits for its MCP servers before the first model call
            await agent.mcp.wait_ready()
            for view in agent.mcp.views():
                if view.status == "failed":
                    sys.stderr.write(escape_controls(f"monkey: MCP server {view.name} failed: {view.error}\n"))
        events = workflow(agent).run_task() if workflow is not None else agent.run_task(*session.attach(task))
        async for event in session.pump(events):
            if isinstance(event, TurnCompleted):
                last = event
            elif isinstance(event, CheckpointCreated) and checkpoints is not None:
                checkpoints.append(event.checkpoint_id)
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
        await session.close(record=False)  # the task's own stream ends the session (a quit at once: as stored)
    if recorder.failed is not None:
        raise recorder.failed
    return last


def changed_files(agent: Agent, checkpoint_ids: list[str]) -> list[str]:
    """The workspace paths the run's own changes touched, in order, from the checkpoint journal.

    Only changes that happened count (state ``applied``): a refused, failed or no-op call
    leaves its checkpoint in another state, and an undone one was put back.
    """
    from monkey.checkpoints.guard import CheckpointGuard

    guard = agent.checkpoints
    if not isinstance(guard, CheckpointGuard) or not checkpoint_ids:  # only monkey's own guard keeps a journal
        return []
    paths: dict[str, None] = {}
    try:
        for cid in dict.fromkeys(checkpoint_ids):
            entry = guard.journal.get(cid)
            if entry is not None and entry.state == "applied":
                paths.update(dict.fromkeys(entry.paths))
    except Exception:  # noqa: BLE001 - a damaged journal: say nothing rather than guess
        return []
    return list(paths)


def where_line(workspace: Path, changed: list[str]) -> str:
    """``worked in WORKSPACE; changed a.py, b.py`` (or ``; no files changed``)."""
    if not changed:
        return f"worked in {workspace}; no files changed"
    shown = ", ".join(changed[:10]) + (f" and {len(changed) - 10} more" if len(changed) > 10 else "")
    return f"worked in {workspace}; changed {shown}"


def _fail(message: str, code: int) -> int:
    sys.stderr.write(f"monkey: {message}\n")
    sys.stderr.flush()
    return code


def run_task(
    setup: Setup, task: str, *, output_format: str = "text", workflow: str | None = None, resume: str | None = None
) -> int:
    """Run ``task`` (or ``workflow`` on it) in the built ``setup``'s session; the exit status.

    0 done; the codes of :data:`~monkey.line.output.EXIT_CODES` for how the turn ended; 130
    interrupted; :data:`~monkey.line.output.EXIT_PIPE_CLOSED` when stdout's reader went away.
    """
    from monkey.store import StoreError

    assert setup.agent is not None
    sink = make_sink(output_format)
    taken: list[str] = []
    made: list[Any] = []

    def make_workflow(agent: Agent):
        from monkey.config import monkey_home
        from monkey.workflow.runner import Workflow

        made.append(Workflow(agent, task, settings=setup.config.workflow, home=monkey_home()))
        sys.stderr.write(f"monkey: workflow {made[0].id} (monkey workflows show {made[0].id})\n")
        return made[0]

    session = setup.session(show=sink, tell=tell)
    try:
        last = asyncio.run(
            drive_task(
                session,
                task,
                continue_=setup.request.continue_,
                resume=resume,
                checkpoints=taken,
                workflow=make_workflow if workflow else None,
            )
        )
    except (KeyboardInterrupt, asyncio.CancelledError):
        sink.close()
        return output.EXIT_PIPE_CLOSED if sink.closed else _fail("interrupted", 130)
    except StoreError as exc:
        sink.close()
        return 1 if session.told is exc else _fail(str(exc), 1)  # a failure told during the turn: said once
    changed = changed_files(setup.agent, taken)
    if isinstance(getattr(sink.sink, "extra", None), dict):  # the json object names them too
        sink.sink.extra.update(workspace=str(setup.workspace), changed=changed)  # type: ignore[union-attr]
    sink.close()
    if sink.closed:  # quietly, like any program whose reader went away; the session is stored
        return output.EXIT_PIPE_CLOSED
    if output_format == "text":
        sys.stderr.write(escape_controls(f"monkey: {where_line(setup.workspace, changed)}\n"))
        sys.stderr.flush()
    return _workflow_ended(made[0]) if made else _turn_ended(last)


def _workflow_ended(flow: Any) -> int:
    """A workflow's outcome says how it ended."""
    if flow.exit_code:
        return _fail(
            f"workflow {flow.id} ended: {flow.outcome}" + (f" ({flow.reason})" if flow.reason else ""), flow.exit_code
        )
    sys.stderr.write(escape_controls(f"monkey: workflow {flow.id} done: {flow.reason}\n"))
    return 0


def _turn_ended(last: TurnCompleted | None) -> int:
    if last is None:
        return _fail("the task ended without a result", 1)
    code = output.EXIT_CODES.get(last.reason, 1)
    if code or last.stop_reason:  # a cut-off answer is the result, and is said to be one
        _fail(last.message or last.reason, code)
    return code
