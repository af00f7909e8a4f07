"""``shell_execute``: run a command line in the workspace, safely by default.

A plain line (a program and its arguments) runs as an argument vector, with no shell at
all. A line that uses shell syntax runs through ``/bin/sh -c`` only when a person approved
that exact line. Either way the child runs in the workspace root with a scrubbed
environment, no standard input, its own process group, a timeout and an output cap; on a
timeout, or when the call is cancelled, the whole process group is stopped (SIGTERM, a
grace period, SIGKILL), grandchildren included, even those that left the group; the child
dies with monkey (:func:`monkey.process.spawn`). The model's commands run inside the
sandbox of :mod:`monkey.tools.sandbox` (``ShellSettings.sandbox``), approved by a person or
not; only a line the person typed (``!command``), or a rerun a person approved after the
sandbox blocked the command (:class:`~monkey.tools.errors.SandboxBlocked`), runs outside.
What the sandbox refused is explained to the model (:mod:`monkey.tools.sandbox_notes`).

:func:`needs_shell` and :func:`split_command` live in :mod:`monkey.tools.command_line`
(re-exported here); the approval code uses them too, so what a person is shown and what
runs are decided by the same functions. :func:`scrub_env` lives in :mod:`monkey.process`
(re-exported here), next to the rest of what children get.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import msgspec

from monkey.process import Finished, run_supervised, scrub_env, spawn
from monkey.tools.base import Tool, ToolContext, ToolError, ToolOutcome
from monkey.tools.errors import SandboxBlocked
from monkey.tools.child_env import for_child
from monkey.tools.command_line import needs_shell, read_line, split_command
from monkey.tools.sandbox_notes import explain

if TYPE_CHECKING:
    from monkey.tools.sandbox import Prepared

__all__ = ["ShellExecute", "needs_shell", "split_command", "scrub_env"]

_BUILTINS = frozenset(
    {"cd", "export", "source", ".", "alias", "unset", "set", "pushd", "popd", "exit", "ulimit", "umask"}
)

_BWRAP_EXEC = re.compile(r"bwrap: execvp (.*?): (.*)\n?\Z")
"""bwrap's own message when the program it should run cannot be started."""


