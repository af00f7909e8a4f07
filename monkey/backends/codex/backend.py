"""The ``codex`` backend: OpenAI's Codex CLI (``codex app-server``) runs the turn.

Each model call runs ``codex app-server`` in the workspace, with a scrubbed environment
(only what monkey's config sets for this backend is passed on), and speaks JSON-RPC with it
on stdio (:mod:`monkey.backends.codex.rpc`): ``initialize``, ``thread/start`` (or
``thread/resume`` with the thread id of the earlier turn) with ``approvalPolicy:
"untrusted"`` and ``--sandbox`` as configured (``workspace-write``), then ``turn/start``
with the prompt. Codex asks before each command and file change; monkey answers with the
decision of its gate (:mod:`monkey.backends.gate`: its rules, mode, protected paths, the
person's dialog). Once ``turn/completed`` came, stdin is closed and the server exits.
"""

from __future__ import annotations

from typing import Any

from monkey.backends.base import BackendError
from monkey.backends.codex import rpc
from monkey.backends.codex.app_parser import INIT_REQUEST, THREAD_REQUEST, TURN_REQUEST, CodexAppParser
from monkey.backends.external import ExternalAgentBackend
from monkey.backends.gate import REFUSED_WITHOUT_GATE, GateAnswer, GateCall, ToolGate
from monkey.backends.supervise import AgentProcess
from monkey.event_base import ToolImage

__all__ = ["CodexBackend", "SANDBOXES", "SUPPORTED"]

SUPPORTED = ((0, 169, 0), (1, 0, 0))
"""Codex CLI versions whose ``app-server`` protocol this backend speaks: [from, below)."""
SANDBOXES = ("read-only", "workspace-write", "danger-full-access")
STOPPED = "the person stopped the turn"
CLIENT = {"name": "monkey", "title": "monkey", "version": "1"}


class CodexBackend(ExternalAgentBackend):
    """Drives the Codex CLI's app server as a subprocess, one run per turn."""

    name = "codex"
    label = "Codex"
    version_range = SUPPORTED
    interactive = True

    def __init__(self, *, sandbox: str = "workspace-write", **kw: Any) -> None:
        kw.setdefault("executable", "codex")
        super().__init__(**kw)
        if sandbox and sandbox not in SANDBOXES:
            raise BackendError(
                f"[codex] sandbox {sandbox!r} is not one of {', '.join(SANDBOXES)}", kind="invalid_request"
            )
        self.sandbox = sandbox
        self._prompt = ""
        self.answered: list[bytes] = []
        """Every line written to the app server after the opening requests, over all runs."""

    def argv(self, prompt: str) -> list[str]:
        return [self.executable, "app-server", *self.extra_args]

    def stdin(self, prompt: str, images: list[ToolImage] | None = None) -> bytes:
        self._prompt = prompt
        params: dict[str, Any] = {"cwd": str(self.workspace), "approvalPolicy": rpc.APPROVAL_POLICY}
        if self.sandbox:
            params["sandbox"] = self.sandbox
        if self._model_flag:
            params["model"] = self._model_flag
        if self.agent_session_id:
            method = "thread/resume"
            params["threadId"] = self.agent_session_id
            params["excludeTurns"] = True  # monkey needs no history (Codex deprecates sending it whole)
        else:
            method = "thread/start"
        return (
            rpc.message(INIT_REQUEST, "initialize", {"clientInfo": CLIENT})
            + rpc.notification("initialized")
            + rpc.message(THREAD_REQUEST, method, params)
        )

    def _send(self, proc: AgentProcess, line: bytes) -> None:
        self.answered.append(line)
        proc.send(line)

    async def converse(self, parser: Any, proc: AgentProcess, gate: ToolGate | None) -> None:
        """Start the turn once the thread is there; answer every request; end the input after the turn."""
        if parser.thread_id and not parser.turn_sent and not parser.finished:
            parser.turn_sent = True
            self._send(
                proc,
                rpc.message(
                    TURN_REQUEST,
                    "turn/start",
                    {"threadId": parser.thread_id, "input": [{"type": "text", "text": self._prompt}]},
                ),
            )
        requests = parser.requests
        while requests:
            req = requests.pop(0)
            rid = req["id"]
            method = req.get("method")
            params = req.get("params") if isinstance(req.get("params"), dict) else {}
            if method == rpc.COMMAND_APPROVAL:
                calls = [rpc.command_call(params, self.workspace)]
            elif method == rpc.FILE_APPROVAL:
                calls = rpc.file_calls(params, parser.items.get(str(params.get("itemId") or "")), self.workspace)
            else:
                self._send(proc, rpc.error_answer(rid, f"monkey does not answer {method!r} requests"))
                continue
            proc.waiting += 1
            try:
                answer = await self._decide(calls, gate)
            except BaseException:  # cancelled (or a bug): Codex still gets its answer, never silence
                self._send(proc, rpc.answer(rid, GateAnswer(False, STOPPED, stop=True)))
                for rest in requests:
                    if rest.get("method") in (rpc.COMMAND_APPROVAL, rpc.FILE_APPROVAL):
                        self._send(proc, rpc.answer(rest["id"], GateAnswer(False, STOPPED, stop=True)))
                    else:
                        self._send(proc, rpc.error_answer(rest["id"], STOPPED))
                requests.clear()
                raise
            finally:
                proc.waiting -= 1
            self._send(proc, rpc.answer(rid, answer))
        if parser.finished:
            proc.close_stdin()  # the turn is over (or refused): the server exits

    async def _decide(self, calls: list[GateCall], gate: ToolGate | None) -> GateAnswer:
        """Allowed only when the gate allows every path of the call (a patch may touch several)."""
        if gate is None:
            return GateAnswer(False, REFUSED_WITHOUT_GATE)
        answer = GateAnswer(False, "nothing to decide")
        for call in calls:
            answer = await gate.decide(call)
            if not answer.allow:
                return answer
        return answer

    def parser(self) -> CodexAppParser:
        return CodexAppParser()

    def finished(self, parser: Any) -> None:
        if parser.thread_id:
            self.agent_session_id = parser.thread_id
        if parser.model and self.model == "default":
            self.model = parser.model
