"""What the person approved, kept in the monkey home (never in the repository).

``mcp/approved.json``: project-defined servers a person let start, by a hash of the
workspace, the server's name and its definition as written (a changed definition is a new
key, so it is asked again). ``mcp/pins.json``: per server, each tool's definition (name,
description, input schema) and its hash, as last approved; a tool whose hash differs is
*changed* and needs a person's approval of a call before it runs again, a tool never seen
is *new* and needs a first approval.

Plain JSON files, replaced atomically under an advisory lock, rather than tables in
``monkey.db``: they are a few KB, read once per connection, and must be readable and
deletable by a person (``rm`` forgets every pin) — nothing here is queried.
"""

from __future__ import annotations

import contextlib
import difflib
import fcntl
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from monkey.userfiles import write_atomic

__all__ = ["PinStore", "Pin", "PinState", "tool_hash", "definition_diff"]

PinState = Literal["pinned", "new", "changed", "reconfirm"]
"""``reconfirm``: pinned, but its server's set of tools changed since (see the manager)."""


def tool_hash(name: str, description: str, schema: Any) -> str:
    """The hash of a tool's definition as the model and the person see it."""
    text = json.dumps([name, description, schema], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Pin:
    """A tool's definition as last approved."""

    hash: str
    description: str
    schema: Any


def _render(description: str, schema: Any) -> list[str]:
    return [
        *description.splitlines(),
        "input schema:",
        *json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False, default=str).splitlines(),
    ]


def definition_diff(old: Pin, description: str, schema: Any) -> str:
    """What changed in a tool's definition since it was approved (a unified diff)."""
    lines = difflib.unified_diff(
        _render(old.description, old.schema), _render(description, schema), "approved", "now", lineterm="", n=2
    )
    return "\n".join(lines)


class PinStore:
    """The files under ``home/mcp``; every method re-reads them (other monkeys may write too)."""

    def __init__(self, home: Path) -> None:
        self.folder = home / "mcp"

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / ".lock", "a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def _read(self, name: str) -> dict[str, Any]:
        try:
            data = json.loads((self.folder / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, name: str, data: dict[str, Any]) -> None:
        write_atomic(self.folder / name, json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n")

    # -- project servers a person let start -------------------------------------------------

    @staticmethod
    def server_key(workspace: Path, name: str, definition_hash: str) -> str:
        return hashlib.sha256(f"{workspace}\0{name}\0{definition_hash}".encode()).hexdigest()

    def server_approved(self, key: str) -> bool:
        return key in self._read("approved.json")

    def approve_server(self, key: str, workspace: Path, name: str) -> None:
        with self._locked():
            data = self._read("approved.json")
            data[key] = {"workspace": str(workspace), "server": name}
            self._write("approved.json", data)

    # -- tool definitions ---------------------------------------------------------------------

    def pins(self, server: str) -> dict[str, Pin]:
        """The approved definitions of ``server``'s tools, by the server's own tool name."""
        raw = self._read("pins.json").get(server, {})
        pins: dict[str, Pin] = {}
        if isinstance(raw, dict):
            for tool, item in raw.items():
                if isinstance(item, dict) and isinstance(item.get("hash"), str):
                    pins[tool] = Pin(item["hash"], str(item.get("description", "")), item.get("schema"))
        return pins

    def pin(self, server: str, tool: str, description: str, schema: Any) -> None:
        """Record ``tool``'s definition as approved."""
        with self._locked():
            data = self._read("pins.json")
            tools = data.setdefault(server, {})
            tools[tool] = {"hash": tool_hash(tool, description, schema), "description": description, "schema": schema}
            self._write("pins.json", data)
