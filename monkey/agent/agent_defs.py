"""Sub-agent definitions: Markdown files with YAML front matter, the body being the system prompt.

Read, later overriding earlier, from: the built-in agents beside this module (``general``,
with all of its parent's tools, and ``explore``, read-only), ``agents/*.md`` in the monkey
home, and, in a trusted folder only, the project's ``.claude/agents/*.md`` (Claude Code's, so
existing definitions work) and ``.monkey/agents/*.md``.

Front matter keys: ``name`` and ``description`` (required), ``tools`` (an allowlist of tool
names, globs allowed, a list or a comma-separated line; Claude Code's names are translated;
all of the parent's when omitted), ``disallowed_tools``, ``model`` (``inherit``: the parent's),
``backend``, ``mode`` (a permission mode; never more permissive than the parent's),
``max_turns``, ``max_budget_usd``, ``timeout`` (seconds), ``skills``, ``mcp_servers``, ``isolation``
(``worktree``: the child works in a git worktree of its own, :mod:`monkey.agent.isolation`). Claude
Code's spellings (``disallowedTools``, ``permissionMode``, ``maxTurns``, ``mcpServers``) are
read too and ``color`` is ignored; any other key is a warning, not an error. A file that
cannot be used is left out with a warning saying why.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from monkey.agent.budget import Limits, parse_limits
from monkey.extensions.skills import CLAUDE_TOOLS

__all__ = ["AgentDef", "AgentDefs", "AgentDefError", "discover_agents", "parse_agent", "PROJECT_DIRS"]

Source = Literal["built-in", "user", "project"]

PROJECT_DIRS = (".claude/agents", ".monkey/agents")
"""Where a trusted project keeps its agents (later overrides earlier)."""
MAX_BYTES = 256 * 1024
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
_KNOWN = {
    "name",
    "description",
    "tools",
    "disallowed_tools",
    "model",
    "backend",
    "mode",
    "max_turns",
    "max_budget_usd",
    "timeout",
    "skills",
    "mcp_servers",
    "isolation",
}
_ALIASES = {
    "disallowedTools": "disallowed_tools",
    "permissionMode": "mode",
    "maxTurns": "max_turns",
    "mcpServers": "mcp_servers",
    "disallowed-tools": "disallowed_tools",
    "max-turns": "max_turns",
}
_IGNORED = {"color"}
_CLAUDE_MODES = {"acceptEdits": "accept-edits", "bypassPermissions": "auto", "dontAsk": "default"}


class AgentDefError(ValueError):
    """A definition that cannot be used (the message names the file and the problem)."""


@dataclass(frozen=True)
class AgentDef:
    """One sub-agent: what the parent is told of it, and how its child is set up."""

    name: str
    description: str
    prompt: str
    """The body: the child's system prompt."""
    source: Source = "built-in"
    path: Path | None = None
    tools: tuple[str, ...] | None = None
    """Allowed tool names or globs (None: all of the parent's)."""
    disallowed_tools: tuple[str, ...] = ()
    model: str = ""
    """Empty or ``inherit``: the parent's model."""
    backend: str = ""
    """Empty: the parent's backend."""
    mode: str = ""
    """Empty: the parent's mode."""
    limits: Limits = field(default_factory=Limits)
    """``max_turns``, ``max_budget_usd`` and ``timeout`` as the child's own budget."""
    skills: tuple[str, ...] | None = None
    """The skills the child may load (None: the parent's)."""
    mcp_servers: tuple[str, ...] | None = None
    """The MCP servers whose tools the child gets (None: the parent's)."""
    isolation: str = ""
    """``worktree``: the child works in a new git worktree of the repository ('': in the parent's workspace)."""

    def allows(self, tool: str) -> bool:
        """Whether the child may have the parent's tool ``tool``."""
        if any(fnmatch.fnmatchcase(tool, pattern) for pattern in self.disallowed_tools):
            return False
        if self.mcp_servers is not None and tool.startswith("mcp__"):
            server = tool.split("__")[1] if tool.count("__") >= 2 else ""
            if server not in self.mcp_servers:
                return False
        return self.tools is None or any(fnmatch.fnmatchcase(tool, pattern) for pattern in self.tools)


@dataclass
class AgentDefs:
    """The agents a session can delegate to, by name, and what discovering them found wrong."""

    by_name: dict[str, AgentDef] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def get(self, name: str) -> AgentDef | None:
        return self.by_name.get(name)

    def listing(self) -> str:
        """``- name: description`` per agent, for the ``task`` tool's description."""
        return "\n".join(f"- {d.name}: {d.description}" for d in sorted(self.by_name.values(), key=lambda d: d.name))


