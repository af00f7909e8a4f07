"""The ``codex`` backend: OpenAI's Codex CLI (``codex exec --json``) runs the turn.

Each model call runs ``codex exec --json`` with the prompt on stdin (``-``), in the
workspace, with a scrubbed environment (only what monkey's config sets for this backend
is passed on) and ``--sandbox workspace-write`` unless configured otherwise. The thread id
from ``thread.started`` is kept and the next call runs ``codex exec resume ID``. Usage in
``turn.completed`` is cumulative over the thread; each call reports its own share.
"""

from __future__ import annotations

from typing import Any

from monkey.backends.codex.parser import CodexStreamParser
from monkey.backends.external import ExternalAgentBackend

__all__ = ["CodexBackend", "SUPPORTED"]

SUPPORTED = ((0, 44, 0), (1, 0, 0))
"""Codex CLI versions whose ``exec --json`` events this parser reads: [from, below)."""


class CodexBackend(ExternalAgentBackend):
    """Drives the Codex CLI as a subprocess, one run per turn."""

    name = "codex"
    label = "Codex"
    version_range = SUPPORTED

    def __init__(self, *, sandbox: str = "workspace-write", **kw: Any) -> None:
        kw.setdefault("executable", "codex")
        super().__init__(**kw)
        self.sandbox = sandbox
        self.usage = (0, 0, 0)

    def argv(self, prompt: str) -> list[str]:
        args = [self.executable, "exec", "--json", "--skip-git-repo-check", "-C", str(self.workspace)]
        if self.sandbox:
            args += ["--sandbox", self.sandbox]
        if self._model_flag:
            args += ["--model", self._model_flag]
        args += self.extra_args
        if self.agent_session_id:
            args += ["resume", self.agent_session_id]
        return args + ["-"]

    def parser(self) -> CodexStreamParser:
        return CodexStreamParser(previous_usage=self.usage if self.agent_session_id else (0, 0, 0))

    def finished(self, parser: Any) -> None:
        if parser.thread_id:
            self.agent_session_id = parser.thread_id
        self.usage = parser.usage
