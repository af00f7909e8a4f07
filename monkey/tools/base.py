"""What a tool is: a typed argument model, a description beside it, and an async ``run``.

A tool's JSON schema comes from its argument struct, so what the model is told and what
is validated can never drift apart. A tool signals a failure the model should see by
raising :class:`ToolError`; the loop turns it into an error result the model can recover
from.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

import msgspec

from monkey.events import ToolImage
from monkey.messages import ToolSpec
from monkey.tools.command_line import ShellLine
from monkey.tools.errors import ToolError

if TYPE_CHECKING:
    from monkey.tools.processes import ProcessTable
    from monkey.tools.sandbox import Sandbox

__all__ = [
    "Edit",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolOutcome",
    "ShellSettings",
    "args_schema",
    "load_description",
]

A = TypeVar("A", bound=msgspec.Struct)


@dataclass(frozen=True)
class ShellSettings:
    """Limits of ``shell_execute``."""

    timeout: float = 10.0
    """Default seconds before the command's process group is killed."""
    max_timeout: float = 600.0
    """The largest timeout the model may ask for."""
    output_limit: int = 30_000
    """Characters of output kept and given back to the model."""
    kill_grace: float = 2.0
    """Seconds between SIGTERM and SIGKILL."""
    background_limit: int = 8
    """Background processes (``shell_execute`` with ``background``) that may run at once."""
    background_keep: int = 200_000
    """Characters of each background process's output kept (the latest)."""
    sandbox: Sandbox | None = None
    """The sandbox commands run in (:mod:`monkey.tools.sandbox`); None: none (the front ends
    probe for one, and without it the permission engine has a person approve every command)."""
    trusted_outside: bool = False
    """The commands monkey runs for the person (hooks, ``[workflow] verify``) run outside the sandbox:
    only the person's own ``[shell] trusted_commands = "outside"`` says so."""


@dataclass
class ToolContext:
    """What a running tool may use: the workspace, its limits, and a way to stream output."""

    workspace: Path
    """The resolved workspace root; every path must stay inside it."""
    call_id: str = ""
    shell: ShellSettings = field(default_factory=ShellSettings)
    emit_output: Callable[[str, str], None] = lambda stream, text: None
    """Called with (stream, text) as a tool produces output (shell stdout/stderr)."""
    shell_line_approved: bool = False
    """A person approved this exact shell line, so shell syntax may run through a shell."""
    sandboxed: bool = True
    """Run a command in :attr:`ShellSettings.sandbox`; False only for a line the person typed
    (``!command``) and a rerun a person approved after the sandbox blocked the command."""
    read_limit: int = 100_000
    """Characters of file content given back by one read."""
    read_denied: Callable[[str], bool] | None = None
    """Whether a deny rule forbids reading a workspace-relative file: searches skip those files
    (None: no rule forbids reading anything)."""
    emit: Callable[[Any], None] | None = None
    """Hands an event to the loop's stream (the ``task`` tool passes its sub-agent's events on)."""
    net_named: Callable[[str], bool] | None = None
    """Whether an allow rule names a host (``web_fetch(domain:localhost)``): only then may ``web_fetch``
    reach a private or loopback address there (None: no rule names any)."""
    line: ShellLine | None = None
    """The shell line the permission engine decided on (set by the call pipeline): ``shell_execute``
    runs its argv, or its text through a shell, and never reads the command again."""
    processes: ProcessTable | None = None
    """The agent's background processes (``shell_execute`` with ``background``, ``process_*``); None:
    nothing may run in the background here."""
    session_id: str = ""


@dataclass(frozen=True)
class Edit:
    """One file a call changed: its bytes before and after (None: absent), for what is checked after it."""

    rel: str
    before: bytes | None
    after: bytes | None


@dataclass
class ToolOutcome:
    """The result of a tool run: ``output`` goes to the model, the rest to people."""

    output: str
    diff: str = ""
    paths: list[str] = field(default_factory=list)
    stopped: str = ""
    """Why a person stopped the work this call did (a sub-agent's turn): the calling turn stops too."""
    images: list[ToolImage] = field(default_factory=list)
    """Images for the model besides ``output`` (an MCP tool's image blocks)."""
    process: str = ""
    """The background process the call started (``p1``): its checkpoint stays open while it runs."""
    edits: list[Edit] = field(default_factory=list)
    """The files the call wrote, before and after (the call pipeline asks their language server about them)."""


@cache
def load_description(package: str, name: str) -> str:
    """The description of a tool, kept in ``<name>.md`` beside its module."""
    return resources.files(package).joinpath(f"{name}.md").read_text(encoding="utf-8").strip()


def _inline_refs(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            return _inline_refs(copy.deepcopy(defs[ref.removeprefix("#/$defs/")]), defs)
        return {k: _inline_refs(v, defs) for k, v in node.items() if k != "$defs"}
    if isinstance(node, list):
        return [_inline_refs(v, defs) for v in node]
    return node


def args_schema(args_type: type[msgspec.Struct]) -> dict[str, Any]:
    """A self-contained JSON object schema for an argument struct (no ``$ref``)."""
    raw = msgspec.json.schema(args_type)
    schema = _inline_refs(raw, raw.get("$defs", {}))
    schema.pop("title", None)
    schema.pop("description", None)  # the struct's docstring; the tool's own description says it
    schema.setdefault("required", [])
    schema["additionalProperties"] = False
    return schema


class Tool(ABC, Generic[A]):
    """Base of every tool. Subclasses set the class attributes and implement :meth:`run`."""

    name: ClassVar[str]
    """The name the model calls the tool by; scripts and configs use it too."""
    Args: ClassVar[type[msgspec.Struct]]
    """The typed argument model."""
    dangerous: ClassVar[bool] = False
    """Whether a call needs approval."""
    read_only: ClassVar[bool] = True
    """Whether calls may run concurrently with other read-only calls."""

    @property
    def description(self) -> str:
        """What the model is told the tool does."""
        return load_description(type(self).__module__.rpartition(".")[0], self.name)

    def spec(self) -> ToolSpec:
        """The tool as a model sees it."""
        return ToolSpec(name=self.name, description=self.description, parameters=args_schema(self.Args))

    def parse(self, arguments: dict[str, Any]) -> A:
        """Validate raw arguments from the model into the argument struct."""
        try:
            return msgspec.convert(arguments, self.Args)  # type: ignore[return-value]
        except msgspec.ValidationError as exc:
            raise ToolError(f"invalid arguments for {self.name}: {exc}") from None

    def touched_paths(self, args: A, ctx: ToolContext) -> list[str] | None:
        """Workspace-relative paths a call will change, or None if it cannot say (shell)."""
        return []

    def check(self, args: A, ctx: ToolContext) -> None:
        """Raise :class:`ToolError` when the call cannot run at all (checked before anything is checkpointed)."""

    def needs_person(self, args: A) -> str | None:
        """Why only a person's approval of this exact call can let it run (an MCP tool whose
        definition changed), or None; no rule, grant or mode skips it."""
        return None

    def preview(self, args: A, ctx: ToolContext) -> str:
        """What a call would change, for an approval prompt (a diff); empty if nothing to show."""
        return ""

    @abstractmethod
    async def run(self, args: A, ctx: ToolContext) -> ToolOutcome:
        """Run the tool; raise :class:`ToolError` for failures the model should see."""
