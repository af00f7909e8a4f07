"""The error a checkpoint that could not be taken raises (imports nothing: the loop catches it)."""

from __future__ import annotations

__all__ = ["CheckpointError"]


class CheckpointError(Exception):
    """A checkpoint could not be taken; the change it was for must not run."""
