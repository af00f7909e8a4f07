"""An agent plugin's manifest, ``plugin.yaml``: read safely, checked field by field.

The format is the seed's (see ``docs/plugins.md``)::

    version: "1"                 # the plugin's own version (shown by `monkey plugins list`)
    name: "ollama"
    type: "agent"
    description: "Local LLM via Ollama"
    protocol: "1"                # the JSON-RPC protocol monkey speaks with it
    executable:
      command: ["python3", "./ollama-agent.py"]   # argv, run in the plugin's folder
    agent:
      name: "ollama"
      streaming: true
      capabilities: [streaming, tool_use]
    env:
      OLLAMA_MODEL:
        description: "Model to use"
        required: false
        default: "codellama:13b"

The YAML is parsed with ``yaml.safe_load`` (no tags, no objects). Every problem is a
:class:`ManifestError` whose message names the file, the field and what was expected; keys
monkey does not know are kept as :attr:`Manifest.warnings`, never an error (a newer manifest
still loads).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "CAPABILITIES",
    "EnvVar",
    "Manifest",
    "ManifestError",
    "MANIFEST",
    "PROTOCOLS",
    "load_manifest",
    "parse_manifest",
]

MANIFEST = "plugin.yaml"
"""The manifest's file name in a plugin's folder."""
CAPABILITIES = ("streaming", "tool_use", "code_execution", "vision", "long_context")
"""What a plugin may say it can do."""
PROTOCOLS = ("1",)
"""Protocol versions this host speaks."""
MAX_BYTES = 256 * 1024
"""A larger manifest is refused (it is a few lines)."""
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TOP = {"version", "name", "type", "description", "protocol", "executable", "agent", "env"}


class ManifestError(ValueError):
    """A manifest that cannot be used: ``file: field: expected ..., got ...``."""

    def __init__(self, path: Path | str, key: str, expected: str, got: Any = None, *, found: bool = True) -> None:
        shown = f", got {_show(got)}" if found else " (missing)"
        where = f"{key}: " if key else ""
        super().__init__(f"{path}: {where}expected {expected}{shown}")
        self.path = str(path)
        self.key = key


def _show(value: Any) -> str:
    text = repr(value) if not isinstance(value, (dict, list)) else type(value).__name__
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass(frozen=True)
class EnvVar:
    """One environment variable the plugin reads."""

    name: str
    description: str = ""
    required: bool = False
    default: str | None = None
    """Set for the plugin when neither monkey's config nor the environment sets it."""


@dataclass(frozen=True)
class Manifest:
    """A checked ``plugin.yaml``."""

    path: Path
    """The manifest file (its folder is the plugin's folder)."""
    name: str
    version: str
    description: str
    protocol: str
    command: tuple[str, ...]
    """The argv, as written (relative paths are the plugin folder's)."""
    agent_name: str
    streaming: bool
    capabilities: tuple[str, ...]
    env: tuple[EnvVar, ...] = ()
    warnings: tuple[str, ...] = ()
    """Keys monkey does not know (kept out, said by ``monkey plugins validate``)."""
    source: str = "user"
    """Where it was found: ``built-in``, ``user`` (the monkey home) or ``project`` (a trusted ``.monkey/``)."""

    @property
    def folder(self) -> Path:
        """The plugin's folder: its command runs there."""
        return self.path.parent

    def argv(self) -> list[str]:
        """The command, its relative paths made absolute in the plugin's folder: a program with a
        ``/`` (``bin/agent``) and arguments starting ``./`` or ``../`` (``python3 ./agent.py``)."""
        first, *rest = self.command
        if "/" in first and not first.startswith("/"):
            first = str((self.folder / first).resolve())
        return [first, *(str((self.folder / a).resolve()) if a.startswith(("./", "../")) else a for a in rest)]

    def can(self, capability: str) -> bool:
        """Whether the plugin declared ``capability``."""
        return capability in self.capabilities


def _text(
    path: Path, data: dict[str, Any], key: str, *, required: bool = True, default: str = "", numbers: bool = False
) -> str:
    if key not in data or data[key] is None:
        if required:
            raise ManifestError(path, key, "a string", found=False)
        return default
    value = data[key]
    if numbers and isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise ManifestError(path, key, "a string", value)
    return value


