"""``monkey agent``: set up the agent from flags and config, run it, print the events."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

from monkey.agent.approval import ApprovalPolicy, Approver, HeadlessApprover, RuleError
from monkey.agent.loop import Agent, AgentOptions
from monkey.backends.base import BackendError
from monkey.config import Config, ConfigError, load_config
from monkey.events import Event, TurnCompleted
from monkey.tools.base import ShellSettings

__all__ = ["run_agent_command", "EXIT_CODES", "build_agent"]

EXIT_CODES = {"completed": 0, "error": 1, "max_iterations": 3, "denied": 4, "cancelled": 130}
"""Exit status of ``monkey agent --task`` by how the task ended."""


class UsageError(Exception):
    """Bad flags, config or workspace: exit 2 with this message."""


@dataclass
class Setup:
    """Everything resolved from flags and config."""

    workspace: Path
    config: Config
    agent: Agent
    notices: list[str]


def _fail(message: str, code: int) -> int:
    sys.stderr.write(f"monkey: {message}\n")
    sys.stderr.flush()
    return code


def _workspace(cwd: str | None) -> Path:
    path = Path(cwd).expanduser() if cwd else Path.cwd()
    if not path.is_dir():
        raise UsageError(f"workspace {path} is not a directory")
    return path.resolve()


def build_agent(args: argparse.Namespace, approver: Approver | None) -> Setup:
    """Resolve workspace, config, backend and policy into an :class:`Agent`."""
    from monkey.backends.select import choose_backend, create_backend

    workspace = _workspace(args.cwd)
    try:
        config = load_config(workspace)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    if args.continue_:
        raise UsageError(
            "--continue needs stored sessions, which this version of monkey does not keep yet"
        )
    choice = choose_backend(
        flag=args.backend, local=args.local, script=args.script, base_url=args.base_url,
        api_key=args.api_key, config=config,
    )
    backend = create_backend(choice.name, config=config, model=args.model, script=args.script)
    try:
        policy = ApprovalPolicy.from_strings(
            config.approvals.allow, config.approvals.deny, no_approval=args.no_approval
        )
    except RuleError as exc:
        raise UsageError(str(exc)) from None
    options = AgentOptions(
        max_iterations=args.max_iterations or config.agent.max_iterations,
        max_repeats=config.agent.max_repeats,
        shell=ShellSettings(
            timeout=config.shell.timeout,
            max_timeout=config.shell.max_timeout,
            output_limit=config.shell.output_limit,
        ),
    )
    agent = Agent(backend=backend, workspace=workspace, approver=approver, policy=policy, options=options)
    return Setup(workspace, config, agent, config.notices + choice.notices)


def _interactive_terminal() -> bool:
    return sys.stdin.isatty() and (sys.stdout.isatty() or sys.stderr.isatty())


def _make_sink(fmt: str):  # type: ignore[no-untyped-def]
    from monkey import output

    if fmt == "stream-json":
        return output.StreamJsonSink(sys.stdout.buffer)
    if fmt == "json":
        return output.JsonSink(sys.stdout)
    color = sys.stdout.isatty() and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"
    return output.TextSink(sys.stdout, color=color)


async def _drive(agent: Agent, task: str, sink) -> TurnCompleted | None:  # type: ignore[no-untyped-def]
    """Run one task, cancelling cleanly on the first Ctrl-C and giving up on the second."""
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
        except (NotImplementedError, RuntimeError):
            pass
    last: TurnCompleted | None = None
    try:
        async for event in agent.run_task(task):
            if isinstance(event, TurnCompleted):
                last = event
            sink(event)
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
        await agent.backend.aclose()
    return last


def _read_task(args: argparse.Namespace) -> str | None:
    if args.task is not None:
        return args.task
    if not sys.stdin.isatty():
        return sys.stdin.read()
    return None


def run_agent_command(args: argparse.Namespace) -> int:
    """Run ``monkey agent`` and return the exit status."""
    task = _read_task(args)
    if task is not None and not task.strip():
        return _fail("the task is empty", 2)
    interactive = _interactive_terminal()
    approver: Approver
    if interactive:
        from monkey.repl import InlineApprover

        approver = InlineApprover()
    else:
        approver = HeadlessApprover()
    try:
        setup = build_agent(args, approver)
    except UsageError as exc:
        return _fail(str(exc), 2)
    except BackendError as exc:
        return _fail(exc.message, 2 if exc.kind == "invalid_request" else 1)
    for notice in setup.notices:
        sys.stderr.write(f"monkey: {notice}\n")
    if task is None:
        from monkey.repl import run_repl

        return run_repl(setup.agent)
    sink = _make_sink(args.output_format)
    try:
        last = asyncio.run(_drive(setup.agent, task, sink))
    except (KeyboardInterrupt, asyncio.CancelledError):
        sink.close()
        return _fail("interrupted", 130)
    sink.close()
    if last is None:
        return _fail("the task ended without a result", 1)
    code = EXIT_CODES.get(last.reason, 1)
    if code:
        _fail(last.message or last.reason, code)
    return code
