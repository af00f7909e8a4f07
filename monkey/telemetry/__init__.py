"""OpenTelemetry export of what sessions do: metrics and log events, off unless asked for.

``MONKEY_ENABLE_TELEMETRY=1`` turns it on (the ``otel`` extra installs the SDK and the OTLP
exporters); the standard ``OTEL_*`` variables configure it. Each :class:`~monkey.session.session.Session`
watches the events of its one pump, after they are stored (:meth:`Watch.observe`), and a
:class:`~monkey.telemetry.observer.Observer` turns them into the metrics and events named after
Claude Code's (``monkey.token.usage``, ``monkey.api_request`` ...). Export runs on background
threads (the SDK's metric reader, the log events' batch of :mod:`monkey.telemetry.batch`) with
bounded queues; a session's end waits at most :data:`SHUTDOWN_SECONDS` for the last export. See
docs/telemetry.md.

This module imports nothing heavy: with telemetry off nothing of ``opentelemetry`` is imported.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from monkey.events import Event
    from monkey.telemetry.observer import Observer

__all__ = ["ENABLE", "SHUTDOWN_SECONDS", "Watch", "enabled", "watch"]

ENABLE = "MONKEY_ENABLE_TELEMETRY"
"""The variable that turns the export on (``1``, ``true``, ``yes`` or ``on``)."""
SHUTDOWN_SECONDS = 1.5
"""How long the end of the last session of a process waits for the export to flush, at most: a
collector that is down or never answers costs a session's end no more than this."""

_log = logging.getLogger(__name__)


def enabled(env: Mapping[str, str] | None = None) -> bool:
    """Whether ``MONKEY_ENABLE_TELEMETRY`` asks for the export (and ``OTEL_SDK_DISABLED`` does not forbid it)."""
    env = os.environ if env is None else env
    on = env.get(ENABLE, "").strip().lower() in ("1", "true", "yes", "on")
    return on and env.get("OTEL_SDK_DISABLED", "").strip().lower() != "true"


class Watch:
    """One session's telemetry: :meth:`observe` each stored event, :meth:`close` at the session's end."""

    def __init__(self, observer: Observer, problems: list[str]) -> None:
        self.observer = observer
        self.problems = problems
        """What the person should be told once (an exporter that is not installed, a protocol not supported)."""
        self.closed = False

    def observe(self, event: Event) -> None:
        """Turn ``event`` into metrics and log events; never raises (telemetry never breaks a session)."""
        try:
            self.observer.observe(event)
        except Exception:  # noqa: BLE001 - told in the log, the session goes on
            _log.warning("telemetry could not record a %s event", event.type, exc_info=True)

    async def close(self) -> None:
        """Release the export (the last session of the process flushes it, :data:`SHUTDOWN_SECONDS` at most)."""
        if self.closed:
            return
        self.closed = True
        if self.observer.exporting is None:  # nothing was started
            return
        from monkey.telemetry.export import release

        await release(SHUTDOWN_SECONDS)


def watch(env: Mapping[str, str] | None = None) -> Watch | None:
    """The telemetry of a new session, or None when it is off. With the SDK missing, a :class:`Watch`
    that records nothing and says why (see :attr:`Watch.problems`)."""
    env = dict(os.environ if env is None else env)
    if not enabled(env):
        return None
    from monkey.telemetry.observer import Observer

    try:
        from monkey.telemetry.export import acquire
    except ImportError as exc:  # the otel extra is not installed
        said = f"telemetry is off: the OpenTelemetry SDK is not installed (pip install 'monkey-agent[otel]'): {exc}"
        return Watch(Observer(None, env), [said])
    exporting, problems = acquire(env, SHUTDOWN_SECONDS)
    return Watch(Observer(exporting, env), problems)
