"""``monkey acp``: serve one editor over the Agent Client Protocol on stdin/stdout.

Each ``session/new`` or ``session/load`` builds an agent for the workspace the editor names,
the way ``monkey agent`` builds one from its flags and that workspace's config.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

__all__ = ["run_acp_command", "SDK_VERSION"]

SDK_VERSION = "0.12.1"
"""The version of ``agent-client-protocol`` monkey is written against (pinned in pyproject.toml)."""


def _builder(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from monkey.commands.agent import build_agent

    def build(workspace: Path, approver: Any, mcp_servers: dict | None = None) -> tuple[Any, Any, list[str]]:
        flags = argparse.Namespace(**{**vars(args), "cwd": str(workspace), "continue_": False, "resume": None,
                                      "compact_at": None, "editor_mcp_servers": mcp_servers or {}})
        setup = build_agent(flags, approver)
        return setup.agent, setup.switcher, setup.notices

    return build


async def _serve(args: argparse.Namespace) -> None:
    from acp import run_agent

    from monkey.acp.server import MonkeyAcpAgent

    agent = MonkeyAcpAgent(_builder(args))
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
