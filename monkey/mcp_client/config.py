"""Which MCP servers to start: Claude Code's ``mcpServers`` JSON and monkey's ``[mcp_servers.NAME]``.

Sources, later ones winning over earlier ones with the same name (a project can never shadow a
server the person defined):

1. the project's ``.mcp.json`` and ``[mcp_servers]`` in its ``.monkey/config.toml`` (origin
   ``project``: started only in a trusted folder and only once the person approved that exact
   definition, see :mod:`monkey.mcp_client.approvals`);
2. ``mcp.json`` in the monkey home and ``[mcp_servers]`` in the user's ``config.toml`` (origin
   ``user``);
3. ``--mcp-config FILE`` (origin ``flag``), and servers an editor names over ACP (``editor``).

A server is ``command`` / ``args`` / ``env`` / ``cwd`` (stdio) or ``url`` / ``headers``
(streamable HTTP), with ``enabled``, ``startup_timeout`` (10 s), ``tool_timeout`` (60 s),
``enabled_tools`` / ``disabled_tools`` and ``trusted`` (annotations count; only from the
person's own files). ``${VAR}`` and ``${VAR:-default}`` are expanded in every string.
A bad file or entry is one line in :attr:`Servers.errors`; the other servers still start.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from monkey.config import toml_file

__all__ = [
    "ServerConfig",
    "Servers",
    "McpConfigError",
    "load_servers",
    "parse_servers",
    "read_json_file",
    "expand",
    "USER_JSON",
]

Origin = Literal["project", "user", "flag", "editor"]
USER_JSON = "mcp.json"
"""The person's own ``mcpServers`` file in the monkey home."""

_KEYS = {
    "type",
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "enabled",
    "startup_timeout",
    "tool_timeout",
    "enabled_tools",
    "disabled_tools",
    "trusted",
}
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class McpConfigError(ValueError):
    """One server definition or file that cannot be used (the message is one line)."""


@dataclass(frozen=True)
class ServerConfig:
    """One MCP server, as configured (``${VAR}`` already expanded)."""

    name: str
    origin: Origin
    source: str
    """The file (or flag) it came from, for messages."""
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str = ""
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    enabled: bool = True
    startup_timeout: float = 10.0
    tool_timeout: float = 60.0
    enabled_tools: tuple[str, ...] | None = None
    disabled_tools: tuple[str, ...] = ()
    trusted: bool = False
    """The person marked this server trusted: its tools' annotations count (never a project's)."""
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False)
    """The definition as written (before expansion): what a person approves and what is hashed."""

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "http" if self.url else "stdio"

    @property
    def definition_hash(self) -> str:
        """A hash of the definition as written: a project server is approved by it."""
        import hashlib  # imported here: loading OpenSSL is not paid before the app's first frame

        text = json.dumps({"name": self.name, **dict(self.raw)}, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    def describe(self) -> str:
        """The definition in one line, for an approval question and ``/mcp``."""
        if self.url:
            return f"{self.url}" + (f" (headers: {', '.join(self.headers)})" if self.headers else "")
        words = " ".join([self.command, *self.args])
        extra = f" (env: {', '.join(self.env)})" if self.env else ""
        return words + extra + (f" in {self.cwd}" if self.cwd else "")

    def allows(self, tool: str) -> bool:
        """Whether ``enabled_tools`` / ``disabled_tools`` let the server's tool ``tool`` be offered."""
        if self.enabled_tools is not None and tool not in self.enabled_tools:
            return False
        return tool not in self.disabled_tools


@dataclass
class Servers:
    """Every server found, by name, and one line per file or entry that could not be used."""

    servers: dict[str, ServerConfig] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


def expand(text: str, environ: Mapping[str, str], where: str) -> str:
    """``${VAR}`` and ``${VAR:-default}`` from ``environ``; an unset variable without a default is an error."""

    def one(m: re.Match[str]) -> str:
        value = environ.get(m.group(1))
        if value is None or (value == "" and m.group(2) is not None):
            if m.group(2) is None:
                raise McpConfigError(f"{where}: ${{{m.group(1)}}} is not set")
            return m.group(2)
        return value

    return _VAR.sub(one, text)


def _strings(value: Any, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise McpConfigError(f"{what} must be a list of strings")
    return tuple(value)


def _table(value: Any, what: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise McpConfigError(f"{what} must be a table of strings")
    return {str(k): v for k, v in value.items()}


def _seconds(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise McpConfigError(f"{what} must be a positive number of seconds")
    return float(value)


def parse_server(
    name: str, spec: Any, *, origin: Origin, source: str, environ: Mapping[str, str] | None = None
) -> ServerConfig:
    """One definition from a JSON object or TOML table (raises :class:`McpConfigError`)."""
    env_vars = os.environ if environ is None else environ
    where = f"{source}: server {name!r}"
    if not isinstance(spec, dict):
        raise McpConfigError(f"{where}: must be an object with command or url")
    unknown = sorted(set(spec) - _KEYS)
    if unknown:
        raise McpConfigError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_KEYS))})")
    try:
        kind = spec.get("type", "")
        if kind not in ("", "stdio", "http", "streamable-http", "streamable_http"):
            raise McpConfigError(f"type {kind!r} is not supported (stdio or http)")
        command, url = spec.get("command", ""), spec.get("url", "")
        if not isinstance(command, str) or not isinstance(url, str):
            raise McpConfigError("command and url must be strings")
        if bool(command) == bool(url):
            raise McpConfigError("needs exactly one of command (stdio) or url (streamable HTTP)")
        x = lambda s: expand(s, env_vars, where)  # noqa: E731
        trusted = spec.get("trusted", False)
        enabled = spec.get("enabled", True)
        if not isinstance(trusted, bool) or not isinstance(enabled, bool):
            raise McpConfigError("enabled and trusted must be true or false")
        if trusted and origin == "project":
            raise McpConfigError("trusted = true is only read from your own config, never a project's")
        cwd = spec.get("cwd", "")
        if not isinstance(cwd, str):
            raise McpConfigError("cwd must be a string")
        enabled_tools = spec.get("enabled_tools")
        return ServerConfig(
            name=name,
            origin=origin,
            source=source,
            command=x(command),
            args=tuple(x(a) for a in _strings(spec.get("args", []), "args")),
            env={k: x(v) for k, v in _table(spec.get("env", {}), "env").items()},
            cwd=x(cwd),
            url=x(url),
            headers={k: x(v) for k, v in _table(spec.get("headers", {}), "headers").items()},
            enabled=enabled,
            startup_timeout=_seconds(spec.get("startup_timeout", 10.0), "startup_timeout"),
            tool_timeout=_seconds(spec.get("tool_timeout", 60.0), "tool_timeout"),
            enabled_tools=None if enabled_tools is None else _strings(enabled_tools, "enabled_tools"),
            disabled_tools=_strings(spec.get("disabled_tools", []), "disabled_tools"),
            trusted=trusted,
            raw=dict(spec),
        )
    except McpConfigError as exc:
        text = str(exc)
        raise McpConfigError(text if text.startswith(where) else f"{where}: {text}") from None


