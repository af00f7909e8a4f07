"""monkey serve's log lines: on stderr (in stdio mode stdout is the protocol: nothing else goes there)."""

from __future__ import annotations

import sys

__all__ = ["log"]


def log(text: str) -> None:
    """One line on stderr."""
    sys.stderr.write(f"monkey serve: {text}\n")
    sys.stderr.flush()
