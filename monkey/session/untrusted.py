"""What a folder nobody trusted holds that monkey leaves unused, said once when a session starts.

A project's instruction files, skills, sub-agents, plugins, MCP servers and most of its
``.monkey/config.toml`` count only in a trusted folder (:mod:`monkey.trust`). Left out in
silence, they look broken (``/release-notes`` answered "unknown command"); so the session's
notices say once what was found and not used, how to trust the folder, and what that turns on
(:data:`~monkey.trust.TRUST_TURNS_ON`).
"""

from __future__ import annotations

from pathlib import Path

from monkey.trust import TRUST_TURNS_ON

__all__ = ["unused_here", "untrusted_notice", "untrusted_skill"]

_SKILL_DIRS = (".monkey/skills", ".agents/skills", ".claude/skills")
_AGENT_DIRS = (".monkey/agents", ".claude/agents")
_PLUGIN_DIR = ".monkey/plugins"


def _skills(workspace: Path) -> list[str]:
    names: dict[str, None] = {}
    for base in _SKILL_DIRS:
        try:
            folders = sorted((workspace / base).iterdir())
        except OSError:
            continue
        names.update((f.name, None) for f in folders if (f / "SKILL.md").is_file())
    return list(names)


def untrusted_skill(workspace: Path, name: str) -> bool:
    """Whether ``name`` (``/NAME`` or ``NAME``) is a skill of this (untrusted) project."""
    return name.removeprefix("/") in _skills(workspace)


def unused_here(workspace: Path, *, instructions: list[str], config_keys: list[str]) -> list[str]:
    """What this folder holds that an untrusted session does not use, one item each: the
    instruction files not read, the settings of its config left out, skills, sub-agents, plugins,
    ``.mcp.json``."""
    found = list(instructions)
    if config_keys:
        found.append(f"the settings {', '.join(config_keys)} of .monkey/config.toml (its deny rules apply anyway)")
    skills = _skills(workspace)
    if skills:
        found.append(f"{'skill' if len(skills) == 1 else 'skills'} {', '.join('/' + s for s in skills)}")
    agents = sorted({p.stem for d in _AGENT_DIRS for p in (workspace / d).glob("*.md")})
    if agents:
        found.append(f"{'sub-agent' if len(agents) == 1 else 'sub-agents'} {', '.join(agents)}")
    plugins = sorted(p.parent.name for p in (workspace / _PLUGIN_DIR).glob("*/plugin.yaml"))
    if plugins:
        found.append(f"{'plugin' if len(plugins) == 1 else 'plugins'} {', '.join(plugins)}")
    if (workspace / ".mcp.json").is_file():
        found.append("the MCP servers of .mcp.json")
    return found


def untrusted_notice(workspace: Path, found: list[str]) -> str:
    """The one notice: what was found and not used, how to trust the folder, what that turns on."""
    return (
        f"this folder is not trusted, so monkey did not use: {'; '.join(found)}. "
        f"`monkey trust {workspace}` trusts it, which turns on " + "; ".join(TRUST_TURNS_ON) + "."
    )
