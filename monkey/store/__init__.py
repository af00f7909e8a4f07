"""Sessions in SQLite: every event kept, the conversation rebuilt exactly on resume.

- :class:`SessionStore` (``await SessionStore.open()``): list, find, load, delete, prune.
- :class:`Recorder` (``Recorder(store, session_id, ...)``): the event sink of one session.
- :class:`Restored`: a loaded session, with what its integrity check found and repaired.
"""

from __future__ import annotations

from monkey.store.recorder import Recorder
from monkey.store.store import Restored, SessionInfo, SessionStore, StoreError

__all__ = ["SessionStore", "SessionInfo", "Restored", "Recorder", "StoreError"]
