"""Whether monkey's write watch works on this machine (fanotify and the process connector: root on
Linux), found once when a test module imports this; and what monkey says when it does not."""

from __future__ import annotations

from pathlib import Path

from monkey.checkpoints.watch import start as start_watch
from monkey.session.setup import WATCH_NOTICE

HAS_WATCH = (lambda w: (w.stop() if w else None, w is not None)[1])(start_watch(Path.cwd()))
"""Whether the write watch starts here (tests that need it are skipped without it)."""

SAID = WATCH_NOTICE.split("(")[0].strip()
"""The notice's words before its parenthesis, as the front ends show them."""
