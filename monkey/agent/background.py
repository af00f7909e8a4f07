"""Work an agent started in the background during a turn (a ``task`` call with ``background``).

A :class:`Background` holds the turn's running jobs and what finished ones left for the model.
The loop gives the model every finished job's text as a user message before its next call;
when the model ends its answer while jobs still run, the loop waits for the next one to finish
and calls the model again with its result, so the turn (and ``monkey agent --task``) never ends
with work running unseen. When the turn ends anyway (stopped, an error, a budget), the jobs
still running are cancelled and awaited, so their own ends are recorded before the turn's.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

__all__ = ["Background", "Finished"]


@dataclass(frozen=True)
class Finished:
    """What a background job hands back: the text for the model, and a person's stop if there was one."""

    text: str
    stopped: str = ""
    """Why a person stopped the job (a refusal without a reason): the turn stops too."""


class Background:
    """The running background jobs of one agent, and the results not yet given to its model."""

    def __init__(self) -> None:
        self._running: dict[str, asyncio.Task[Finished]] = {}
        self._ready: list[Finished] = []

    @property
    def busy(self) -> bool:
        """Whether a job is still running."""
        return bool(self._running)

    @property
    def waiting(self) -> bool:
        """Whether a job still runs or a finished one's result has not been taken yet."""
        return bool(self._running or self._ready)

    def start(self, key: str, work: Callable[[], Awaitable[Finished]]) -> None:
        """Run ``work()`` (named ``key``, e.g. the ``task`` call's id) until it finishes or :meth:`stop`."""

        async def job() -> Finished:
            return await work()

        task = asyncio.create_task(job(), name=f"monkey-background-{key}")
        self._running[key] = task
        task.add_done_callback(lambda done: self._finished(key, done))

    def _finished(self, key: str, task: asyncio.Task[Finished]) -> None:
        self._running.pop(key, None)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:  # the job's own errors are its handoff; this is a bug, said to the model
            self._ready.append(Finished(f"background task {key} failed: {type(exc).__name__}: {exc}"))
        else:
            self._ready.append(task.result())

    def take(self) -> list[Finished]:
        """The results of jobs finished since the last call, in the order they finished."""
        ready, self._ready = self._ready, []
        return ready

    async def wait(self) -> None:
        """Wait until at least one running job finishes (returns at once when none runs)."""
        if self._running:
            await asyncio.wait(list(self._running.values()), return_when=asyncio.FIRST_COMPLETED)
        await asyncio.sleep(0)  # let the done callbacks run

    async def stop(self) -> None:
        """Cancel every running job and wait for them to end; results not yet taken are dropped."""
        tasks = list(self._running.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await asyncio.sleep(0)
        self._running.clear()
        self._ready.clear()
