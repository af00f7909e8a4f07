"""What the tests of the external-agent backends (Claude Code, Codex) share: monkey's config for
a fake or real agent executable, a headless ``monkey agent --task`` run of one, what the fake
agent logged that monkey answered, and a turn cancelled while its approval waits for a person."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

from monkey.permissions.requests import ApprovalRequest, Decision
from monkey.agent.loop import Agent
from monkey.events import Event
from tests.support.cli import ROOT, Run, invoke, run_monkey

FIXTURES = ROOT / "tests" / "fixtures"
"""Recorded sessions of the real agents (``claude_code/``, ``codex/``) that the fakes replay."""

__all__ = ["FIXTURES", "Waits", "answers", "cancel_when_asked", "configure", "decisions", "prepend_config", "run_task", "sent"]


def configure(home: Path, section: str, exe: Path | str, *, allow: tuple[str, ...] | None = None,
              settings: dict[str, float] | None = None, **env: str) -> None:
    """monkey's config: the ``[section]`` backend runs ``exe`` with ``env`` added to its environment and
    ``settings`` (such as its timeouts); ``allow``, when given, is the ``[approvals]`` allow rules."""
    lines = ["[approvals]", f"allow = {json.dumps(list(allow))}"] if allow is not None else []
    lines += [f"[{section}]", f"executable = {json.dumps(str(exe))}"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in (settings or {}).items()]
    lines += ["[" + section + ".env]"] + [f"{k} = {json.dumps(v)}" for k, v in env.items()]
    (home / "config.toml").write_text("\n".join(lines) + "\n")


def prepend_config(home: Path, text: str) -> None:
    """Put ``text`` (tables such as ``[approvals]``) before what monkey's config already says."""
    (home / "config.toml").write_text(text + (home / "config.toml").read_text())


def run_task(home: Path, workspace: Path, backend: str, task: str, *extra: str, process: bool = False,
             timeout: float = 60) -> Run:
    """``monkey agent --backend BACKEND [EXTRA] --task TASK --output-format stream-json`` in ``workspace``,
    in this process (the agent it runs is a process all the same); ``process=True`` starts ``monkey``
    as a process of its own too (``timeout``: its limit)."""
    args = ["agent", "--backend", backend, *extra, "--task", task, "--output-format", "stream-json",
            "--cwd", str(workspace)]
    return run_monkey(args, home=home, timeout=timeout) if process else invoke(args, home=home)


def answers(log: Path) -> list[dict]:
    """What monkey wrote back on the fake ``claude``'s stdin (its control responses), in order."""
    return [json.loads(line)["answer"] for line in log.read_text().splitlines() if '"answer"' in line]


def sent(log: Path) -> list[dict]:
    """What monkey wrote to the fake Codex app server, in order."""
    return [json.loads(line)["rpc"] for line in log.read_text().splitlines() if line.startswith('{"rpc"')]


def decisions(log: Path) -> list[str]:
    """The decisions monkey sent the fake Codex app server, in order."""
    return [m["result"]["decision"] for m in sent(log) if "result" in m]


class Waits:
    """An approver that never answers (a person who has not decided yet)."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()

    async def decide(self, request: ApprovalRequest) -> Decision:
        self.asked.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


def cancel_when_asked(agent: Agent, approver: Waits, task: str, *, ask_within: float = 60, within: float = 120,
                      before_cancel: Callable[[], None] | None = None) -> list[Event]:
    """Run ``task`` on ``agent`` and cancel the turn once ``approver`` is asked (after calling
    ``before_cancel``); the turn's events. Fails if no question comes within ``ask_within`` seconds
    or the turn does not end within ``within``."""

    async def drive() -> list[Event]:
        events: list[Event] = []

        async def cancel() -> None:
            await asyncio.wait_for(approver.asked.wait(), ask_within)
            if before_cancel is not None:
                before_cancel()
            agent.cancel()

        canceller = asyncio.create_task(cancel())
        async for event in agent.run(task):
            events.append(event)
        await canceller
        return events

    return asyncio.run(asyncio.wait_for(drive(), within))
