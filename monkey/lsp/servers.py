"""Which language server checks which files: ``[lsp.NAME]`` tables and the built-ins.

A built-in is used only when its program is on ``PATH``; a configured server is always tried (a
missing program is said once, at the first edit of one of its files). ``[lsp.NAME]`` with the name
of a built-in replaces it; ``enabled = false`` turns one off. The project's ``.monkey/config.toml``
sets ``[lsp]`` only in a folder the person trusts (:func:`monkey.config.load_config` leaves it out
elsewhere, like every key that makes monkey run a program).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from typing import Any

__all__ = ["BUILTINS", "DEFAULT_TIMEOUT", "LspError", "ServerSpec", "servers"]

DEFAULT_TIMEOUT = 2.0
"""Seconds a server has to answer after an edit (starting it included) before it is skipped."""


class LspError(ValueError):
    """A ``[lsp.NAME]`` table that cannot be used."""


@dataclass(frozen=True)
class ServerSpec:
    """One language server: how to start it and the files it checks."""

    name: str
    command: tuple[str, ...]
    extensions: tuple[str, ...]
    language: str
    """The LSP ``languageId`` of its files (``python``)."""
    timeout: float = DEFAULT_TIMEOUT
    builtin: bool = False

    def handles(self, path: str) -> bool:
        """Whether ``path`` is one of its files."""
        return any(path.endswith(ext) for ext in self.extensions)

    @property
    def shown(self) -> str:
        return f"{self.name} language server ({' '.join(self.command)})"


BUILTINS = (ServerSpec("python", ("ruff", "server"), (".py", ".pyi"), "python", builtin=True),)
"""Servers used without any configuration when their program is installed."""

_KEYS = {"command", "extensions", "language", "timeout", "enabled"}


def _spec(name: str, table: Any, base: ServerSpec | None) -> ServerSpec | None:
    if not isinstance(table, dict):
        raise LspError(f"[lsp.{name}] must be a table")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise LspError(f"[lsp.{name}]: unknown key {unknown[0]!r} (known: {', '.join(sorted(_KEYS))})")
    if table.get("enabled", True) is False:
        return None
    command = table.get("command", list(base.command) if base else None)
    if not isinstance(command, list) or not command or not all(isinstance(c, str) and c for c in command):
        raise LspError(f'[lsp.{name}] command must be a non-empty list of strings, e.g. ["ruff", "server"]')
    extensions = table.get("extensions", list(base.extensions) if base else None)
    if not isinstance(extensions, list) or not extensions or not all(isinstance(e, str) and e for e in extensions):
        raise LspError(f'[lsp.{name}] extensions must be a non-empty list such as [".py"]')
    timeout = table.get("timeout", base.timeout if base else DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise LspError(f"[lsp.{name}] timeout must be a number of seconds above 0")
    language = table.get("language", base.language if base else name)
    if not isinstance(language, str) or not language:
        raise LspError(f"[lsp.{name}] language must be a non-empty string")
    exts = tuple(e if e.startswith(".") else f".{e}" for e in extensions)
    return ServerSpec(name, tuple(command), exts, language, float(timeout))


def servers(tables: dict[str, Any]) -> list[ServerSpec]:
    """The servers of a session: the configured ones, then the built-ins not replaced and installed
    (none with ``MONKEY_LSP_BUILTINS=off``).

    Raises:
        LspError: A table that cannot be used.
    """
    builtin = {spec.name: spec for spec in BUILTINS}
    found: list[ServerSpec] = []
    for name, table in tables.items():
        spec = _spec(name, table, builtin.get(name))
        if spec is not None:
            found.append(spec)
    if os.environ.get("MONKEY_LSP_BUILTINS", "").strip().lower() in ("0", "off", "false", "no"):
        return found  # built-ins off for this process (a CI run that wants no server it did not name)
    if not _client_installed():
        return found  # the built-ins need the client library too (pip install 'monkey[lsp]')
    for spec in BUILTINS:
        if spec.name not in tables and shutil.which(spec.command[0]) is not None:
            found.append(spec)
    return found


def _client_installed() -> bool:
    """Whether pygls and lsprotocol are installed (looked up, not imported)."""
    from importlib.util import find_spec

    return find_spec("pygls") is not None and find_spec("lsprotocol") is not None