def parse_manifest(data: Any, path: Path, *, source: str = "user") -> Manifest:
    """Check the loaded YAML ``data`` of ``path``; raises :class:`ManifestError`."""
    if not isinstance(data, dict):
        raise ManifestError(path, "", "a mapping of keys (version, name, type, executable, agent ...)", data)
    warnings = [f"{path}: unknown key {k!r} (ignored)" for k in data if k not in _TOP]
    version = _text(path, data, "version", numbers=True)
    name = _text(path, data, "name")
    if not _NAME.match(name):
        raise ManifestError(
            path, "name", "letters, digits, '.', '_' or '-' (at most 64, starting with a letter or digit)", name
        )
    kind = _text(path, data, "type")
    if kind != "agent":
        raise ManifestError(path, "type", '"agent" (the only plugin type monkey runs)', kind)
    description = _text(path, data, "description", required=False)
    protocol = _text(path, data, "protocol", numbers=True)
    if protocol not in PROTOCOLS:
        raise ManifestError(path, "protocol", " or ".join(f'"{p}"' for p in PROTOCOLS), data["protocol"])
    command = _command(path, data.get("executable"))
    agent = data.get("agent", {})
    if agent is None:
        agent = {}
    if not isinstance(agent, dict):
        raise ManifestError(path, "agent", "a mapping (name, streaming, capabilities)", agent)
    warnings += [
        f"{path}: unknown key 'agent.{k}' (ignored)" for k in agent if k not in ("name", "streaming", "capabilities")
    ]
    agent_name = _text(path, agent, "name", required=False, default=name)
    streaming = agent.get("streaming", True)
    if not isinstance(streaming, bool):
        raise ManifestError(path, "agent.streaming", "true or false", streaming)
    caps = agent.get("capabilities", [])
    if caps is None:
        caps = []
    if not isinstance(caps, list):
        raise ManifestError(path, "agent.capabilities", "a list of: " + ", ".join(CAPABILITIES), caps)
    for i, cap in enumerate(caps):
        if cap not in CAPABILITIES:
            raise ManifestError(path, f"agent.capabilities[{i}]", "one of: " + ", ".join(CAPABILITIES), cap)
    env = _env(path, data.get("env"))
    return Manifest(
        path=path,
        name=name,
        version=version,
        description=description,
        protocol=protocol,
        command=command,
        agent_name=agent_name,
        streaming=streaming,
        capabilities=tuple(dict.fromkeys(caps)),
        env=env,
        warnings=tuple(warnings),
        source=source,
    )


def _command(path: Path, executable: Any) -> tuple[str, ...]:
    if not isinstance(executable, dict):
        raise ManifestError(
            path, "executable", "a mapping with command: [program, args...]", executable, found=executable is not None
        )
    command = executable.get("command")
    if command is None:
        raise ManifestError(path, "executable.command", "a list of strings (program and arguments)", found=False)
    if not isinstance(command, list) or not command:
        raise ManifestError(path, "executable.command", "a non-empty list of strings (program and arguments)", command)
    for i, part in enumerate(command):
        if not isinstance(part, str) or (i == 0 and not part.strip()):
            raise ManifestError(path, f"executable.command[{i}]", "a string" if i else "a program name or path", part)
    return tuple(command)


def _env(path: Path, env: Any) -> tuple[EnvVar, ...]:
    if env is None:
        return ()
    if not isinstance(env, dict):
        raise ManifestError(path, "env", "a mapping of variable names to {description, required, default}", env)
    out = []
    for name, spec in env.items():
        key = f"env.{name}"
        if not isinstance(name, str) or not _ENV_NAME.match(name):
            raise ManifestError(path, key, "a variable name (letters, digits and _)", name)
        if spec is None:
            spec = {}
        if not isinstance(spec, dict):
            raise ManifestError(path, key, "a mapping (description, required, default)", spec)
        description = _text(path, spec, "description", required=False)
        required = spec.get("required", False)
        if not isinstance(required, bool):
            raise ManifestError(path, f"{key}.required", "true or false", required)
        default = spec.get("default")
        if default is not None:
            if isinstance(default, bool):
                default = "true" if default else "false"
            elif isinstance(default, (int, float, str)):
                default = str(default)
            else:
                raise ManifestError(path, f"{key}.default", "a string or a number", default)
        out.append(EnvVar(name=name, description=description, required=required, default=default))
    return tuple(out)


def load_manifest(path: Path, *, source: str = "user") -> Manifest:
    """Read and check ``path`` (a ``plugin.yaml``, or a folder holding one)."""
    import yaml

    if path.is_dir() or path.suffix not in (".yaml", ".yml"):
        path = path / MANIFEST
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ManifestError(path, "", "a manifest file", found=False) from None
    except OSError as exc:
        raise ManifestError(path, "", "a readable file", exc.strerror or str(exc)) from None
    if len(raw) > MAX_BYTES:
        raise ManifestError(path, "", f"a manifest of at most {MAX_BYTES} bytes", f"{len(raw)} bytes")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ManifestError(path, "", "UTF-8 text", "bytes that are not UTF-8") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "a syntax error"
        raise ManifestError(path, "", "valid YAML", f"{problem}{line}") from None
    return parse_manifest(data, path.resolve(), source=source)
