"""Retries of transient backend failures, with exponential backoff and jitter.

:class:`RetryingBackend` wraps any backend. A :class:`BackendError` whose ``retryable``
is set (rate limit, overloaded, server error, network) is tried again after a delay,
announced first as a :class:`~monkey.events.Retry` event; a server's ``retry-after`` is
honoured. When the attempts run out the last error is raised, marked as exhausted.

A stream that breaks after some text was shown is retried from the start, and the text
the person already saw is not shown twice: the new attempt's deltas are held back until
they pass what was shown. If the new attempt's text differs from what was shown, only its
part past that length is shown; ``message_completed`` always carries the text of the
attempt that finished.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

from monkey.backends.base import API, Backend, BackendError, ModelCheck
from monkey.events import Event, MessageCompleted, Retry, TextDelta, ThinkingDelta
from monkey.messages import ModelRequest

__all__ = ["RetryPolicy", "RetryingBackend", "Replay"]


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to wait."""

    max_retries: int = 4
    """Tries after the first one."""
    base_delay: float = 1.0
    """Delay before the first retry; doubles each time."""
    max_delay: float = 30.0
    """No wait is longer than this (nor a server's ``retry-after`` above it)."""
    jitter: float = 0.25
    """Each delay is spread by up to this fraction either way, so clients do not retry in step."""

    def delay(self, attempt: int, retry_after: float | None = None, rng: random.Random | None = None) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based)."""
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, self.max_delay)
        base = min(self.max_delay, self.base_delay * (2 ** (attempt - 1)))
        spread = base * self.jitter * (2 * (rng or random).random() - 1)
        return max(0.0, min(self.max_delay, base + spread))


class Replay:
    """Holds back the part of a retried stream that was already shown.

    Only lengths are kept: a new attempt's deltas are shown from the point where the text
    already shown ends, so nothing is shown twice.
    """

    def __init__(self) -> None:
        self.shown = {"text": 0, "thinking": 0}
        """Characters shown so far, by kind."""
        self._seen = {"text": 0, "thinking": 0}

    def restart(self) -> None:
        """A new attempt begins: its deltas are matched against what was shown."""
        self._seen = {"text": 0, "thinking": 0}

    def filter(self, kind: str, piece: str) -> str:
        """The part of ``piece`` not shown yet (and count it as shown)."""
        seen = self._seen[kind]
        shown = self.shown[kind]
        end = seen + len(piece)
        self._seen[kind] = end
        if seen >= shown:
            self.shown[kind] = end
            return piece
        if end <= shown:
            return ""
        self.shown[kind] = end
        return piece[shown - seen :]


Sleep = Callable[[float], Awaitable[None]]


class RetryingBackend:
    """A backend whose transient failures are retried."""

    def __init__(self, inner: Backend, policy: RetryPolicy | None = None, *, sleep: Sleep | None = None) -> None:
        self.capabilities = getattr(inner, "capabilities", API)
        """The inner API backend's (an external agent is never wrapped)."""
        self.inner = inner
        self.policy = policy or RetryPolicy()
        self._sleep = sleep or asyncio.sleep

    @property
    def name(self) -> str:
        """The inner backend's name."""
        return self.inner.name

    @property
    def model(self) -> str:
        """The inner backend's model (a server's model is known after the first call)."""
        return self.inner.model

    @property
    def context_window(self) -> int:
        """The inner backend's context window."""
        return self.inner.context_window

    async def check_model(self) -> ModelCheck:
        """Whether the inner backend has its model."""
        return await self.inner.check_model()

    def __getattr__(self, item: str) -> object:
        return getattr(self.inner, item)

    async def stream(self, request: ModelRequest) -> AsyncIterator[Event]:
        """Stream ``request`` on the inner backend, trying again on transient failures."""
        replay = Replay()
        attempt = 0
        while True:
            replay.restart()
            completed = False
            stream = self.inner.stream(request)
            try:
                async for event in stream:
                    if isinstance(event, TextDelta):
                        fresh = replay.filter("text", event.text)
                        if fresh:
                            yield (
                                event
                                if fresh == event.text
                                else TextDelta(ts=event.ts, session_id=event.session_id, text=fresh)
                            )
                    elif isinstance(event, ThinkingDelta):
                        fresh = replay.filter("thinking", event.text)
                        if fresh:
                            yield (
                                event
                                if fresh == event.text
                                else ThinkingDelta(ts=event.ts, session_id=event.session_id, text=fresh)
                            )
                    else:
                        completed = completed or isinstance(event, MessageCompleted)
                        yield event
                return
            except BackendError as exc:
                if completed:  # the whole message arrived; only its accounting was lost
                    return
                if not exc.retryable or attempt >= self.policy.max_retries:
                    if exc.retryable:
                        raise BackendError(
                            f"{exc.message} (gave up after {attempt + 1} attempts)",
                            kind=exc.kind,
                            retryable=False,
                            retry_after=exc.retry_after,
                        ) from exc
                    raise
                attempt += 1
                delay = self.policy.delay(attempt, exc.retry_after)
                yield Retry(session_id=request.session_id, attempt=attempt, delay=round(delay, 3), reason=exc.message)
                await self._sleep(delay)
            finally:
                aclose = getattr(stream, "aclose", None)
                if aclose is not None:
                    await aclose()

    async def aclose(self) -> None:
        """Close the inner backend."""
        await self.inner.aclose()
