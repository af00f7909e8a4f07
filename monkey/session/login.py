"""``/login``: keep an Anthropic API key in the person's own ``config.toml``, or say how to set one.

The key goes to ``[anthropic] api_key`` of the user's config (never a project's: only the user's
file may set it). The file is edited with ``tomlkit`` (comments and order stay), written under the user
files' lock to a new file of mode 0600 beside it, synced, and renamed over it, so a crash leaves the
old file or the new one, and nobody else can read the key at any moment. ``ANTHROPIC_API_KEY`` (the
configured variable) still wins when it is set.
"""

from __future__ import annotations

from pathlib import Path

from monkey.userfiles import locked, toml_document, write_atomic

__all__ = ["store_key", "login_help", "key_missing"]

CONFIG_FILE = "config.toml"


def store_key(home: Path, key: str) -> Path:
    """Write ``key`` as ``[anthropic] api_key`` in ``home``'s config.toml (under the user files'
    lock, atomically, mode 0600).

    Raises ``ValueError`` for a key with spaces or control characters, ``OSError`` when the file
    cannot be read as TOML or written.
    """
    import tomlkit

    if not key or any(c.isspace() or ord(c) < 32 for c in key):
        raise ValueError("an API key is one word, with no spaces")
    path = home / CONFIG_FILE
    with locked(path):  # "approve for good" and revoke write the same file
        doc = toml_document(path)
        section = doc.get("anthropic")
        if section is None:
            section = tomlkit.table()
            doc["anthropic"] = section
        section["api_key"] = key
        write_atomic(path, tomlkit.dumps(doc), mode=0o600)
    return path


def login_help(home: Path, key_env: str) -> str:
    """What ``/login`` with no key says: the two ways to give monkey a key."""
    return (
        f"set {key_env} in your shell (export {key_env}=...), or type /login KEY to keep the key in "
        f"{home / CONFIG_FILE} (readable only by you; the variable wins when set); then /backend anthropic"
    )


def key_missing(api_key: str, env_value: str, key_env: str) -> str:
    """Why the Anthropic backend cannot work here ("" when it has a key)."""
    if api_key or env_value:
        return ""
    return f"no Anthropic API key: {key_env} is not set and /login stored none"
