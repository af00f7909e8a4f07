"""Failover: a primary backend and the ones to fall back to, in order.

When the backend in use fails for good (an error that is not transient, or a transient one
whose retries ran out), the same model call goes on with the next backend, announced by a
:class:`~monkey.events.Fallback` event. The conversation is monkey's own neutral format,
which each backend converts to its wire format (:mod:`monkey.backends.convert`), so the
tool calls and results so far stay paired on the new backend.

The switch lasts for the rest of the session: a primary that refused the key or is out of
credit would fail the same way on every call. Text the failed backend had already
streamed is abandoned; the ``fallback`` event says so, and the next backend's answer
follows it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence

from monkey.backends.base import API, Backend, BackendError, ModelCheck
from monkey.events import Event, Fallback, MessageCompleted
from monkey.messages import ModelRequest

__all__ = ["FailoverBackend"]

Factory = Callable[[], Backend]


class FailoverBackend:
    """Backends tried in order; each made only when it is first needed.

    It streams model calls only (:data:`~monkey.backends.base.API`): an external agent behind it is
    called as a model, as before capabilities were declared.

    Args:
        backends: ``(name, factory)`` pairs, the primary first. A factory that raises
            :class:`BackendError` (say a missing API key) counts as that backend failing;
            when the primary cannot be built, the first call begins with the ``fallback``
            event that says why.
        first: the primary, when it was already built (its factory is then not called).
    """

    capabilities = API
    context_window = 0

    def __init__(self, backends: Sequence[tuple[str, Factory]], *, first: Backend | None = None) -> None:
        if not backends:
            raise BackendError("failover needs at least one backend", kind="invalid_request")
        self._entries = list(backends)
        self._built: dict[int, Backend] = {}
        if first is not None:
            self._built[0] = first
        self.index = 0
        """Which backend is in use."""
        self._pending: Fallback | None = None
        try:
            primary = self._get(0)
        except BackendError as exc:
            if len(self._entries) < 2:
                raise
            self._pending = self._advance("", self._entries[0][0], exc)
            primary = self._get(self.index)
        self.name = primary.name
        self.model = primary.model

    @property
    def names(self) -> list[str]:
        """The backends' names, the primary first."""
        return [n for n, _ in self._entries]

    @property
    def current(self) -> Backend:
        """The backend in use."""
        return self._get(self.index)

    async def check_model(self) -> ModelCheck:
        """Whether the backend in use has its model (the fallbacks keep their own)."""
        try:
            check = getattr(self.current, "check_model", None)
        except BackendError as exc:
            return ModelCheck(None, f"not checked: {exc.message}")
        return await check() if check is not None else ModelCheck(None, "not checked")

    def _get(self, index: int) -> Backend:
        backend = self._built.get(index)
        if backend is None:
            backend = self._built[index] = self._entries[index][1]()
        return backend

    async def stream(self, request: ModelRequest) -> AsyncIterator[Event]:
        """Stream ``request`` on the backend in use, moving down the list when it fails."""
        if self._pending is not None:
            pending, self._pending = self._pending, None
            yield Fallback(
                session_id=request.session_id,
                from_backend=pending.from_backend,
                to_backend=pending.to_backend,
                reason=pending.reason,
                kind=pending.kind,
                model=pending.model,
            )
        while True:
            backend = self._get(self.index)
            completed = False
            stream = backend.stream(request)
            try:
                async for event in stream:
                    completed = completed or isinstance(event, MessageCompleted)
                    yield event
                return
            except BackendError as exc:
                if completed or self.index + 1 >= len(self._entries):
                    raise
                failed = self._entries[self.index][0]
                reason = exc
            finally:
                aclose = getattr(stream, "aclose", None)
                if aclose is not None:
                    await aclose()
            yield self._advance(request.session_id, failed, reason)

    def _advance(self, sid: str, failed: str, exc: BackendError) -> Fallback:
        """Move to the next backend that can be built; the event that says so."""
        reasons = [exc.message]
        while True:
            self.index += 1
            name = self._entries[self.index][0]
            try:
                backend = self._get(self.index)
            except BackendError as err:
                reasons.append(f"{name}: {err.message}")
                if self.index + 1 >= len(self._entries):
                    raise BackendError("; ".join(reasons), kind=err.kind) from err
                continue
            self.name, self.model = backend.name, backend.model
            return Fallback(
                session_id=sid,
                from_backend=failed,
                to_backend=name,
                reason="; ".join(reasons),
                kind=exc.kind,
                model=backend.model,
            )

    async def aclose(self) -> None:
        """Close every backend that was built."""
        for backend in self._built.values():
            await backend.aclose()
