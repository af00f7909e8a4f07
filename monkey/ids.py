"""Identifiers that sort by creation time and never collide in practice."""

from __future__ import annotations

import os
import time

__all__ = ["new_id"]


def new_id(prefix: str = "") -> str:
    """A new id: milliseconds since the epoch in hex, then 8 random hex digits."""
    return f"{prefix}{int(time.time() * 1000):011x}{os.urandom(4).hex()}"
