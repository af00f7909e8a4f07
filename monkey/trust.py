"""Which folders the person trusts: a project's ``.monkey/`` is inert until they do.

A repository comes from someone else, so its ``.monkey/config.toml`` may not choose the
backend, the model or a model file, the loop's limits, checkpoint settings, approvals, or
anything that runs or loads code, until the person trusts the folder. Trust is asked once,
on a terminal, and kept in ``trusted_folders.json`` in the monkey home (one absolute path
per entry; a folder inside a trusted one is trusted). Headless runs never trust by asking.

A linked git worktree shares its repository's trust: a folder in one counts as the same folder
of the main checkout (:func:`trust_root`, which checks the link both ways), so trusting, asking
and revoking in a worktree are about the repository.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from monkey.userfiles import locked, write_atomic

__all__ = ["TRUST_TURNS_ON", "TRUST_FILE", "trusted_folders", "is_trusted", "trust", "untrust", "trust_root"]

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


def trust_root(workspace: Path) -> Path:
    """The folder whose trust ``workspace`` has: itself (resolved), or, in a linked git worktree,
    the same folder of the repository's main checkout."""
    from monkey.worktrees import main_checkout

    here = workspace.resolve()
    found = main_checkout(here)
    if found is None:
        return here
    main, root = found
    return main / here.relative_to(root)


def is_trusted(workspace: Path, home: Path) -> bool:
    """Whether ``workspace`` (resolved; in a worktree, its repository's folder) is, or is inside, a trusted folder."""
    here = trust_root(workspace)
    for folder in trusted_folders(home):
        root = Path(folder)
        if here == root or root in here.parents:
            return True
    return False


def _save(home: Path, folders: list[str]) -> None:
    write_atomic(home / TRUST_FILE, json.dumps({"folders": folders}, indent=2) + "\n")


def trust(workspace: Path, home: Path) -> str:
    """Trust ``workspace`` (a worktree: its repository); returns the path stored (read and written under
    the file's lock)."""
    folder = str(trust_root(workspace))
    with locked(home / TRUST_FILE):
        folders = trusted_folders(home)
        if folder not in folders:
            _save(home, [*folders, folder])
    return folder


def untrust(workspace: Path, home: Path) -> bool:
    """Stop trusting ``workspace`` (exactly that entry; a worktree: its repository's); returns whether it was trusted."""
    folder = str(trust_root(workspace))
    with locked(home / TRUST_FILE):
        folders = trusted_folders(home)
        if folder not in folders:
            return False
        _save(home, [f for f in folders if f != folder])
    return True