class ShellArgs(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Arguments of shell_execute."""

    command: Annotated[str, msgspec.Meta(description="The command line, e.g. `pytest -q tests/test_app.py`.")]
    timeout: Annotated[
        Annotated[float, msgspec.Meta(gt=0)] | None,
        msgspec.Meta(description="Seconds before the command is stopped; a default applies when omitted."),
    ] = None
    background: Annotated[
        bool,
        msgspec.Meta(
            description="Start the command and return at once with a process id (a dev server, a "
            "watcher, a long test run); read it with process_output, stop it with "
            "process_stop. No timeout applies."
        ),
    ] = False


class ShellExecute(Tool[ShellArgs]):
    """Run a command in the workspace root."""

    name = "shell_execute"
    Args = ShellArgs
    dangerous = True
    read_only = False

    def touched_paths(self, args: ShellArgs, ctx: ToolContext) -> list[str] | None:
        """Unknown: a command may change anything in the workspace."""
        return None

    def check(self, args: ShellArgs, ctx: ToolContext) -> None:
        """A builtin, or shell syntax nobody approved, is refused before a checkpoint is taken."""
        self.argv(args, ctx)

    def argv(self, args: ShellArgs, ctx: ToolContext) -> list[str]:
        """The argument vector the call would run; raises ToolError when it may not run.

        It comes from the line the permission engine decided on (``ctx.line``, read once by
        :func:`~monkey.tools.command_line.read_line`), never from reading the command again.
        """
        line = ctx.line if ctx.line is not None and ctx.line.text == args.command else read_line(args.command)
        if line.construct is None:
            if line.argv is None:
                raise ToolError(line.error)
            argv = list(line.argv)
            if argv[0] in _BUILTINS:
                raise ToolError(
                    f"{argv[0]} is a shell builtin and does nothing on its own: every command runs "
                    "in a new process in the workspace root. Pass paths as arguments instead "
                    "(e.g. `git -C sub status`, `pytest sub/tests`)"
                )
            return argv
        if not ctx.shell_line_approved:
            raise ToolError(
                f"this command line uses shell syntax: {line.construct}. Shell syntax runs only when a "
                "person has approved this exact line, which did not happen for this call. Run plain "
                "commands one at a time instead (a program and its arguments, no pipes, "
                "redirections, variables, globs or &&), or ask the user to approve the line"
            )
        return ["/bin/sh", "-c", line.text]

    async def run(self, args: ShellArgs, ctx: ToolContext) -> ToolOutcome:
        """Run the command; a non-zero exit, a timeout or a missing program raise ToolError."""
        argv = self.argv(args, ctx)
        settings = ctx.shell
        timeout = min(args.timeout if args.timeout is not None else settings.timeout, settings.max_timeout)
        root = ctx.workspace.resolve()
        if not root.is_dir():
            raise ToolError(f"the workspace {root} is not a directory; nothing can run in it")
        env = for_child(scrub_env(os.environ), root)  # no editor, pager or repository-chosen program waits or runs
        env["PWD"] = str(root)
        sandbox = settings.sandbox if ctx.sandboxed else None
        if args.background:
            return await self._background(argv, root, env, args, ctx)
        prepared = sandbox.prepare(argv, root, env) if sandbox is not None else None
        try:
            done = await self._spawn(argv, root, env, prepared, timeout, ctx)
        finally:
            if prepared is not None:
                prepared.cleanup()
        output = done.output
        if output and not output.endswith("\n"):
            output += "\n"
        note = ""
        if sandbox is not None and not done.timed_out:
            note = explain(output, root, kind=sandbox.kind, network=sandbox.network, home=sandbox.home)
        if done.timed_out:
            raise ToolError(f"{output}[timed out after {timeout:g} s; the command's processes were stopped]")
        code = done.returncode
        if code is not None and code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            raise ToolError(f"{output}[killed by {name}]")
        if code != 0:
            if note:  # the sandbox refused it something: the pipeline may ask to run it outside
                said = "; ".join(line.removeprefix("[sandbox: ").removesuffix("]") for line in note.splitlines())
                raise SandboxBlocked(f"{output}{note}[exit code {code}]", said)
            raise ToolError(f"{output}{note}[exit code {code}]")
        return ToolOutcome(output=f"{output}{note}[exit code 0]")

    async def _background(
        self, argv: list[str], root: Path, env: dict[str, str], args: ShellArgs, ctx: ToolContext
    ) -> ToolOutcome:
        """Start ``argv`` as a background process of the agent's table (see :mod:`monkey.tools.processes`)."""
        table = ctx.processes
        if table is None:
            raise ToolError("background commands cannot run here (no session keeps them); run it in the foreground")
        table.room()
        sandbox = ctx.shell.sandbox if ctx.sandboxed else None
        prepared = sandbox.prepare(argv, root, env) if sandbox is not None else None
        try:
            proc = await self._start(argv, root, env, prepared)
        except BaseException:
            if prepared is not None:
                prepared.cleanup()
            raise
        entry = table.add(
            proc,
            command=args.command,
            call_id=ctx.call_id,
            session_id=ctx.session_id,
            cleanup=prepared.cleanup if prepared is not None else (lambda: None),
        )
        return ToolOutcome(
            output=f"started in the background as process {entry.id}; read its output with "
            f'process_output {{"id": "{entry.id}"}}, stop it with process_stop',
            process=entry.id,
        )

    async def _start(
        self, argv: list[str], root: Path, env: dict[str, str], prepared: Prepared | None
    ) -> asyncio.subprocess.Process:
        """Spawn ``argv`` (inside the sandbox when ``prepared``) the way every command starts."""
        try:
            return await spawn(
                prepared.argv if prepared else argv,
                cwd=root,
                env=prepared.env if prepared else env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                before_exec=prepared.preexec_fn if prepared else None,
            )
        except FileNotFoundError:
            raise ToolError(f"command not found: {argv[0]}") from None
        except PermissionError:
            raise ToolError(f"permission denied: {argv[0]} cannot be run") from None
        except OSError as exc:
            raise ToolError(f"cannot run {argv[0]}: {exc.strerror or exc}") from None
        except subprocess.SubprocessError as exc:  # the Landlock sandbox could not be applied in the child
            raise ToolError(f"cannot run {argv[0]} in the sandbox: {exc}") from None

    async def _spawn(
        self,
        argv: list[str],
        root: Path,
        env: dict[str, str],
        prepared: Prepared | None,
        timeout: float,
        ctx: ToolContext,
    ) -> Finished:
        """Start ``argv`` (inside the sandbox when ``prepared``) and supervise it to its end."""
        settings = ctx.shell
        proc = await self._start(argv, root, env, prepared)
        done = await run_supervised(
            proc, timeout=timeout, grace=settings.kill_grace, limit=settings.output_limit, emit=ctx.emit_output
        )
        if prepared is not None and done.returncode == 1 and argv[0] and not done.timed_out:
            # bwrap itself says when the program cannot be started: the same errors as without it
            failed = _BWRAP_EXEC.match(done.output)
            if failed is not None and failed.group(1) == argv[0]:
                if "No such file" in failed.group(2):
                    raise ToolError(f"command not found: {argv[0]}")
                raise ToolError(f"cannot run {argv[0]}: {failed.group(2)}")
        return done
