"""``/login``: keep an Anthropic API key in the person's own ``config.toml``, or say how to set one.

The key goes to ``[anthropic] api_key`` of the user's config (never a project's: only the user's
file may set it). The file is edited with ``tomlkit`` (comments and order stay), written to a new
file created with mode 0600 beside it, synced, and renamed over it, so a crash leaves the old file
or the new one, and nobody else can read the key at any moment. ``ANTHROPIC_API_KEY`` (the
configured variable) still wins when it is set.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["store_key", "login_help", "key_missing"]

CONFIG_FILE = "config.toml"


def store_key(home: Path, key: str) -> Path:
    """Write ``key`` as ``[anthropic] api_key`` in ``home``'s config.toml (atomically, mode 0600).

    Raises ``ValueError`` for a key with spaces or control characters, ``OSError`` when the file
    cannot be read as TOML or written.
    """
    import tomlkit

    if not key or any(c.isspace() or ord(c) < 32 for c in key):
        raise ValueError("an API key is one word, with no spaces")
    path = home / CONFIG_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    try:
        doc = tomlkit.parse(text)
    except Exception as exc:  # noqa: BLE001 - tomlkit raises its own ParseError family
        raise OSError(f"cannot update {path}: it is not valid TOML ({exc})") from None
    section = doc.get("anthropic")
    if section is None:
        section = tomlkit.table()
        doc["anthropic"] = section
    section["api_key"] = key
    home.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # whatever the umask, and a leftover temporary file's mode
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(tomlkit.dumps(doc))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def login_help(home: Path, key_env: str) -> str:
    """What ``/login`` with no key says: the two ways to give monkey a key."""
    return (f"set {key_env} in your shell (export {key_env}=...), or type /login KEY to keep the key in "
            f"{home / CONFIG_FILE} (readable only by you; the variable wins when set); then /backend anthropic")


def key_missing(api_key: str, env_value: str, key_env: str) -> str:
    """Why the Anthropic backend cannot work here ("" when it has a key)."""
    if api_key or env_value:
        return ""
    return f"no Anthropic API key: {key_env} is not set and /login stored none"
