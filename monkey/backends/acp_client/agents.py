"""Which ACP agents ``--backend acp:NAME`` can run: the built-in entries and ``[acp_agents.NAME]``.

An entry says how to start the agent (``command``, ``args``), what it is given beyond monkey's
scrubbed environment (``env``), the session mode it must ask in (``mode``: set at once after
``session/new``, so an agent never starts in its auto mode), the ``authenticate`` method to use when
it lists methods (``auth_method``), and what it is told about a missing file (``missing_file``:
``not_found``, the spec's error, or ``empty``, empty content, for an agent that fails otherwise).
Only the person's own config defines entries (:data:`monkey.config.USER_ONLY_SECTIONS`): an entry
names a program to run.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from monkey.backends.base import BackendError

__all__ = ["BUILT_IN", "MISSING_FILE", "AgentEntry", "agent_names", "resolve_agent"]

MISSING_FILE = ("not_found", "empty")
"""What ``fs/read_text_file`` answers for a file that does not exist inside the workspace."""


@dataclass(frozen=True)
class AgentEntry:
    """How to run one ACP agent."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    mode: str = ""
    """The session mode set after ``session/new`` when the agent offers it ("": leave the agent's)."""
    auth_method: str = ""
    """The ``authenticate`` method id used when the agent lists it ("": none is sent)."""
    missing_file: str = "not_found"
    install: str = ""
    """How to install the program, said when it is not on PATH."""
    api_env: str = ""
    """The variable that points the agent at a custom model API (documentation: it goes in ``env``)."""
    label: str = ""

    @property
    def title(self) -> str:
        return self.label or self.name


BUILT_IN: dict[str, AgentEntry] = {
    "gemini": AgentEntry(
        "gemini",
        "gemini",
        ("--acp",),
        mode="default",
        auth_method="gemini-api-key",
        missing_file="empty",
        install="npm install -g @google/gemini-cli",
        api_env="GOOGLE_GEMINI_BASE_URL",
        label="Gemini CLI",
    ),
    "qwen": AgentEntry(
        "qwen",
        "qwen",
        ("--acp",),
        mode="default",
        auth_method="openai",
        install="npm install -g @qwen-code/qwen-code",
        api_env="OPENAI_BASE_URL",
        label="Qwen Code",
    ),
    "opencode": AgentEntry("opencode", "opencode", ("acp",), install="npm install -g opencode-ai", label="OpenCode"),
}
"""The agents monkey knows how to run without configuration (``[acp_agents.NAME]`` overrides one)."""

_KEYS = {"command", "args", "env", "mode", "auth_method", "missing_file", "label"}


def agent_names(configured: Mapping[str, Any]) -> list[str]:
    """Every name ``acp:NAME`` accepts: the built-in ones and the person's ``[acp_agents.NAME]``."""
    return sorted({*BUILT_IN, *configured})


def _entry(name: str, table: Any, base: AgentEntry | None) -> AgentEntry:
    where = f"[acp_agents.{name}]"
    if not isinstance(table, dict):
        raise BackendError(f"{where} must be a table", kind="invalid_request")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise BackendError(
            f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(_KEYS))}", kind="invalid_request"
        )
    command = table.get("command", base.command if base else "")
    if not isinstance(command, str) or not command:
        raise BackendError(f'{where} needs command = "PROGRAM"', kind="invalid_request")
    args = table.get("args", list(base.args) if base else [])
    env = table.get("env", dict(base.env) if base else {})
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise BackendError(f"{where} args must be a list of strings", kind="invalid_request")
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise BackendError(f"{where} env must be a table of strings", kind="invalid_request")
    missing = str(table.get("missing_file", base.missing_file if base else "not_found"))
    if missing not in MISSING_FILE:
        raise BackendError(f"{where} missing_file must be one of {', '.join(MISSING_FILE)}", kind="invalid_request")
    return AgentEntry(
        name,
        command,
        tuple(args),
        {**(base.env if base else {}), **env},
        mode=str(table.get("mode", base.mode if base else "")),
        auth_method=str(table.get("auth_method", base.auth_method if base else "")),
        missing_file=missing,
        install=base.install if base else "",
        api_env=base.api_env if base else "",
        label=str(table.get("label", base.title if base else "")),
    )


def resolve_agent(name: str, configured: Mapping[str, Any], *, path: str | None = None) -> tuple[AgentEntry, str]:
    """The entry of ``acp:NAME`` and the program's full path; a clear error for an unknown name or a
    program that is not installed."""
    base = BUILT_IN.get(name)
    if name in configured:
        entry = _entry(name, configured[name], base)
    elif base is not None:
        entry = base
    else:
        raise BackendError(
            f"unknown ACP agent {name!r}; known: {', '.join(agent_names(configured))} "
            '(add one as [acp_agents.NAME] with command = "PROGRAM" in your config.toml)',
            kind="invalid_request",
        )
    found = shutil.which(entry.command, path=path)
    if found is None:
        how = f"install it ({entry.install})" if entry.install else "install it"
        raise BackendError(
            f"{entry.title} not found ({entry.command!r} is not an executable on PATH); {how} or "
            f"set command in [acp_agents.{name}] of your config.toml",
            kind="invalid_request",
        )
    return entry, found
