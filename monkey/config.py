"""Configuration: defaults < user file < project ``.monkey/config.toml`` < flags.

The user file is ``config.toml`` in the monkey home (``MONKEY_HOME``, else the platform's
data directory for monkey). Nothing is read at import time; :func:`load_config` does it.

A project file comes with the repository, so it may be written by someone else: its
``approvals.allow`` rules are ignored unless the user's own file sets
``approvals.trust_project = true`` (deny rules always apply).
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

import msgspec

__all__ = [
    "Config",
    "AgentConfig",
    "ShellConfig",
    "ApprovalConfig",
    "LocalConfig",
    "ConfigError",
    "monkey_home",
    "load_config",
]


class ConfigError(Exception):
    """A config file that cannot be read or does not fit the schema."""


class AgentConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """``[agent]``: which backend and model, and the loop's limits."""

    backend: str = ""
    """``scripted``, ``local``, ``anthropic`` ...; empty means choose automatically."""
    model: str = ""
    max_iterations: int = 20
    max_repeats: int = 3
    """The same tool call this many times in a row stops the loop."""


class ShellConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """``[shell]``: limits of ``shell_execute``."""

    timeout: float = 10.0
    max_timeout: float = 600.0
    output_limit: int = 30_000


class ApprovalConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """``[approvals]``: rules like ``"file_edit"`` or ``"shell_execute(git status)"``."""

    allow: list[str] = []
    deny: list[str] = []
    trust_project: bool = False


class LocalConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """``[local]``: the embedded llama.cpp model."""

    model_path: str = ""
    n_ctx: int = 8192
    max_tokens: int = 1024
    temperature: float = 0.2


class Config(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The whole configuration."""

    agent: AgentConfig = msgspec.field(default_factory=AgentConfig)
    shell: ShellConfig = msgspec.field(default_factory=ShellConfig)
    approvals: ApprovalConfig = msgspec.field(default_factory=ApprovalConfig)
    local: LocalConfig = msgspec.field(default_factory=LocalConfig)
    notices: list[str] = []
    """Things worth telling the user about how the config was read."""


def monkey_home() -> Path:
    """The monkey home: ``MONKEY_HOME`` or the platform's data directory for monkey."""
    env = os.environ.get("MONKEY_HOME")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("monkey", appauthor=False))


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _validate(data: dict[str, Any], origin: str) -> None:
    try:
        msgspec.convert(data, Config)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{origin}: {exc}") from None


def load_config(workspace: Path, *, home: Path | None = None) -> Config:
    """Read the user file and the project file of ``workspace`` into one :class:`Config`."""
    home = home if home is not None else monkey_home()
    user_path = home / "config.toml"
    project_path = workspace / ".monkey" / "config.toml"
    user = _read_toml(user_path)
    project = _read_toml(project_path)
    _validate(user, str(user_path))
    _validate(project, str(project_path))
    notices: list[str] = []
    trust = bool(user.get("approvals", {}).get("trust_project", False))
    project_approvals = project.get("approvals", {})
    if project_approvals.get("allow") and not trust:
        notices.append(
            f"ignored approvals.allow in {project_path}: a project file cannot grant approvals "
            f"unless approvals.trust_project = true in {user_path}"
        )
    project_approvals.pop("trust_project", None)
    user_approvals = user.get("approvals", {})
    allow = list(user_approvals.get("allow", []))
    if trust:
        allow += list(project_approvals.get("allow", []))
    deny = list(user_approvals.get("deny", [])) + list(project_approvals.get("deny", []))
    merged = _merge(user, project)
    merged["approvals"] = {"allow": allow, "deny": deny, "trust_project": trust}
    config = msgspec.convert(merged, Config)
    config.notices = notices
    return config
