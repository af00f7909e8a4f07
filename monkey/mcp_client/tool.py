"""An MCP server's tool as one of the loop's tools, so rules, modes, grants, the dialog and
checkpoints apply to it as to any other.

Every call asks (it is ``dangerous``) unless the server is one the person marked trusted and
the tool says it only reads (``readOnlyHint`` without ``destructiveHint``) and its definition
is the one approved before. A tool that is not read-only is checkpointed as a whole-tree
change (``touched_paths`` is None, like ``shell_execute``), so ``monkey undo`` covers what it
wrote in the workspace. A tool whose definition changed since it was approved needs a
person's approval of the call (:meth:`McpTool.needs_person`), whatever the rules say; the
approval shows the difference, and until then the model is offered the definition as it was
approved (a server cannot reach the model with a new description or schema before a person
saw it). So does a tool whose server changed its set of tools since it was approved
(``reconfirm``). The call that runs makes the definition the approved one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from monkey.messages import ToolSpec
from monkey.mcp_client.results import cap_output, cuts_of, render_result
from monkey.tools.base import Tool, ToolContext, ToolError, ToolOutcome

if TYPE_CHECKING:
    from monkey.mcp_client.pins import Pin, PinState
    from monkey.mcp_client.server import McpServer, ToolDef

__all__ = ["McpTool", "Keeper"]


class Keeper(Protocol):
    """What a tool needs of the manager (:class:`monkey.mcp_client.manager.McpManager`)."""

    result_limit: int

    def accept(self, tool: McpTool) -> None:
        """The tool's definition becomes the approved one."""
        ...

    def result_file(self, call_id: str) -> Path:
        """Where the whole of a cut result is saved."""
        ...


class McpTool(Tool[Any]):
    """One tool of one MCP server, under its model name ``mcp__server__tool``."""

    def __init__(
        self,
        manager: Keeper,
        server: McpServer,
        definition: ToolDef,
        model_name: str,
        state: PinState,
        diff: str = "",
        approved: Pin | None = None,
    ) -> None:
        self.name = model_name  # type: ignore[misc]
        self.manager = manager
        self.server = server
        self.definition = definition
        self.state = state
        """``pinned``: as approved before; ``new``: never approved; ``changed``: differs from the approved one;
        ``reconfirm``: as approved, but the server's set of tools changed since."""
        self.diff = diff
        """``changed``: the difference; ``reconfirm``: what changed in the server's set."""
        self.approved = approved

    @property
    def trusted_read_only(self) -> bool:
        """The person trusts the server, and the tool says it only reads."""
        return self.server.config.trusted and self.definition.read_only

    @property
    def dangerous(self) -> bool:  # type: ignore[override]
        return not (self.trusted_read_only and self.state == "pinned")

    @property
    def read_only(self) -> bool:  # type: ignore[override]
        return self.trusted_read_only

    @property
    def description(self) -> str:
        return self.definition.description or f"{self.definition.name} (MCP server {self.server.name})"

    def spec(self) -> ToolSpec:
        """What the model is offered: a changed tool as it was approved, until a person approves the new one."""
        if self.state == "changed" and self.approved is not None:
            schema = self.approved.schema if isinstance(self.approved.schema, dict) else {"type": "object"}
            return ToolSpec(
                name=self.name,
                parameters=schema,
                description=self.approved.description or f"{self.definition.name} (MCP server {self.server.name})",
            )
        return ToolSpec(name=self.name, description=self.description, parameters=self.definition.schema)

    def parse(self, arguments: dict[str, Any]) -> Any:
        if not isinstance(arguments, dict):
            raise ToolError(f"invalid arguments for {self.name}: expected an object")
        return arguments

    def touched_paths(self, args: Any, ctx: ToolContext) -> list[str] | None:
        """Read-only: nothing; otherwise unknown, so the whole tree is checkpointed."""
        return [] if self.trusted_read_only else None

    def needs_person(self, args: Any) -> str | None:
        """Why only a person's approval of this call can let it run (a changed definition)."""
        if self.state == "changed":
            return f"the definition of {self.name} changed since it was approved"
        if self.state == "reconfirm":
            return (
                f"the MCP server {self.server.name} changed its tools since {self.name} was approved"
                + (f" ({self.diff})" if self.diff else "")
                + "; confirm it again"
            )
        return None

    def preview(self, args: Any, ctx: ToolContext) -> str:
        config = self.server.config
        notes = self.definition.annotations
        kind = (
            "read-only (trusted server)"
            if self.trusted_read_only
            else "may change things" + ("" if config.trusted else " (annotations of untrusted servers do not count)")
        )
        lines = [
            f"MCP server {config.name} ({config.origin}: {config.describe()})",
            f"tool {self.definition.name}: {kind}",
        ]
        if self.state == "new":
            lines.append("a new tool: its first call")
        if notes:
            lines.append("annotations: " + ", ".join(f"{k}={v}" for k, v in sorted(notes.items())))
        lines += ["", self.description, "", "arguments:", json.dumps(args, indent=2, ensure_ascii=False)]
        if self.state == "changed":
            lines += ["", "the definition CHANGED since it was approved:", self.diff or "(no visible difference)"]
        if self.state == "reconfirm":
            lines += ["", f"the server's tools CHANGED since this one was approved: {self.diff or 'its set differs'}"]
        return "\n".join(lines)

    async def run(self, args: Any, ctx: ToolContext) -> ToolOutcome:
        if self.state != "pinned":  # the call was approved: so is this definition
            self.manager.accept(self)
        result = await self.server.call(self.definition.name, args)
        try:
            text, is_error, images = render_result(result)
        except Exception as exc:  # noqa: BLE001 - a result that does not fit the protocol
            raise ToolError(
                f"the MCP server {self.server.name} gave a malformed result for "
                f"{self.definition.name}: {type(exc).__name__}: {exc}"
            ) from None
        text = cap_output(
            text, self.manager.result_limit, self.manager.result_file(ctx.call_id or self.name), cuts_of(result)
        )
        if is_error:
            raise ToolError(text or f"{self.definition.name} failed (the server gave no message)")
        return ToolOutcome(output=text, images=images)
