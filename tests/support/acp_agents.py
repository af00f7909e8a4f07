"""What the ``acp:NAME`` backend's tests share: the fake ACP agent as an executable, the backend
built on it, a turn run on a real agent (engine, approver, policy), and what the fake logged."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from monkey.agent.loop import Agent
from monkey.events import Event

if TYPE_CHECKING:  # the backend imports the acp SDK (seconds): when a test builds one, not when tests are collected
    from monkey.backends.acp_client.backend import AcpBackend

EXTERNAL = Path(__file__).resolve().parents[1] / "external"

__all__ = ["acp_backend", "fake_acp_exe", "got", "run_turns"]


def fake_acp_exe(bindir: Path, name: str = "fake-acp") -> Path:
    """An executable running tests/external/fake_acp_agent.py with this Python."""
    bindir.mkdir(parents=True, exist_ok=True)
    exe = bindir / name
    exe.write_text(
        f"#!{sys.executable}\nimport runpy\n"
        f"runpy.run_path({str(EXTERNAL / 'fake_acp_agent.py')!r}, run_name='__main__')\n"
    )
    exe.chmod(0o755)
    return exe


def acp_backend(
    exe: Path,
    workspace: Path,
    log: Path,
    *,
    mode: str = "",
    auth: str = "",
    missing_file: str = "not_found",
    idle_timeout: float = 60.0,
    max_line: int = 1 << 20,
    **env: str,
) -> AcpBackend:
    from monkey.backends.acp_client.agents import AgentEntry
    from monkey.backends.acp_client.backend import AcpBackend

    entry = AgentEntry(
        "fake",
        str(exe),
        env={"FAKE_LOG": str(log), **env},
        mode=mode,
        auth_method=auth,
        missing_file=missing_file,
        label="Fake agent",
    )
    return AcpBackend(
        entry,
        str(exe),
        workspace=workspace,
        base_env={"PATH": os.environ["PATH"]},
        idle_timeout=idle_timeout,
        grace=1.0,
        max_line_bytes=max_line,
    )


def run_turns(agent: Agent, *prompts: str, within: float = 60) -> list[list[Event]]:
    """Run each prompt as a turn of ``agent`` (one event loop), then close its backend; each turn's events."""

    async def drive() -> list[list[Event]]:
        out: list[list[Event]] = []
        try:
            for text in prompts:
                out.append([e async for e in agent.run(text)])
        finally:
            await agent.backend.aclose()
        return out

    return asyncio.run(asyncio.wait_for(drive(), within))


def got(log: Path) -> list[dict]:
    """Every message the fake agent received from monkey, in order."""
    if not log.exists():
        return []
    return [json.loads(line)["got"] for line in log.read_text().splitlines() if line.startswith('{"got"')]
