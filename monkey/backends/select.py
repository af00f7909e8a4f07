"""Which backend to use, and building it.

Choice when the user names none: flag > config > ``ANTHROPIC_API_KEY`` present > the
embedded local model. Backend modules are imported only when chosen, so start-up never
pays for a model library it does not use.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from monkey.backends.base import Backend, BackendError
from monkey.config import Config

__all__ = ["BackendChoice", "choose_backend", "create_backend", "KNOWN_BACKENDS", "AVAILABLE_BACKENDS"]

AVAILABLE_BACKENDS = ("scripted", "local")
"""Backends this version can run."""
KNOWN_BACKENDS = AVAILABLE_BACKENDS + ("anthropic", "openai", "claude-code", "codex")
"""Backends monkey knows the names of; the others arrive in later versions."""


@dataclass
class BackendChoice:
    """The chosen backend and what the user should be told about the choice."""

    name: str
    notices: list[str] = field(default_factory=list)


def choose_backend(
    *,
    flag: str | None,
    local: bool,
    script: str | None,
    base_url: str | None,
    api_key: str | None,
    config: Config,
    env: Mapping[str, str] = os.environ,
) -> BackendChoice:
    """Decide the backend from flags, config and environment."""
    if local and flag and flag != "local":
        raise BackendError(f"--local and --backend {flag} contradict each other", kind="invalid_request")
    if local:
        return BackendChoice("local")
    if flag:
        return BackendChoice(flag)
    if script:
        return BackendChoice("scripted")
    if config.agent.backend:
        return BackendChoice(config.agent.backend)
    if base_url:
        return BackendChoice("openai")
    if api_key or env.get("ANTHROPIC_API_KEY"):
        return BackendChoice(
            "local",
            [
                "ANTHROPIC_API_KEY is set, but this version of monkey has no Anthropic backend yet; "
                "using the embedded local model"
            ],
        )
    return BackendChoice("local", ["no backend configured; using the embedded local model (offline)"])


def create_backend(name: str, *, config: Config, model: str | None, script: str | None) -> Backend:
    """Build the named backend (imports its module only now)."""
    if name == "scripted":
        if not script:
            raise BackendError("the scripted backend needs --script FILE", kind="invalid_request")
        from monkey.backends.scripted import ScriptedBackend

        return ScriptedBackend.from_file(script)
    if name == "local":
        from monkey.backends.local import LocalBackend

        return LocalBackend(
            model or config.agent.model or config.local.model_path or None,
            n_ctx=config.local.n_ctx,
            max_tokens=config.local.max_tokens,
            temperature=config.local.temperature,
        )
    if name in KNOWN_BACKENDS:
        raise BackendError(
            f"the {name} backend is not in this version of monkey yet; "
            f"available: {', '.join(AVAILABLE_BACKENDS)}",
            kind="invalid_request",
        )
    raise BackendError(
        f"unknown backend {name!r}; known: {', '.join(KNOWN_BACKENDS)}", kind="invalid_request"
    )
