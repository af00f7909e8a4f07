"""Which folders the person trusts: a project's ``.monkey/`` is inert until they do.

A repository comes from someone else, so its ``.monkey/config.toml`` may not choose the
backend, the model or a model file, the loop's limits, checkpoint settings, approvals, or
anything that runs or loads code, until the person trusts the folder. Trust is asked once,
on a terminal, and kept in ``trusted_folders.json`` in the monkey home (one absolute path
per entry; a folder inside a trusted one is trusted). Headless runs never trust by asking.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from monkey.userfiles import locked, write_atomic

__all__ = ["TRUST_TURNS_ON", "TRUST_FILE", "trusted_folders", "is_trusted", "trust", "untrust"]

TRUST_FILE = "trusted_folders.json"

TRUST_TURNS_ON = (
    "its .monkey/config.toml in full (backend, model, limits, approvals, hooks, MCP servers), not only deny rules",
    "its instruction files (AGENTS.md, CLAUDE.md ... from the repository root down) and .monkey/memory.md",
    "its skills (.monkey/skills, .agents/skills, .claude/skills) and their /commands",
    "its sub-agents (.monkey/agents, .claude/agents)",
    "its agent plugins (.monkey/plugins)",
    "its MCP servers (.mcp.json; each is still asked about before it first starts)",
)
"""What trusting a folder turns on, one item each: said by ``monkey trust --help`` and when a
session starts in a folder nobody trusted that holds any of it."""


def trusted_folders(home: Path) -> list[str]:
    """The folders trusted so far (an unreadable or damaged file trusts nothing)."""
    try:
        data = json.loads((home / TRUST_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    folders = data.get("folders", []) if isinstance(data, dict) else []
    return [f for f in folders if isinstance(f, str) and os.path.isabs(f)]


def is_trusted(workspace: Path, home: Path) -> bool:
    """Whether ``workspace`` (resolved) is, or is inside, a trusted folder."""
    here = workspace.resolve()
    for folder in trusted_folders(home):
        root = Path(folder)
        if here == root or root in here.parents:
            return True
    return False


def _save(home: Path, folders: list[str]) -> None:
    write_atomic(home / TRUST_FILE, json.dumps({"folders": folders}, indent=2) + "\n")


def trust(workspace: Path, home: Path) -> str:
    """Trust ``workspace``; returns the path stored (read and written under the file's lock)."""
    folder = str(workspace.resolve())
    with locked(home / TRUST_FILE):
        folders = trusted_folders(home)
        if folder not in folders:
            _save(home, [*folders, folder])
    return folder


def untrust(workspace: Path, home: Path) -> bool:
    """Stop trusting ``workspace`` (exactly that entry); returns whether it was trusted."""
    folder = str(workspace.resolve())
    with locked(home / TRUST_FILE):
        folders = trusted_folders(home)
        if folder not in folders:
            return False
        _save(home, [f for f in folders if f != folder])
    return True
