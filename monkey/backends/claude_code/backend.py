"""The ``claude-code`` backend: Claude Code (``claude -p``) runs the turn with its own tools.

Each model call runs ``claude -p --output-format stream-json --verbose
--include-partial-messages --input-format stream-json --permission-prompt-tool stdio
--permission-mode default --setting-sources ""`` in the workspace, with the environment
scrubbed of credentials and endpoints (only what monkey's config sets for this backend is
passed on). The prompt goes in as a stream-json user message; every permission question
the CLI asks (``can_use_tool``) is answered on stdin with the decision of monkey's gate
(:mod:`monkey.backends.gate`), and stdin is closed once the ``result`` came. No settings
file is loaded (``--setting-sources ""``), so allow rules and a default mode in the
person's or the project's Claude Code settings cannot let a call past monkey unasked.
The session id from ``init`` is kept and the next call adds ``--resume ID``.
"""

from __future__ import annotations

from typing import Any

from monkey.event_base import ToolImage

from monkey.backends.base import BackendError, Capabilities
from monkey.backends.claude_code.parser import ClaudeStreamParser
from monkey.backends.claude_code.tools import error_answer, gate_call, permission_answer, user_message
from monkey.backends.external import ExternalAgentBackend
from monkey.backends.gate import REFUSED_WITHOUT_GATE, GateAnswer, ToolGate
from monkey.backends.supervise import AgentProcess

__all__ = ["ClaudeCodeBackend", "PERMISSION_MODES", "SETTING_SOURCES", "SUPPORTED"]

SUPPORTED = ((1, 0, 60), (3, 0, 0))
"""Claude Code versions whose stream-json output this parser reads: [from, below)."""


PERMISSION_MODES = ("default", "plan")
"""The CLI's modes in which it asks monkey before each tool it has no permission for."""
SETTING_SOURCES = ""
"""No settings file (user, project, local): their allow rules would let calls past monkey unasked."""
STOPPED = "the person stopped the turn"


class ClaudeCodeBackend(ExternalAgentBackend):
    """Drives the Claude Code CLI as a subprocess, one run per turn."""

    capabilities = Capabilities(runs_own_tools=True, keeps_own_context=True, images=True)
    """Its stream-json input takes image blocks in the person's message."""

    name = "claude-code"
    label = "Claude Code"
    version_range = SUPPORTED
    interactive = True

    def __init__(
        self,
        *,
        permission_mode: str = "",
        append_system_prompt: str = "",
        max_turns: int = 0,
        mcp_config: str = "",
        allowed_tools: list[str] | None = None,
        **kw: Any,
    ) -> None:
        kw.setdefault("executable", "claude")
        super().__init__(**kw)
        if permission_mode and permission_mode not in PERMISSION_MODES:
            raise BackendError(
                f"[claude_code] permission_mode {permission_mode!r} would let Claude Code run tools "
                'without monkey\'s approval; use "default" or "plan" (monkey\'s own mode and '
                "[approvals] rules decide)",
                kind="invalid_request",
            )
        if allowed_tools:
            raise BackendError(
                "[claude_code] allowed_tools would let Claude Code run those tools without monkey's "
                "approval; remove it and allow them with rules in [approvals] allow "
                "(Bash is shell_execute, Write/Edit are file_write/file_edit)",
                kind="invalid_request",
            )
        self.permission_mode = permission_mode or "default"
        self.append_system_prompt = append_system_prompt
        self.max_turns = max_turns
        self.mcp_config = mcp_config
        self.answered: list[bytes] = []
        """Every answer written to the CLI's stdin, over all runs (what monkey told it)."""

    def argv(self, prompt: str) -> list[str]:
        args = [
            self.executable,
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-partial-messages",
            "--input-format",
            "stream-json",
            "--permission-prompt-tool",
            "stdio",
            "--permission-mode",
            self.permission_mode,
            "--setting-sources",
            SETTING_SOURCES,
        ]
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
        return args + self.extra_args

    def stdin(self, prompt: str, images: list[ToolImage] | None = None) -> bytes:
        return user_message(prompt, images or [])

    def _send(self, proc: AgentProcess, line: bytes) -> None:
        self.answered.append(line)
        proc.send(line)

    async def converse(self, parser: Any, proc: AgentProcess, gate: ToolGate | None) -> None:
        """Answer every ``control_request`` the CLI printed; end its input after the ``result``."""
        requests = parser.requests
        while requests:
            req = requests.pop(0)
            rid = str(req.get("request_id") or "")
            body = req["request"]
            if rid in parser.cancelled:
                continue
            if body.get("subtype") != "can_use_tool":
                self._send(proc, error_answer(rid, f"monkey does not answer {body.get('subtype')!r} requests"))
                continue
            call = gate_call(body, self.workspace)
            proc.waiting += 1
            try:
                answer = await gate.decide(call) if gate is not None else GateAnswer(False, REFUSED_WITHOUT_GATE)
            except BaseException:  # cancelled (or a bug): the CLI still gets its answer, never silence
                self._send(proc, permission_answer(rid, GateAnswer(False, STOPPED, stop=True), call.raw))
                for rest in requests:
                    rest_id = str(rest.get("request_id") or "")
                    if rest_id not in parser.cancelled:
                        self._send(proc, error_answer(rest_id, STOPPED))
                requests.clear()
                raise
            finally:
                proc.waiting -= 1
            self._send(proc, permission_answer(rid, answer, call.raw))
        if parser.result is not None:
            proc.close_stdin()  # the turn is over: the CLI exits

    def parser(self) -> ClaudeStreamParser:
        return ClaudeStreamParser()

    def finished(self, parser: Any) -> None:
        if parser.session_id:
            self.agent_session_id = parser.session_id
        if parser.model and self.model == "default":
            self.model = parser.model
