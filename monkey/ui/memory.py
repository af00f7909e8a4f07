"""Keep Python's cyclic garbage collector from pausing the app while a person types.

With a long session loaded, a full collection walks every object the app holds (~0.1 s
here), and the default thresholds run one every few seconds while an answer streams: the
pause lands on whatever key is pressed then. Reference counting frees almost everything
the app makes; the collector is only needed for cycles, so it can run much less often.
"""

from __future__ import annotations

import gc

__all__ = ["hold_collector", "release_collector", "tune_collector", "settle"]

THRESHOLDS = (10_000, 50, 1_000)
"""Allocations before a young collection, and young (then middle) collections before an
older one; Python's defaults are (700, 10, 10)."""


def hold_collector() -> None:
    """No collections until :func:`tune_collector` or :func:`release_collector`: ``monkey agent``
    holds it before it imports Textual, and the app tunes it once its first frame is drawn (the
    line front ends release it before they start). Starting makes many objects that all live on
    (modules, classes, styles, widgets) and few cycles; the default thresholds walk them again
    and again, a sixth of the time to the first frame here."""
    gc.disable()


def release_collector() -> None:
    """Collect again, as Python does by default (after :func:`hold_collector`)."""
    gc.enable()


def tune_collector() -> None:
    """Collect less often (see :data:`THRESHOLDS`), and again if :func:`hold_collector` stopped it;
    young cycles are still found quickly."""
    gc.set_threshold(*THRESHOLDS)
    gc.enable()


def settle() -> None:
    """Collect once, then leave what survives out of later collections.

    Called after a session opens: modules, styles, the restored conversation and its
    widgets are long-lived, so the few that die in a cycle later (and are then never
    collected) are bounded.
    """
    gc.collect()
    gc.freeze()
