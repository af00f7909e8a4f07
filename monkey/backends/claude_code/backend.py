"""The ``claude-code`` backend: Claude Code (``claude -p``) runs the turn with its own tools.

Each model call runs ``claude -p --output-format stream-json --verbose
--include-partial-messages`` with the prompt on stdin, in the workspace, with the
environment scrubbed of credentials and endpoints (only what monkey's config sets for
this backend is passed on). The session id from ``init`` is kept and the next call adds
``--resume ID``. The permission mode defaults to ``bypassPermissions``, or to
``acceptEdits`` when monkey runs as root (the CLI refuses to bypass permissions as root).
"""

from __future__ import annotations

import os
from typing import Any

from monkey.backends.claude_code.parser import ClaudeStreamParser
from monkey.backends.external import ExternalAgentBackend

__all__ = ["ClaudeCodeBackend", "default_permission_mode", "SUPPORTED"]

SUPPORTED = ((1, 0, 60), (3, 0, 0))
"""Claude Code versions whose stream-json output this parser reads: [from, below)."""


def default_permission_mode() -> str:
    """A permission mode the CLI accepts for the user monkey runs as."""
    return "acceptEdits" if hasattr(os, "geteuid") and os.geteuid() == 0 else "bypassPermissions"


class ClaudeCodeBackend(ExternalAgentBackend):
    """Drives the Claude Code CLI as a subprocess, one run per turn."""

    name = "claude-code"
    label = "Claude Code"
    version_range = SUPPORTED

    def __init__(self, *, permission_mode: str = "", append_system_prompt: str = "", max_turns: int = 0,
                 mcp_config: str = "", allowed_tools: list[str] | None = None, **kw: Any) -> None:
        kw.setdefault("executable", "claude")
        super().__init__(**kw)
        self.permission_mode = permission_mode or default_permission_mode()
        self.append_system_prompt = append_system_prompt
        self.max_turns = max_turns
        self.mcp_config = mcp_config
        self.allowed_tools = list(allowed_tools or [])

    def argv(self, prompt: str) -> list[str]:
        args = [self.executable, "-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages",
                "--permission-mode", self.permission_mode]
        if self._model_flag:
            args += ["--model", self._model_flag]
        if self.agent_session_id:
            args += ["--resume", self.agent_session_id]
        if self.append_system_prompt:
            args += ["--append-system-prompt", self.append_system_prompt]
        if self.max_turns > 0:
            args += ["--max-turns", str(self.max_turns)]
        if self.mcp_config:
            args += ["--mcp-config", self.mcp_config]
        if self.allowed_tools:
            args += ["--allowedTools", ",".join(self.allowed_tools)]
        return args + self.extra_args

    def parser(self) -> ClaudeStreamParser:
        return ClaudeStreamParser()

    def finished(self, parser: Any) -> None:
        if parser.session_id:
            self.agent_session_id = parser.session_id
        if parser.model and self.model == "default":
            self.model = parser.model
