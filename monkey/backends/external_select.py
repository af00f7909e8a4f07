"""Building the ``claude-code`` and ``codex`` backends from monkey's config."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

from monkey.backends.base import Backend, BackendError
from monkey.config import Config

__all__ = ["create_external"]


def _executable(configured: str, label: str, section: str, package: str) -> str:
    found = shutil.which(configured)
    if found is None:
        raise BackendError(f"{label} not found ({configured!r} is not an executable on PATH); install it "
                           f"({package}) or set [{section}] executable in monkey's config", kind="invalid_request")
    return found


def create_external(name: str, *, config: Config, model: str | None, env: Mapping[str, str],
                    workspace: Path | None) -> Backend:
    """The Claude Code or Codex backend, running in ``workspace`` (default: the current folder)."""
    ws = (workspace or Path.cwd()).resolve()
    if name == "claude-code":
        from monkey.backends.claude_code.backend import ClaudeCodeBackend

        c = config.claude_code
        return ClaudeCodeBackend(
            executable=_executable(c.executable, "Claude Code", "claude_code", "npm install -g @anthropic-ai/claude-code"),
            model=model or c.model or config.agent.model or None, workspace=ws, env=c.env, base_env=env,
            idle_timeout=c.idle_timeout, wall_timeout=c.timeout, extra_args=c.extra_args,
            check_version=c.check_version, permission_mode=c.permission_mode,
            append_system_prompt=c.append_system_prompt, max_turns=c.max_turns, mcp_config=c.mcp_config,
            allowed_tools=c.allowed_tools,
        )
    from monkey.backends.codex.backend import CodexBackend

    x = config.codex
    return CodexBackend(
        executable=_executable(x.executable, "Codex", "codex", "npm install -g @openai/codex"),
        model=model or x.model or config.agent.model or None, workspace=ws, env=x.env, base_env=env,
        idle_timeout=x.idle_timeout, wall_timeout=x.timeout, extra_args=x.extra_args,
        check_version=x.check_version, sandbox=x.sandbox,
    )
