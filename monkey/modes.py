"""Permission modes: how much the engine lets run without asking a person.

``default`` asks for anything no rule or grant allows; ``accept-edits`` also lets file
changes inside the workspace run; ``plan`` is read-only (the engine refuses every change);
``auto`` asks for nothing (``--no-approval``). In every mode deny rules decide first, and the
protected set (``.git/``, ``.monkey/``, monkey's home, outside the workspace) needs a person's
approval of that exact call, so ``auto`` with nobody to ask refuses those calls.
"""

from __future__ import annotations

from typing import Literal

__all__ = [
    "Mode",
    "MODES",
    "DESCRIPTIONS",
    "LABELS",
    "PERMISSIVENESS",
    "ModeError",
    "parse_mode",
    "next_mode",
    "stricter_mode",
]

Mode = Literal["default", "accept-edits", "plan", "auto"]
MODES: tuple[Mode, ...] = ("default", "accept-edits", "plan", "auto")
"""In the order Shift+Tab cycles through them (``auto`` only when the session may use it)."""

DESCRIPTIONS: dict[Mode, str] = {
    "default": "asks before anything a rule or grant does not allow",
    "accept-edits": "file changes inside the workspace run without asking; commands still ask",
    "plan": "read-only: monkey reads and plans, and every change is refused",
    "auto": "nothing asks; commands run in the sandbox and protected paths still need a person",
}
LABELS: dict[Mode, str] = {
    "default": "default",
    "accept-edits": "accept edits",
    "plan": "plan (read-only)",
    "auto": "auto (no approvals)",
}
"""How the status bar names each mode."""
PERMISSIVENESS = {"plan": 0, "default": 1, "accept-edits": 2, "auto": 3}
"""How much each permission mode lets run without a person, least first."""

_ALIASES = {
    "accept_edits": "accept-edits",
    "acceptedits": "accept-edits",
    "edits": "accept-edits",
    "no-approval": "auto",
    "no_approval": "auto",
    "bypass": "auto",
    "read-only": "plan",
    "readonly": "plan",
}


class ModeError(ValueError):
    """A mode name that is not one of :data:`MODES`."""


def parse_mode(name: str) -> Mode:
    """The mode ``name`` names (case and ``_``/``-`` forgiven; ``no-approval`` is ``auto``)."""
    key = name.strip().lower()
    key = _ALIASES.get(key, key)
    if key not in MODES:
        raise ModeError(f"unknown mode {name!r}: expected one of {', '.join(MODES)}")
    return key


def next_mode(mode: Mode, *, auto_allowed: bool) -> Mode:
    """The mode after ``mode`` in the cycle; ``auto`` is skipped unless the session may use it."""
    cycle = [m for m in MODES if m != "auto" or auto_allowed]
    index = cycle.index(mode) if mode in cycle else -1
    return cycle[(index + 1) % len(cycle)]


def stricter_mode(parent: str, wanted: str) -> str:
    """``wanted`` unless it is more permissive than ``parent`` (then ``parent``); empty: ``parent``."""
    if not wanted:
        return parent
    return wanted if PERMISSIVENESS.get(wanted, 99) <= PERMISSIVENESS.get(parent, 1) else parent
