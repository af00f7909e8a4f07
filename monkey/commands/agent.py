"""``monkey agent``: read the flags, choose the front end (the app, ``--plain``, ``--task``) and run it.

The session itself is built by the session layer (:mod:`monkey.session.setup`) from the
request the flags make (:func:`monkey.commands.flags.session_request`); the terminal asks
the questions only a person can answer (:func:`monkey.line.terminal.terminal_questions`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from monkey.backends.base import BackendError
from monkey.commands.flags import session_request
from monkey.line.terminal import Terminal, terminal_questions
from monkey.session.setup import SessionRequest, Setup, SetupError, build_agent, resolve_setup

if TYPE_CHECKING:  # the app imports the permission engine after its first frame
    from monkey.permissions.requests import Approver

__all__ = ["run_agent_command"]


def _fail(message: str, code: int) -> int:
    sys.stderr.write(f"monkey: {message}\n")
    sys.stderr.flush()
    return code


def _interactive_terminal() -> bool:
    return sys.stdin.isatty() and (sys.stdout.isatty() or sys.stderr.isatty())


def _pick(workspace: Path, *, interactive: bool, app: bool, inline: bool) -> str:
    """``--resume`` without an id: the app's session picker when the app is used, else a line picker.

    Raises:
        StoreError: no sessions here, nobody to ask, or none chosen.
    """
    from monkey.commands.pick import pick_session
    from monkey.session.stored import recent_sessions
    from monkey.store import StoreError

    if not app:
        return pick_session(workspace, interactive=interactive)
    if not recent_sessions(workspace, 1):  # said on the command line, before anything draws
        raise StoreError(f"no sessions in {workspace} to resume")
    from monkey.ui.pick import pick_in_app

    chosen = pick_in_app(workspace, inline=inline)
    if not chosen:
        raise StoreError("no session chosen")
    return chosen


def _read_task(args: argparse.Namespace) -> str | None:
    if args.task is not None:
        return args.task
    if not sys.stdin.isatty():
        return sys.stdin.read()
    return None


def _approver(use_app: bool, request: SessionRequest) -> Approver:
    """Who answers approval questions: the app's dialog, the terminal's inline question, or the rules alone."""
    if use_app:
        from monkey.ui.approver import TuiApprover

        return TuiApprover()
    terminal = Terminal.open()
    if terminal is not None:
        from monkey.line.repl import InlineApprover

        return InlineApprover(terminal)
    from monkey.permissions.requests import HeadlessApprover

    return HeadlessApprover(approve_plan=request.approve_plan)  # nobody can answer: the rules decide


def _check_workflow(args: argparse.Namespace, task: str | None) -> str:
    """Why ``--workflow`` cannot run as given ('' when it can)."""
    from monkey.workflow import WORKFLOWS

    if args.workflow not in WORKFLOWS:
        return f"unknown workflow {args.workflow!r}: expected one of {', '.join(WORKFLOWS)}"
    if task is None:
        return f"--workflow needs --task (in the app or --plain: /workflow {args.workflow} TASK)"
    return ""


def _run_app(setup: Setup, args: argparse.Namespace, task: str | None, resume: str | None) -> int:
    """The full-screen app (with ``--tui``, running ``task`` and quitting)."""
    from monkey.ui.run import run_app

    if args.continue_ or resume:  # the store is imported and opened only to find a session
        from monkey.session.stored import session_to_open
        from monkey.store import StoreError

        try:  # a session that is not there fails here, as with --task, before the app draws
            resume = session_to_open(setup.workspace, continue_=args.continue_, resume=resume)
        except StoreError as exc:
            return _fail(str(exc), 1)
    if args.workflow:  # --tui: the app runs it as /workflow does
        task = f"/workflow {args.workflow} {task}"
    return run_app(setup, task=task, continue_=False, resume=resume, notices=setup.notices, inline=args.inline)


def run_agent_command(args: argparse.Namespace) -> int:
    """Run ``monkey agent`` and return the exit status."""
    task = _read_task(args)
    if task is not None and not task.strip():
        return _fail("the task is empty", 2)
    if args.workflow and (problem := _check_workflow(args, task)):
        return _fail(problem, 2)
    interactive = _interactive_terminal()
    use_app = interactive and not args.plain and (task is None or args.tui)
    if not use_app:  # the app collects again after its first frame; a line front end from the start
        from monkey.ui.memory import release_collector

        release_collector()
    worktree: Any = None
    said: list[str] = []
    if args.worktree is not None:  # a new worktree first: the session's workspace is there
        from monkey.commands.worktrees import make_worktree

        worktree, folder, said, problem = make_worktree(args)
        if problem:
            return _fail(problem, 2)
    request = session_request(args, **({"workspace": folder} if worktree is not None else {}))
    approver = _approver(use_app, request)
    try:
        make = resolve_setup if use_app else build_agent  # the app builds the agent after its first frame
        setup = make(request, approver, terminal_questions())
    except (SetupError, BackendError) as exc:
        if worktree is not None:  # nothing ran in it: taken back, with its branch
            from monkey.commands.worktrees import take_back

            take_back(worktree)
        if isinstance(exc, SetupError):
            return _fail(str(exc), 2)
        return _fail(exc.message, 2 if exc.kind == "invalid_request" else 1)
    setup.notices[:0] = said
    for notice in setup.notices:
        sys.stderr.write(f"monkey: {notice}\n")
    resume = request.resume
    if resume == "":
        from monkey.store import StoreError

        try:
            resume = _pick(setup.workspace, interactive=interactive, app=use_app, inline=args.inline)
        except StoreError as exc:
            return _fail(str(exc), 2)
    beside: Any = None
    if args.web:  # the monitor beside the session, in this process
        from monkey.web.beside import Beside

        beside = Beside()
        try:
            url = beside.start()
        except OSError as exc:
            return _fail(f"monkey web cannot listen: {exc.strerror or exc}", 1)
        if use_app:
            setup.notices.append(f"monkey web: {url}")
        else:
            sys.stderr.write(f"monkey web: {url}\n")
            sys.stderr.flush()
        setup.monitor = url.partition("/?")[0]
    if not use_app and hasattr(approver, "notify_with"):  # a line front end asking on its terminal
        approver.notify_with(setup.config.notify, setup.workspace.name, monitor=setup.monitor)
    try:
        if use_app:
            return _run_app(setup, args, task, resume)
        if task is None:
            from monkey.line.repl import run_repl

            return run_repl(setup, resume=resume)
        from monkey.line.task import run_task

        return run_task(setup, task, output_format=args.output_format, workflow=args.workflow, resume=resume)
    finally:
        if beside is not None:
            beside.stop()
