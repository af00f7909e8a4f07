"""Which backend to use, and building it.

Choice when the user names none: flag > config > ``ANTHROPIC_API_KEY`` present > the
embedded local model. Backend modules are imported only when chosen, so start-up never
pays for a model library it does not use.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from dataclasses import dataclass, field

from monkey.backends.base import Backend, BackendError
from monkey.config import Config

__all__ = ["BackendChoice", "choose_backend", "create_backend", "KNOWN_BACKENDS", "AVAILABLE_BACKENDS", "EMBEDDED_ONLY"]

AVAILABLE_BACKENDS = ("scripted", "local", "anthropic", "openai", "claude-code", "codex")
"""Backends this version can run."""
KNOWN_BACKENDS = AVAILABLE_BACKENDS
"""Backends monkey knows the names of."""


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
    if config.backend.primary:
        return BackendChoice(config.backend.primary)
    if base_url:
        return BackendChoice("openai")
    if api_key or env.get(config.anthropic.key_env) or config.anthropic.api_key:
        source = (
            "--api-key"
            if api_key
            else f"{config.anthropic.key_env} is set"
            if env.get(config.anthropic.key_env)
            else "the key /login stored in your config.toml"
        )
        return BackendChoice("anthropic", [f"no backend configured; using the Anthropic API ({source})"])
    return BackendChoice("local", [EMBEDDED_ONLY.format(key_env=config.anthropic.key_env)])


EMBEDDED_ONLY = (
    "no API key: using the embedded local model (SmolLM2-135M, offline). It can chat and answer "
    "short questions, but it cannot be relied on to use tools, edit files, run commands or plan a "
    "task. For that, set {key_env} (export {key_env}=...) or type /login KEY to keep a key in your "
    "own config.toml; /backend lists the other backends."
)
"""What a session started without a key is told: what the embedded model can do, and how to set a key."""


def create_backend(
    name: str,
    *,
    config: Config,
    model: str | None,
    script: str | None,
    api_key: str | None = None,
    base_url: str | None = None,
    env: Mapping[str, str] = os.environ,
    workspace: Path | None = None,
) -> Backend:
    """Build the named backend (imports its module only now).

    ``model``, ``api_key`` and ``base_url`` (the flags) apply to this backend. When
    ``[backend] fallbacks`` is set and ``name`` is the configured primary (or no primary
    is configured), the result is a :class:`~monkey.backends.failover.FailoverBackend`
    whose fallbacks are built from their config sections when first needed.
    """

    def primary() -> Backend:
        return _create_one(
            name,
            config=config,
            model=model,
            script=script,
            api_key=api_key,
            base_url=base_url,
            env=env,
            workspace=workspace,
        )

    fallbacks = [f for f in config.backend.fallbacks if f != name]
    if (
        not fallbacks or config.backend.primary not in ("", name) or name.startswith(("plugin:", "acp:"))
    ):  # their runs span calls
        return primary()
    from monkey.backends.failover import FailoverBackend

    def factory(fallback: str) -> Callable[[], Backend]:
        return lambda: _create_one(
            fallback,
            config=config,
            model=None,
            script=script,
            api_key=None,
            base_url=None,
            env=env,
            workspace=workspace,
        )

    return FailoverBackend([(name, primary)] + [(f, factory(f)) for f in fallbacks])


def _retrying(backend: Backend, config: Config) -> Backend:
    from monkey.backends.retry import RetryingBackend, RetryPolicy

    policy = RetryPolicy(
        max_retries=config.backend.max_retries,
        base_delay=config.backend.retry_base_delay,
        max_delay=config.backend.retry_max_delay,
    )
    return RetryingBackend(backend, policy)


def _prices(table: Mapping[str, object]) -> dict[str, object]:
    from monkey.backends.prices import Price

    return {k: Price(v.input, v.output, v.cache_write, v.cache_read) for k, v in table.items()}  # type: ignore[attr-defined]


def _create_one(
    name: str,
    *,
    config: Config,
    model: str | None,
    script: str | None,
    api_key: str | None,
    base_url: str | None,
    env: Mapping[str, str],
    workspace: Path | None = None,
) -> Backend:
    if name.startswith("plugin:"):
        from monkey.backends.plugin.backend import create_plugin_backend

        return create_plugin_backend(
            name.removeprefix("plugin:"), config=config, model=model, env=env, workspace=workspace
        )
    if name.startswith("acp:"):
        from monkey.backends.acp_client.agents import resolve_agent
        from monkey.backends.acp_client.backend import AcpBackend

        entry, executable = resolve_agent(name.removeprefix("acp:"), config.acp_agents, path=env.get("PATH"))
        return AcpBackend(entry, executable, workspace=(workspace or Path.cwd()), model=model, base_env=env)
    if name in ("claude-code", "codex"):
        from monkey.backends.external_select import create_external

        return create_external(name, config=config, model=model, env=env, workspace=workspace)
    if name == "anthropic":
        from monkey.backends.anthropic import AnthropicBackend

        cfg = config.anthropic
        key_env = cfg.key_env
        return _retrying(
            AnthropicBackend(
                api_key=api_key or env.get(key_env, "") or cfg.api_key,
                model=model or config.agent.model or cfg.model or None,
                base_url=base_url or cfg.base_url or None,
                max_tokens=cfg.max_tokens,
                thinking_budget=cfg.thinking_budget,
                prompt_cache=cfg.prompt_cache,
                timeout=cfg.timeout,
                prices=_prices(cfg.prices),  # type: ignore[arg-type]
                key_hint=f"--api-key or {key_env}",
            ),
            config,
        )
    if name == "openai":
        from monkey.backends.openai_compat import OpenAICompatBackend

        cfg_o = config.openai
        key_env = cfg_o.key_env
        return _retrying(
            OpenAICompatBackend(
                base_url=base_url or cfg_o.base_url or None,
                api_key=api_key or env.get(key_env, ""),
                model=model or config.agent.model or cfg_o.model or None,
                max_tokens=cfg_o.max_tokens,
                timeout=cfg_o.timeout,
                prices=_prices(cfg_o.prices),  # type: ignore[arg-type]
                key_hint=f"--api-key or {key_env}",
                images=cfg_o.images,
            ),
            config,
        )
    if name == "scripted":
        if not script:
            raise BackendError("the scripted backend needs --script FILE", kind="invalid_request")
        from monkey.backends.scripted import ScriptedBackend

        scripted = ScriptedBackend.from_file(script)
        if model:
            scripted.model = model
        return scripted
    if name == "local":
        from monkey.backends.local import LocalBackend

        return LocalBackend(
            model or config.agent.model or config.local.model_path or None,
            n_ctx=config.local.n_ctx,
            max_tokens=config.local.max_tokens,
            temperature=config.local.temperature,
            seed=config.local.seed if config.local.seed >= 0 else None,
        )
    raise BackendError(
        f"unknown backend {name!r}; known: {', '.join(KNOWN_BACKENDS)}, plugin:NAME, acp:NAME", kind="invalid_request"
    )
