"""After a call ran: what the ``PostToolUse`` hooks, the language servers and the instruction
files of the folders it touched add to its output. A mixin of
:class:`monkey.agent.calls.CallPipeline` (the attributes it uses are the pipeline's), kept apart so
the pipeline module stays about the path of one call.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from monkey.agent.hook_glue import post_tool_output
from monkey.events import DiagnosticsReported, Event, InstructionRef, InstructionsLoaded, ToolCallSpec
from monkey.tools.base import Edit

if TYPE_CHECKING:
    from collections.abc import Callable

    from monkey.extensions.hooks import Hooks
    from monkey.extensions.instructions import Instructions
    from monkey.lsp.diagnostics import Diagnostics

    Emit = Callable[[Event], None]

__all__ = ["AfterRun"]


class AfterRun:
    """The end of a call's path, for the pipeline: hooks, diagnostics, nested instructions."""

    if TYPE_CHECKING:  # what the pipeline provides
        session_id: str
        workspace: Path
        hooks: Hooks | None
        instructions: Instructions | None
        diagnostics: Diagnostics | None

    async def post_hooks(self, call: ToolCallSpec, ok: bool, output: str, emit: Emit) -> str:
        """``output`` with what ``PostToolUse`` (or ``PostToolUseFailure``) hooks tell the model."""
        return await post_tool_output(self.hooks, self.session_id, self.workspace, call, ok, output, emit)

    async def diagnose(self, call: ToolCallSpec, edits: list[Edit], output: str, emit: Emit) -> str:
        """``output`` with the errors and warnings the files' language servers newly report after the
        change (:mod:`monkey.lsp.diagnostics`; bounded: a server too slow is skipped with a note)."""
        if self.diagnostics is None or call.name not in ("file_write", "file_edit"):
            return output
        from monkey.lsp.diagnostics import render

        for edit in edits:
            found = await self.diagnostics.check(edit.rel, edit.before, edit.after)
            if found is None or not (found.diagnostics or found.note):
                continue
            emit(
                DiagnosticsReported(
                    session_id=self.session_id,
                    call_id=call.id,
                    path=edit.rel,
                    server=found.server,
                    diagnostics=found.diagnostics,
                    note=found.note,
                )
            )
            if text := render(edit.rel, found):
                output += "\n\n" + text
        return output

    def nested_instructions(self, call: ToolCallSpec, args: object, output: str, emit: Emit) -> str:
        """``output`` with the instruction files of the folders below the workspace that this
        call touched for the first time (see :meth:`Instructions.below`)."""
        instructions = self.instructions
        path = getattr(args, "path", None)
        if instructions is None or not isinstance(path, str) or not path:
            return output
        found = instructions.below(self.workspace, path)
        if not found:
            return output
        emit(
            InstructionsLoaded(
                session_id=self.session_id,
                call_id=call.id,
                files=[InstructionRef(path=f.shown, sha256=f.sha256, bytes=f.size) for f, _ in found],
            )
        )
        blocks = "".join(
            f"\n\n<instructions from {f.shown}; follow them for files in its folder>\n{text.strip()}\n</instructions>"
            for f, text in found
        )
        return output + blocks