def _names(value: Any, key: str, where: Path) -> tuple[str, ...]:
    """A list or a comma-separated line of tool (or skill, server) names; Claude Code's tool names translated."""
    if isinstance(value, str):
        items = [v.strip() for v in value.split(",")]
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        items = [v.strip() for v in value]
    else:
        raise AgentDefError(f"{where}: {key} must be a list or a comma-separated line of names")
    out = []
    for item in items:
        if not item:
            continue
        bare = item.split("(", 1)[0].strip()  # Claude Code's "Bash(git:*)": the tool, here
        out.append(CLAUDE_TOOLS.get(bare, bare) if key in ("tools", "disallowed_tools") else item)
    return tuple(out)


def _split(text: str, where: Path) -> tuple[dict[str, Any], str]:
    from monkey.extensions.front_matter import FrontMatterError, split_front_matter

    try:
        return split_front_matter(text, where)
    except FrontMatterError as exc:
        raise AgentDefError(str(exc)) from None


def parse_agent(text: str, where: Path, source: Source) -> tuple[AgentDef, list[str]]:
    """A definition from a file's text, and warnings (unknown keys); raises :class:`AgentDefError`."""
    from monkey.modes import ModeError, parse_mode

    raw, body = _split(text, where)
    meta: dict[str, Any] = {}
    warnings = []
    for key, value in raw.items():
        key = _ALIASES.get(str(key), str(key))
        if key in _KNOWN:
            meta[key] = value
        elif key not in _IGNORED and key != "hooks":
            warnings.append(f"{where}: unknown key {key!r} ignored")
        elif key == "hooks":
            warnings.append(f"{where}: hooks in an agent definition are not supported; ignored")
    name, description = meta.get("name"), meta.get("description")
    if not isinstance(name, str) or not _NAME.match(name):
        raise AgentDefError(f"{where}: name must be letters, digits, '-' and '_', at most 64 characters (got {name!r})")
    if not isinstance(description, str) or not description.strip():
        raise AgentDefError(f"{where}: description is missing")
    mode = meta.get("mode") or ""
    if mode:
        try:
            mode = parse_mode(_CLAUDE_MODES.get(str(mode), str(mode)))
        except ModeError as exc:
            raise AgentDefError(f"{where}: mode: {exc}") from None
    model = meta.get("model") or ""
    backend = meta.get("backend") or ""
    if not isinstance(model, str) or not isinstance(backend, str):
        raise AgentDefError(f"{where}: model and backend must be names")
    try:
        limits = parse_limits(
            {
                "max_turns": meta.get("max_turns"),
                "max_budget_usd": meta.get("max_budget_usd"),
                "max_wall": meta.get("timeout"),
            },
            str(where),
        )
    except ValueError as exc:
        raise AgentDefError(str(exc).replace("max_wall", "timeout")) from None
    isolation = meta.get("isolation") or ""
    if isolation not in ("", "worktree"):
        raise AgentDefError(f"{where}: isolation must be worktree (or left out), got {isolation!r}")
    tools = _names(meta["tools"], "tools", where) if meta.get("tools") is not None else None
    if tools is not None and "*" in tools:
        tools = None
    return AgentDef(
        name=name,
        description=" ".join(description.split()),
        prompt=body.strip(),
        source=source,
        path=where,
        tools=tools,
        disallowed_tools=_names(meta.get("disallowed_tools") or [], "disallowed_tools", where),
        model="" if model == "inherit" else model,
        backend=backend,
        mode=mode,
        limits=limits,
        skills=_names(meta["skills"], "skills", where) if meta.get("skills") is not None else None,
        mcp_servers=_names(meta["mcp_servers"], "mcp_servers", where) if meta.get("mcp_servers") is not None else None,
        isolation=isolation,
    ), warnings


def _files(base: Path) -> list[Path]:
    try:
        return sorted(p for p in base.iterdir() if p.suffix == ".md" and p.is_file())
    except OSError:
        return []


def discover_agents(workspace: Path, *, home: Path, trusted: bool) -> AgentDefs:
    """Every agent this session can delegate to; a later source overrides an agent of the same name."""
    found = AgentDefs()
    places: list[tuple[Path, Source]] = [
        (Path(str(resources.files("monkey.agent") / "agents")), "built-in"),
        (home / "agents", "user"),
    ]
    if trusted:
        places += [(workspace / d, "project") for d in PROJECT_DIRS]
    for base, source in places:
        for path in _files(base):
            try:
                data = path.read_bytes()
                if len(data) > MAX_BYTES:
                    raise AgentDefError(f"{path}: larger than {MAX_BYTES // 1024} KiB")
                agent, warnings = parse_agent(data.decode("utf-8", "replace"), path, source)
            except OSError as exc:
                found.warnings.append(f"agent skipped: {path}: cannot be read ({exc.strerror or exc})")
                continue
            except AgentDefError as exc:
                found.warnings.append(f"agent skipped: {exc}")
                continue
            found.warnings += [f"agent {agent.name}: {w}" for w in warnings]
            found.by_name[agent.name] = agent
    return found
