"""The one error a tool raises for a failure the model should be told about."""

from __future__ import annotations

__all__ = ["SandboxBlocked", "ToolError"]


class ToolError(Exception):
    """A failure the model is told about (bad path, no match, timeout...)."""


class SandboxBlocked(ToolError):
    """A command that failed because the sandbox refused it something (a write outside the
    workspace, the network): ``blocked`` says what, in the words the model reads."""

    def __init__(self, message: str, blocked: str) -> None:
        super().__init__(message)
        self.blocked = blocked
