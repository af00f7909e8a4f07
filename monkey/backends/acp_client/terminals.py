"""``terminal/*``: the commands an ACP agent asks monkey to run, through monkey's one call pipeline.

``terminal/create`` becomes a ``shell_execute`` call run by the turn's gate
(:meth:`~monkey.backends.gate.ToolGate.run`): the permission engine decides it (unless an allowed
``session/request_permission`` of this turn asked for exactly this command line), it runs in the
sandbox with monkey's scrubbed environment, its own process group, timeout and output cap, inside a
checkpoint with a journal entry (``monkey undo`` reverts what it changed). The request is answered
once the command started (or with an error when it was refused, so the agent's model reads why).

The command line is the command and its arguments quoted as one line; variables the agent sets are
put before it as ``env NAME=VALUE`` (the engine sees through that wrapper); a working directory
other than the workspace root is refused (monkey's commands run in the root).

``terminal/output`` answers what the command printed so far (the last ``outputByteLimit`` bytes,
at a character boundary; credentials monkey knows are blanked), ``terminal/wait_for_exit`` its exit
status, ``terminal/kill`` stops its process group (the terminal stays readable), ``terminal/release``
stops it and forgets it. A turn that ends stops the commands still running; closing the agent
stops every one (none outlives monkey).
"""

from __future__ import annotations

import asyncio
import itertools
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acp import RequestError
from acp.schema import (
    CreateTerminalResponse,
    KillTerminalResponse,
    ReleaseTerminalResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
)

from monkey.backends.gate import REFUSED_WITHOUT_GATE, GateCall, GateRan, ToolGate
from monkey.process import redact, secret_values

__all__ = ["Terminal", "Terminals", "command_line"]

_ids = itertools.count(1)


def command_line(command: str, args: list[str] | None, env: list[Any] | None) -> str:
    """The one shell line monkey decides and runs for a terminal's command, arguments and variables."""
    words = [command, *(args or [])]
    line = command if not args else shlex.join(words)
    if env:
        line = shlex.join(["env", *(f"{v.name}={v.value}" for v in env)]) + " " + line
    return line


class Terminal:
    """One command the agent asked for: its output so far and, once it ended, its exit status."""

    def __init__(self, terminal_id: str, line: str, limit: int) -> None:
        self.id = terminal_id
        self.line = line
        self.limit = limit
        self.text = ""
        self.truncated = False
        self.started = asyncio.Event()
        self.task: asyncio.Task[GateRan] | None = None
        self.exit: TerminalExitStatus | None = None

    def add(self, text: str) -> None:
        self.text += text
        data = self.text.encode("utf-8", "replace")
        if len(data) > self.limit:  # cut from the beginning, at a character boundary
            self.text = data[-self.limit :].decode("utf-8", "ignore")
            self.truncated = True


class Terminals:
    """The terminals of one agent process (see the module's docstring)."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace
        self.open: dict[str, Terminal] = {}
        self.tasks: set[asyncio.Task[GateRan]] = set()
        """Every command's run still going (deciding or running)."""
        self._secrets = secret_values()

    def _get(self, terminal_id: str) -> Terminal:
        term = self.open.get(terminal_id)
        if term is None:
            raise RequestError.invalid_params({"terminalId": terminal_id, "reason": "no such terminal"})
        return term

    async def create(
        self,
        gate: ToolGate | None,
        *,
        command: str,
        args: list[str] | None,
        env: list[Any] | None,
        cwd: str | None,
        output_byte_limit: int | None,
        covered: dict[str, str],
        stopped: Callable[[], None],
    ) -> CreateTerminalResponse:
        """Decide and start the command (``stopped``: called when a person stops the turn instead)."""
        if gate is None:
            raise RequestError(-32000, REFUSED_WITHOUT_GATE)
        if cwd and Path(cwd).resolve() != self.workspace:
            raise RequestError(
                -32000,
                f"monkey refused the command: it runs commands in the workspace root "
                f"{self.workspace}, not in {cwd}; pass paths as arguments instead",
            )
        line = command_line(command, args, env)
        limit = min(output_byte_limit or gate.output_limit, gate.output_limit)
        term = Terminal(f"term-{next(_ids)}", line, limit)
        call = GateCall(
            call_id=f"acp-{term.id}",
            agent_tool="terminal/create",
            tool="shell_execute",
            arguments={"command": line},
            raw={"command": command, "args": list(args or [])},
            reason=f"run {line}",
        )
        task = asyncio.create_task(
            gate.run(call, covered=covered.pop(line, ""), output=term.add, started=term.started.set)
        )
        term.task = task
        self.tasks.add(task)
        task.add_done_callback(lambda t: self._ended(term, t))
        started = asyncio.ensure_future(term.started.wait())
        try:
            await asyncio.wait([started, task], return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
            started.cancel()
        if not term.started.is_set():  # refused (or failed) before it ran
            ran = task.result() if not task.cancelled() and task.exception() is None else None
            if ran is not None and ran.stop:
                stopped()
            said = ran.output if ran is not None else "the command did not start"
            raise RequestError(-32000, redact(said, self._secrets))
        self.open[term.id] = term
        return CreateTerminalResponse(terminal_id=term.id)

    def _ended(self, term: Terminal, task: asyncio.Task[GateRan]) -> None:
        self.tasks.discard(task)
        if task.cancelled() or task.exception() is not None:
            term.exit = TerminalExitStatus(signal="SIGTERM")
            return
        ran = task.result()
        if ran.exit_code is None and ran.signal is None and not term.text:
            term.add(ran.output)  # it failed before printing anything (a program not found): say why
        term.exit = (
            TerminalExitStatus(exit_code=ran.exit_code, signal=ran.signal)
            if (ran.exit_code is not None or ran.signal is not None)
            else TerminalExitStatus(exit_code=1)
        )

    def output(self, terminal_id: str) -> TerminalOutputResponse:
        term = self._get(terminal_id)
        return TerminalOutputResponse(
            output=redact(term.text, self._secrets), truncated=term.truncated, exit_status=term.exit
        )

    async def wait(self, terminal_id: str) -> WaitForTerminalExitResponse:
        term = self._get(terminal_id)
        if term.task is not None:
            await asyncio.wait([term.task])
        assert term.exit is not None
        return WaitForTerminalExitResponse(exit_code=term.exit.exit_code, signal=term.exit.signal)

    async def kill(self, terminal_id: str) -> KillTerminalResponse:
        await self._stop(self._get(terminal_id))
        return KillTerminalResponse()

    async def release(self, terminal_id: str) -> ReleaseTerminalResponse:
        term = self._get(terminal_id)
        await self._stop(term)
        self.open.pop(terminal_id, None)
        return ReleaseTerminalResponse()

    async def _stop(self, term: Terminal) -> None:
        task = term.task
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait([task])  # the pipeline stopped the command's process group

    async def stop_all(self) -> None:
        """Stop every command still running (the turn ended, or the agent is closed)."""
        tasks = list(self.tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)
