"""The parts :mod:`monkey.session.setup` builds from config for a session: what the permission
engine protects as config or code, the sandbox probe, the checkpoint guard, the context manager."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from monkey.backends.base import Backend
from monkey.config import Config, monkey_home

if TYPE_CHECKING:
    from monkey.permissions.protected import Guarded
    from monkey.tools.sandbox import PendingProbe

__all__ = ["guarded_for", "holds", "probe_sandbox", "checkpoint_guard", "context_manager"]


def holds(workspace: Path) -> tuple[Path | None, bool]:
    """The person's home when ``workspace`` is it or holds it (else None), and whether ``workspace`` is ``/``."""
    home = Path.home().resolve()
    return (home if home == workspace or workspace in home.parents else None), workspace == Path("/")


def _configured_commands(config: Config) -> list[str]:
    """Every command line the config has monkey run: hooks, ``[workflow] verify``, MCP servers, agent CLIs."""
    lines: list[str] = []
    for groups in config.hooks.values():
        for group in groups if isinstance(groups, list) else []:
            for hook in group.get("hooks", []) if isinstance(group, dict) else []:
                if isinstance(hook, dict) and isinstance(hook.get("command"), str):
                    lines.append(hook["command"])
    lines.append(config.workflow.verify)
    for server in config.mcp_servers.values():
        if isinstance(server, dict) and isinstance(server.get("command"), str):
            args = [a for a in server.get("args", []) if isinstance(a, str)]
            lines.append(shlex.join([server["command"], *args]))
    lines += [shlex.quote(config.claude_code.executable), shlex.quote(config.codex.executable)]
    return [line for line in lines if line.strip()]


def guarded_for(config: Config, workspace: Path) -> Guarded:
    """What the permission engine protects in ``workspace`` as config or code monkey runs
    (:mod:`monkey.permissions.protected`): the instruction files' names, the scripts configured
    commands name, and the person's home or ``/`` when the workspace holds it."""
    from monkey.permissions.protected import CONFIG_FILES, Guarded, named_scripts

    names = CONFIG_FILES | set(config.instructions.files)
    home, system = holds(workspace)
    return Guarded(
        names=frozenset(names), scripts=named_scripts(_configured_commands(config), workspace), home=home, system=system
    )


def probe_sandbox(config: Config) -> PendingProbe:
    """Begin finding the sandbox ``[shell] sandbox`` gives here (probed once per process) in a thread."""
    from monkey.tools.sandbox import PendingProbe

    return PendingProbe(config.shell.sandbox, network=config.shell.sandbox_network, home=monkey_home().resolve())


def checkpoint_guard(workspace: Path, config: Config):
    """The workspace's checkpoint guard, and one message per interrupted change it repaired."""
    from monkey.checkpoints.guard import CheckpointGuard
    from monkey.db import DatabaseError, os_error_text

    guard = CheckpointGuard(workspace, home=monkey_home(), max_file_size=config.checkpoints.max_file_size)
    try:
        return guard, guard.repair()
    except DatabaseError as exc:
        return guard, [f"checkpoints cannot be used, so every change will be refused: {exc}"]
    except OSError as exc:  # a full or read-only monkey home
        return guard, [f"checkpoints cannot be used, so every change will be refused: {os_error_text(exc, workspace)}"]


def context_manager(backend: Backend, config: Config, compact_at: float):
    """Counting, eliding and compaction settings from ``[context]`` and the request's ``compact_at``."""
    from monkey.context.policies import PolicySettings
    from monkey.context.window import ContextManager, ContextSettings

    c = config.context
    settings = ContextSettings(
        window=c.window,
        compact_at=compact_at,
        keep_tool_results=c.keep_tool_results,
        policies=tuple(dict.fromkeys(c.policies)),
        policy=PolicySettings(keep=c.keep_tool_calls, max_tokens=c.keep_tool_tokens, step=c.policy_step),
    )
    return ContextManager(backend, settings=settings)
