"""The ``[subagents]`` limits, checked without importing the loop.

The CLI checks them before the app draws (a bad limit is a usage error on the command line);
:class:`~monkey.agent.subagents.Delegation` checks them again when it is made.
"""

from __future__ import annotations

__all__ = ["MAX_DEPTH", "check_limits"]

MAX_DEPTH = 5
"""The deepest ``[subagents] max_depth`` allowed."""


def check_limits(max_depth: int, max_parallel: int, max_per_turn: int) -> None:
    """Raise ValueError (with the message a person reads) for limits out of range."""
    if not 1 <= max_depth <= MAX_DEPTH:
        raise ValueError(f"[subagents] max_depth must be between 1 and {MAX_DEPTH}, got {max_depth}")
    if max_parallel < 1 or max_per_turn < 1:
        raise ValueError("[subagents] max_parallel and max_per_turn must be at least 1")
