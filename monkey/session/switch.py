"""``/model`` and ``/backend``: show, and switch, what the agent talks to mid-session.

Both front ends (the app and the line REPL) run :func:`switch_command` and show its lines;
the :class:`~monkey.events.BackendChanged` event it returns goes to the session like any
other. The conversation is kept across a switch: messages are stored in monkey's own
format and every backend converts them. Claude Code and Codex are the exception, since
they keep their own conversation and are only ever sent the latest message.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from monkey.backends.base import Backend, BackendError, ModelCheck
from monkey.config import Config, ConfigError, load_config
from monkey.events import BackendChanged

if TYPE_CHECKING:
    from monkey.agent.loop import Agent

__all__ = ["BackendSwitcher", "SwitchResult", "offer_mcp", "switch_command"]


@dataclass
class BackendSwitcher:
    """Builds backends by name the way the command line did (config, and the flags given for one)."""

    config: Config
    workspace: Path
    script: str | None = None
    """``--script``: what the scripted backend replays."""
    flagged: str = ""
    """The backend the command line chose; ``--api-key`` and ``--base-url`` apply to it only."""
    api_key: str | None = None
    base_url: str | None = None
    env: Mapping[str, str] = field(default_factory=lambda: os.environ)

    @classmethod
    def for_workspace(cls, workspace: Path) -> BackendSwitcher:
        """A switcher reading the workspace's config, with no command-line flags."""
        try:
            config = load_config(workspace)
        except ConfigError:
            config = Config()
        return cls(config, workspace)

    def create(self, name: str, model: str | None) -> Backend:
        """A new backend ``name`` with ``model`` (None: the configured or default model).

        Raises:
            BackendError: unknown name, or the backend cannot be built (say, no script).
        """
        from monkey.backends.select import create_backend

        flagged = name == self.flagged
        return create_backend(
            name,
            config=self.config,
            model=model,
            script=self.script,
            api_key=self.api_key if flagged else None,
            base_url=self.base_url if flagged else None,
            env=self.env,
            workspace=self.workspace,
        )

    def plugin_backends(self) -> list[str]:
        """``plugin:NAME`` of every agent plugin and alias found (see :mod:`monkey.backends.plugin.discovery`)."""
        from monkey.config import monkey_home
        from monkey.backends.plugin.discovery import discover

        found = discover(monkey_home(), self.workspace, bool(self.config.approvals.trust_project)).plugins
        return [f"plugin:{n}" for n in [*found, *(a for a in self.config.agents if a not in found)]]

    def acp_backends(self) -> list[str]:
        """``acp:NAME`` of every ACP agent: the built-in ones and ``[acp_agents.NAME]``."""
        from monkey.backends.acp_client.agents import agent_names

        return [f"acp:{n}" for n in agent_names(self.config.acp_agents)]

    def missing(self, name: str) -> str:
        """What backend ``name`` lacks here to work at all, and how to give it ("" when nothing)."""
        if name != "anthropic":
            return ""
        from monkey.config import monkey_home
        from monkey.session.login import key_missing, login_help

        cfg = self.config.anthropic
        why = key_missing(
            (self.api_key if self.flagged == name else None) or cfg.api_key, self.env.get(cfg.key_env, ""), cfg.key_env
        )
        return f"{why}; {login_help(monkey_home(), cfg.key_env)}" if why else ""

    def describe(self, name: str) -> str:
        """What backend ``name`` needs here, and whether it has it, in a few words."""
        cfg = self.config
        if name.startswith("plugin:"):
            alias = cfg.agents.get(name[7:])
            if isinstance(alias, dict):
                return f"agent plugin alias of {alias.get('extends')}: {alias.get('description') or ''}".rstrip(": ")
            return "agent plugin (monkey plugins info " + name[7:] + ")"
        if name.startswith("acp:"):
            from monkey.backends.acp_client.agents import BUILT_IN

            entry = BUILT_IN.get(name[4:])
            return f"ACP agent ({entry.title if entry else 'acp_agents.' + name[4:]})"
        if name == "scripted":
            return "replays --script" if self.script else "needs --script FILE (tests and demos)"
        if name == "local":
            if importlib.util.find_spec("llama_cpp") is None:
                return "llama-cpp-python is not installed (pip install 'monkey-agent[local]')"
            return f"llama.cpp, {cfg.local.model_path or 'the embedded SmolLM2-135M'}"
        if name == "anthropic":
            key_env = cfg.anthropic.key_env
            if (self.api_key and self.flagged == name) or self.env.get(key_env):
                return f"Anthropic API, {key_env} is set"
            return f"Anthropic API, {'key stored by /login' if cfg.anthropic.api_key else key_env + ' is not set (/login)'}"
        if name == "openai":
            url = (self.base_url if self.flagged == name else None) or cfg.openai.base_url
            return (
                f"OpenAI-compatible server at {url}" if url else "OpenAI API (set [openai] base_url for a local server)"
            )
        executable = cfg.claude_code.executable if name == "claude-code" else cfg.codex.executable
        where = shutil.which(executable)
        return f"{executable} at {where}" if where else f"{executable} is not on PATH"


