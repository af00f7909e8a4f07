"""Building the ``claude-code`` and ``codex`` backends from monkey's config."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from monkey.backends.base import Backend, BackendError
from monkey.config import Config, ExternalAgentConfig

__all__ = ["create_external"]


def _executable(configured: str, label: str, section: str, package: str) -> str:
    found = shutil.which(configured)
    if found is None:
        raise BackendError(
            f"{label} not found ({configured!r} is not an executable on PATH); install it "
            f"({package}) or set [{section}] executable in monkey's config",
            kind="invalid_request",
        )
    return found


def create_external(
    name: str, *, config: Config, model: str | None, env: Mapping[str, str], workspace: Path | None
) -> Backend:
    """The Claude Code or Codex backend, running in ``workspace`` (default: the current folder)."""
    ws = (workspace or Path.cwd()).resolve()
    if name == "claude-code":
        from monkey.backends.claude_code.backend import ClaudeCodeBackend

        c = config.claude_code
        return ClaudeCodeBackend(
            **_common(
                c,
                "Claude Code",
                "claude_code",
                "npm install -g @anthropic-ai/claude-code",
                model=model,
                config=config,
                workspace=ws,
                env=env,
            ),
            permission_mode=c.permission_mode,
            append_system_prompt=c.append_system_prompt,
            max_turns=c.max_turns,
            mcp_config=c.mcp_config,
            allowed_tools=c.allowed_tools,
        )
    from monkey.backends.codex.backend import CodexBackend

    x = config.codex
    return CodexBackend(
        **_common(
            x, "Codex", "codex", "npm install -g @openai/codex", model=model, config=config, workspace=ws, env=env
        ),
        sandbox=x.sandbox,
    )


def _common(
    section: ExternalAgentConfig,
    label: str,
    key: str,
    package: str,
    *,
    model: str | None,
    config: Config,
    workspace: Path,
    env: Mapping[str, str],
) -> dict[str, Any]:
    """The arguments both agent backends take, from their ``[claude_code]`` / ``[codex]`` section."""
    return {
        "executable": _executable(section.executable, label, key, package),
        "model": model or section.model or config.agent.model or None,
        "workspace": workspace,
        "env": section.env,
        "base_env": env,
        "idle_timeout": section.idle_timeout,
        "wall_timeout": section.timeout,
        "max_line_bytes": section.max_line_bytes,
        "extra_args": section.extra_args,
        "check_version": section.check_version,
    }
