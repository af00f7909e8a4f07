"""``monkey acp``: serve one editor over the Agent Client Protocol on stdin/stdout.

Each ``session/new`` or ``session/load`` builds a session (:mod:`monkey.session.setup`) for the
workspace the editor names, from the request the flags make and that workspace's config.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

__all__ = ["run_acp_command", "SDK_VERSION"]

SDK_VERSION = "0.12.1"
"""The version of ``agent-client-protocol`` monkey is written against (pinned in pyproject.toml)."""


async def _serve(args: argparse.Namespace, stopping: list[object] | None = None) -> None:
    from acp import run_agent

    from monkey.acp.server import MonkeyAcpAgent
    from monkey.commands.flags import session_request
    from monkey.line.terminal import terminal_questions

    agent = MonkeyAcpAgent(session_request(args), terminal_questions())
    if stopping is not None:
        stopping.append(agent)
    try:
        # the SDK's Agent protocol lists every ACP method, but its router answers method_not_found for the
        # ones an agent does not define (acp/router.py), so a partial agent is what it expects
        await run_agent(agent)  # type: ignore[arg-type]
    finally:
        await agent.close_all()


async def _serve_until_stopped(args: argparse.Namespace) -> int | None:
    """Serve until the editor goes away, or SIGTERM / SIGHUP / SIGQUIT: then, as the app does, stop
    the turn and end every session (stored ``session_ended``); ``128 + N`` for signal N."""
    import signal

    from monkey.line.stop_signals import StopSignals

    task = asyncio.current_task()
    agents: list[object] = []

    def stop(sig: int) -> None:
        for agent in agents:  # the turns first: the SDK waits for the requests it is answering
            for session in list(getattr(agent, "sessions", {}).values()):
                session.cancel()
        if task is not None:
            task.cancel()

    stops = StopSignals(stop, signals=(signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT))
    stops.install()
    try:
        await _serve(args, agents)
    except asyncio.CancelledError:
        if stops.received is None:
            raise
    finally:
        stops.uninstall()
    return stops.exit_code


def run_acp_command(args: argparse.Namespace) -> int:
    """Run ``monkey acp`` until the editor closes stdin; the exit status."""
    try:
        import acp  # noqa: F401
    except ImportError:
        sys.stderr.write(
            f"monkey: monkey acp needs the Agent Client Protocol SDK: "
            f"pip install agent-client-protocol=={SDK_VERSION}\n"
        )
        return 1
    if args.script:  # a bad script is said once, at the start, not at every session/new
        from monkey.backends.base import BackendError
        from monkey.backends.scripted import load_script

        try:
            load_script(args.script)
        except BackendError as exc:
            sys.stderr.write(f"monkey: {exc.message}\n")
            return 2
    if sys.stdin.isatty():
        sys.stderr.write(
            "monkey acp: speaking the Agent Client Protocol on stdin/stdout; "
            "an editor starts this (see the README). Ctrl-D ends it.\n"
        )
    try:
        return asyncio.run(_serve_until_stopped(args)) or 0
    except KeyboardInterrupt:
        return 130
