"""Allow rules a person chose to keep "for good", in their own ``config.toml``.

The file is the person's: it is edited in place with ``tomlkit``, so their comments, order and
formatting stay as they were; only ``[approvals] allow`` changes. The file is read, changed and
written under its lock, and the new file is synced beside the old one and renamed over it
(:mod:`monkey.userfiles`), so two monkeys saving at once lose nothing, a revoked rule does not
come back from another's stale copy, and a crash leaves one file or the other, never half.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from monkey.userfiles import locked, toml_document, write_atomic

__all__ = ["CONFIG_FILE", "saved_rules", "add_rules", "remove_rule"]

CONFIG_FILE = "config.toml"


def _load(home: Path) -> Any:
    return toml_document(home / CONFIG_FILE)


def _write(home: Path, doc: Any) -> None:
    import tomlkit

    write_atomic(home / CONFIG_FILE, tomlkit.dumps(doc))


def saved_rules(home: Path) -> list[str]:
    """The allow rules in the user's config file (an unreadable file has none)."""
    try:
        doc = _load(home)
    except OSError:
        return []
    allow = doc.get("approvals", {}).get("allow", [])
    return [str(rule) for rule in allow if isinstance(rule, str)]


def add_rules(home: Path, rules: list[str]) -> list[str]:
    """Append ``rules`` to ``[approvals] allow`` (those not there yet); returns the ones added.

    Raises ``OSError`` when the file cannot be read as TOML or written.
    """
    with locked(home / CONFIG_FILE):
        return _add(home, rules)


def _add(home: Path, rules: list[str]) -> list[str]:
    import tomlkit

    doc = _load(home)
    if "approvals" not in doc:
        doc["approvals"] = tomlkit.table()
    table = doc["approvals"]
    if "allow" not in table:
        table["allow"] = tomlkit.array()
    allow = table["allow"]
    added = [rule for rule in rules if rule not in allow]
    if not added:
        return []
    for rule in added:
        allow.append(rule)
    if len(allow) > 1:
        allow.multiline(True)
    _write(home, doc)
    return added


def remove_rule(home: Path, rule: str) -> bool:
    """Remove ``rule`` from ``[approvals] allow``; returns whether it was there."""
    with locked(home / CONFIG_FILE):
        doc = _load(home)
        allow = doc.get("approvals", {}).get("allow")
        if allow is None or rule not in allow:
            return False
        while rule in allow:
            allow.remove(rule)
        _write(home, doc)
    return True
