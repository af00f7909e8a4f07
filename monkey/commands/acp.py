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


async def _serve(args: argparse.Namespace) -> None:
    from acp import run_agent

    from monkey.acp.server import MonkeyAcpAgent
    from monkey.commands.flags import session_request
    from monkey.line.terminal import terminal_questions

    agent = MonkeyAcpAgent(session_request(args), terminal_questions())
    try:
        await run_agent(agent)
    finally:
        await agent.close_all()


def run_acp_command(args: argparse.Namespace) -> int:
    """Run ``monkey acp`` until the editor closes stdin; the exit status."""
    try:
        import acp  # noqa: F401
    except ImportError:
        sys.stderr.write(f"monkey: monkey acp needs the Agent Client Protocol SDK: "
                         f"pip install agent-client-protocol=={SDK_VERSION}\n")
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
        sys.stderr.write("monkey acp: speaking the Agent Client Protocol on stdin/stdout; "
                         "an editor starts this (see the README). Ctrl-D ends it.\n")
    try:
        asyncio.run(_serve(args))
    except KeyboardInterrupt:
        return 130
    return 0
