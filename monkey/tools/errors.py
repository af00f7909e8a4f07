"""The one error a tool raises for a failure the model should be told about."""

from __future__ import annotations

__all__ = ["ToolError"]


class ToolError(Exception):
    """A failure the model is told about (bad path, no match, timeout...)."""