def parse_servers(
    table: Any, *, origin: Origin, source: str, into: Servers, environ: Mapping[str, str] | None = None
) -> None:
    """Add each server of an ``mcpServers`` object / ``[mcp_servers]`` table to ``into``."""
    if not isinstance(table, dict):
        into.errors.append(f"{source}: the MCP servers must be an object of named servers")
        return
    for name, spec in table.items():
        try:
            into.servers[str(name)] = parse_server(str(name), spec, origin=origin, source=source, environ=environ)
        except McpConfigError as exc:
            into.servers.pop(str(name), None)  # a broken redefinition starts neither
            into.errors.append(f"{exc}; not started")


def read_json_file(path: Path) -> Any:
    """The ``mcpServers`` object of a Claude Code style file (None: no file); raises McpConfigError."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as exc:
        raise McpConfigError(f"cannot read {path}: not UTF-8 ({exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise McpConfigError(f"cannot read {path}: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except OSError as exc:
        raise McpConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("mcpServers", {}), dict):
        raise McpConfigError(f'{path}: expected an object with "mcpServers": {{NAME: {{...}}}}')
    return data.get("mcpServers", {})


def _toml_servers(path: Path) -> Any:
    try:
        data = toml_file(path)
    except (OSError, ValueError) as exc:  # ValueError: not TOML, or not UTF-8
        raise McpConfigError(f"cannot read {path}: {exc}") from None
    return data.get("mcp_servers") if data is not None else None


def load_servers(
    workspace: Path, home: Path, *, flag_file: str | None = None, environ: Mapping[str, str] | None = None
) -> Servers:
    """Every configured server for ``workspace``: project files, the person's files, ``--mcp-config``.

    Raises:
        McpConfigError: the ``--mcp-config`` file cannot be read (the person named it: a usage error).
    """
    found = Servers()
    sources: list[tuple[Origin, Path, bool]] = [
        ("project", workspace / ".mcp.json", True),
        ("project", workspace / ".monkey" / "config.toml", False),
        ("user", home / USER_JSON, True),
        ("user", home / "config.toml", False),
    ]
    for origin, path, is_json in sources:
        try:
            table = read_json_file(path) if is_json else _toml_servers(path)
        except McpConfigError as exc:
            found.errors.append(f"{exc}; its servers were not started")
            continue
        if table is not None:
            parse_servers(table, origin=origin, source=str(path), into=found, environ=environ)
    if flag_file:
        table = read_json_file(Path(flag_file).expanduser())
        if table is None:
            raise McpConfigError(f"--mcp-config {flag_file}: no such file")
        parse_servers(table, origin="flag", source=flag_file, into=found, environ=environ)
    return found