async def _check_model(backend: Backend) -> ModelCheck:
    """Whether ``backend`` has its model, when it can tell (see :class:`ModelCheck`)."""
    return await backend.check_model()


async def _close_quietly(backend: Backend) -> None:
    try:
        await backend.aclose()
    except Exception:  # noqa: BLE001 - a backend that was never used; nothing depends on closing it
        pass


@dataclass
class SwitchResult:
    """What a ``/model`` or ``/backend`` command did."""

    lines: list[str]
    """What to show the person."""
    event: BackendChanged | None = None
    """The switch, to record and show; None when nothing changed."""
    ok: bool = True
    """False when the command failed (shown as a warning)."""


def offer_mcp(backend: Backend, mcp: object) -> None:
    """Give an ACP agent backend (``mcp_servers``) the MCP servers the session may start itself
    (:meth:`monkey.mcp_client.manager.McpManager.startable`: the same trust rules); others take none."""
    startable = getattr(mcp, "startable", None)
    if hasattr(backend, "mcp_servers") and startable is not None:
        backend.mcp_servers = list(startable())


async def switch_command(agent: Agent, switcher: BackendSwitcher, command: str, rest: str) -> SwitchResult:
    """Run ``/model [NAME]`` or ``/backend [NAME [MODEL]]``; not while a turn runs.

    Without arguments they show the current choice (``/backend`` lists every backend with
    what it needs). A switch builds the new backend first, so a failure leaves the agent
    as it was; the old backend is closed after the switch.
    """
    from monkey.backends.select import AVAILABLE_BACKENDS

    words = rest.split()
    current = agent.backend
    model: str | None
    if command == "/model":
        if not words:
            return SwitchResult(
                [
                    f"model: {current.model or '(default)'} on {current.name}",
                    "/model NAME switches the model; /backend lists the backends",
                ]
            )
        if len(words) > 1:
            return SwitchResult(["usage: /model NAME"], ok=False)
        name, model = current.name, words[0]
    else:
        if not words:
            names = [*AVAILABLE_BACKENDS, *switcher.plugin_backends(), *switcher.acp_backends()]
            lines = [f"{'*' if n == current.name else ' '} {n:<12}{switcher.describe(n)}" for n in names]
            return SwitchResult(
                [
                    f"backend: {current.name} ({current.model or 'default model'})",
                    *lines,
                    "/backend NAME [MODEL] switches; the conversation is kept",
                ]
            )
        if len(words) > 2:
            return SwitchResult(["usage: /backend NAME [MODEL]"], ok=False)
        name, model = words[0], (words[1] if len(words) == 2 else None)
        if name not in AVAILABLE_BACKENDS and not name.startswith(("plugin:", "acp:")):
            return SwitchResult(
                [f"unknown backend {name!r}; one of {', '.join(AVAILABLE_BACKENDS)}, plugin:NAME, acp:NAME"], ok=False
            )
    if agent.running:
        return SwitchResult(["a turn is running; cancel it first (Esc)"], ok=False)
    missing = switcher.missing(name)
    if missing:
        return SwitchResult([f"cannot switch to {name}: {missing}"], ok=False)
    try:
        backend = switcher.create(name, model)
    except BackendError as exc:
        return SwitchResult([f"cannot switch to {name}: {exc.message}"], ok=False)
    checked = await _check_model(backend) if model else ModelCheck(True)
    if checked.exists is False:
        await _close_quietly(backend)
        return SwitchResult(
            [
                f"cannot switch to {model}: {checked.note}; still using "
                f"{current.name} · {current.model or 'default model'}"
            ],
            ok=False,
        )
    offer_mcp(backend, agent.mcp)
    event = agent.use_backend(backend)
    try:
        await current.aclose()
    except Exception as exc:  # noqa: BLE001 - the switch happened; closing the old one is best effort
        note = [f"(closing {current.name} failed: {exc})"]
    else:
        note = []
    lines = [f"now using {backend.name} · {backend.model or 'default model'}", *note]
    if checked.exists is None and checked.note:
        lines.append(f"({checked.note})")
    if backend.capabilities.runs_own_tools and agent.messages:  # Claude Code, Codex
        lines.append(
            f"{backend.name} keeps its own conversation: it will see only your next messages, not the earlier turns"
        )
    return SwitchResult(lines, event)
