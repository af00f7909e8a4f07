"""``monkey agent --web``: the monitor served beside a session, in the same process, on a thread
of its own (its own event loop, so the app's or the REPL's loop is never held up by it)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from monkey.web.server import WebFront, WebSettings

__all__ = ["Beside"]


class Beside:
    """``monkey web`` on a thread: :meth:`start` returns its link, :meth:`stop` ends it."""

    def __init__(self, settings: WebSettings | None = None) -> None:
        self.front = WebFront(settings or WebSettings(), say=lambda line: None)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._failed: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="monkey-web", daemon=True)

    def _run(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            task = asyncio.create_task(self.front.serve())
            while not self.front.url and not task.done():
                await asyncio.sleep(0.01)
            self._ready.set()
            await task

        try:
            asyncio.run(main())
        except BaseException as exc:  # noqa: BLE001 - said by start()
            self._failed = exc
        finally:
            self._ready.set()

    def start(self, timeout: float = 30) -> str:
        """Start serving; the printed link (``http://127.0.0.1:PORT/?token=...``). OSError when it cannot listen."""
        self._thread.start()
        self._ready.wait(timeout)
        if self._failed is not None:
            raise self._failed if isinstance(self._failed, OSError) else OSError(str(self._failed))
        if not self.front.url:
            raise OSError("the monitor did not start")
        return self.front.url

    def stop(self, timeout: float = 10) -> None:
        """Stop serving and wait for the thread."""
        loop: Any = self._loop
        if loop is not None and self._thread.is_alive():
            loop.call_soon_threadsafe(self.front.stop)
            self._thread.join(timeout)
