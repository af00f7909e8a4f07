"""What the app shows before its agent exists, and how it builds the agent after the first frame."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from monkey.permissions.policy import ApprovalPolicy
    from monkey.permissions.requests import Approver
    from monkey.agent.loop import Agent
    from monkey.session.switch import BackendSwitcher
    from monkey.backends.base import Backend

__all__ = ["AgentSetup"]


@runtime_checkable
class AgentSetup(Protocol):
    """What the app shows before its agent exists, and how to build the agent.

    :class:`monkey.session.setup.Setup` is one: every usage error was found before the app
    started; building (the loop, the tools, the checkpoint guard and its crash repair)
    happens just after the first frame.
    """

    workspace: Path
    backend: Backend
    approver: Approver | None
    policy: ApprovalPolicy
    max_iterations: int
    switcher: BackendSwitcher

    def build(self) -> tuple[Agent, list[str]]:
        """The agent, and what building found to show (the sandbox's line, instruction files and
        skills left out, changes repaired after a crash ...)."""
        ...

    def watch_notice(self) -> str:
        """What to tell once when undo cannot tell a person's edits from a command's ("" when it can)."""
        ...
