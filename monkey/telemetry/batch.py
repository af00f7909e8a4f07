"""Log events on their way to the exporters: a bounded queue, and one thread that builds the SDK's records and sends them.

The SDK's ``Logger.emit`` builds and checks a record on the caller's thread (its attributes copied and
validated one by one, the current span looked up, the record copied again for the batch processor):
tens of microseconds per event on the session's loop, for attributes that :mod:`monkey.telemetry.observer`
makes of plain strings, numbers and booleans. :class:`LogBatch` keeps what the SDK's batch processor
promises (``OTEL_BLRP_SCHEDULE_DELAY``, ``OTEL_BLRP_MAX_QUEUE_SIZE``, ``OTEL_BLRP_MAX_EXPORT_BATCH_SIZE``:
sent every second by default, at most 2048 waiting, the oldest dropped beyond that) and hands the same
:class:`~opentelemetry.sdk._logs.ReadableLogRecord` objects to the same exporters; the loop's thread only
appends a tuple to the queue, and the records are built on the export thread, in batches. The SDK's
attribute limits (``OTEL_LOGRECORD_ATTRIBUTE_COUNT_LIMIT``, ``..._VALUE_LENGTH_LIMIT`` and the global ones)
still apply: a record that exceeds them goes through the SDK's own :class:`BoundedAttributes`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry._logs import LogRecord, SeverityNumber
from opentelemetry.attributes import BoundedAttributes
from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, Context, attach, detach, set_value
from opentelemetry.sdk._logs import LogRecordLimits, ReadableLogRecord
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.util.instrumentation import InstrumentationScope

__all__ = ["LogBatch", "settings"]

_log = logging.getLogger("monkey.telemetry")

QUEUE = 2048
"""``OTEL_BLRP_MAX_QUEUE_SIZE``'s default: log events waiting, at most."""
DELAY_MS = 1000
"""``OTEL_BLRP_SCHEDULE_DELAY``'s default: milliseconds between two exports."""
BATCH = 512
"""``OTEL_BLRP_MAX_EXPORT_BATCH_SIZE``'s default: log events in one export, at most; a queue this long is
sent at once."""


def _positive(env: Mapping[str, str], name: str, default: int, problems: list[str]) -> int:
    said = env.get(name, "").strip()
    if not said:
        return default
    try:
        value = int(said)
    except ValueError:
        value = 0
    if value <= 0:
        problems.append(f"telemetry: {name}={said!r} is not a positive integer; using {default}")
        return default
    return value


def settings(env: Mapping[str, str], problems: list[str]) -> tuple[int, float, int]:
    """The queue's size, the delay between exports (seconds) and a batch's size, from the ``OTEL_BLRP_*``
    variables (what is wrong in them is added to ``problems``, and the default used)."""
    queue = _positive(env, "OTEL_BLRP_MAX_QUEUE_SIZE", QUEUE, problems)
    delay = _positive(env, "OTEL_BLRP_SCHEDULE_DELAY", DELAY_MS, problems) / 1000
    batch = _positive(env, "OTEL_BLRP_MAX_EXPORT_BATCH_SIZE", BATCH, problems)
    if batch > queue:
        problems.append(
            f"telemetry: OTEL_BLRP_MAX_EXPORT_BATCH_SIZE ({batch}) is larger than the queue ({queue}); "
            f"batches of {queue} are sent"
        )
        batch = queue
    return queue, delay, batch


class LogBatch:
    """The log events of a process: :meth:`put` on any thread, sent by this object's thread."""

    def __init__(
        self,
        exporters: Sequence[Any],
        resource: Resource,
        scope: InstrumentationScope,
        env: Mapping[str, str],
        problems: list[str],
    ) -> None:
        self.exporters = list(exporters)
        self.resource = resource
        self.scope = scope
        self.size, self.delay, self.batch = settings(env, problems)
        self.limits = LogRecordLimits()
        self.queue: deque[tuple[str, dict[str, Any], int, int]] = deque(maxlen=self.size)
        self.dropped = 0
        """Events dropped because the queue was full (the oldest go first)."""
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._sending = threading.Lock()
        self._stopped = not self.exporters  # OTEL_LOGS_EXPORTER=none: nothing is queued, no thread runs
        self._thread = threading.Thread(target=self._run, name="monkey-telemetry-logs", daemon=True)
        if self.exporters:
            self._thread.start()

    def put(self, name: str, attributes: dict[str, Any], timestamp: int) -> None:
        """Queue the event ``name`` (``timestamp`` in nanoseconds); ``attributes`` must not change after (it is
        read on the export thread). A full queue drops its oldest event."""
        if self._stopped:
            return
        queue = self.queue
        with self._lock:
            full = len(queue) == self.size
            if full:
                self.dropped += 1
            queue.append((name, attributes, timestamp, time.time_ns()))  # a full deque drops its oldest
            waiting = len(queue)
        if full and self.dropped == 1:
            _log.warning("telemetry: the log events' queue is full (%d); the oldest are dropped", self.size)
        if waiting >= self.batch and not self._wake.is_set():
            self._wake.set()

    def _run(self) -> None:
        while not self._stopped:
            self._wake.wait(self.delay)
            self._wake.clear()
            if self._stopped:
                break
            self._send()
        self._send()  # what was queued before the stop

    def _send(self) -> None:
        """Send everything queued, a batch at a time (on this thread, for :meth:`force_flush`)."""
        with self._sending:
            queue = self.queue
            while queue:
                with self._lock:
                    taken = [queue.popleft() for _ in range(min(self.batch, len(queue)))]
                records = [self._record(*item) for item in taken]
                token = attach(set_value(_SUPPRESS_INSTRUMENTATION_KEY, True))
                try:
                    for exporter in self.exporters:
                        try:
                            exporter.export(records)
                        except Exception:  # noqa: BLE001 - the SDK's processor logs it too; the next batch goes on
                            _log.warning("telemetry: exporting log events failed", exc_info=True)
                finally:
                    detach(token)

    def _record(self, name: str, attributes: dict[str, Any], timestamp: int, observed: int) -> ReadableLogRecord:
        attributes = {"event.name": name, **attributes}
        limits = self.limits
        most, longest = limits.max_log_record_attributes, limits.max_log_record_attribute_length
        if (most is not None and len(attributes) > most) or longest is not None:
            attributes = BoundedAttributes(
                maxlen=most,
                attributes=attributes,
                immutable=False,  # type: ignore[assignment]
                max_value_len=longest,
            )
        record = LogRecord(
            timestamp=timestamp,
            observed_timestamp=observed,
            context=Context(),
            severity_number=SeverityNumber.INFO,
            severity_text="INFO",
            body=name,
            attributes=attributes,
            event_name=name,
        )
        return ReadableLogRecord(
            log_record=record, resource=self.resource, instrumentation_scope=self.scope, limits=limits
        )

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Send what is queued now, on the caller's thread (the SDK's processor does the same)."""
        if self._stopped:
            return False
        self._send()
        return True

    def shutdown(self) -> None:
        """Send what is queued and stop the thread, then the exporters (blocking: see ``release``'s bounded wait)."""
        if self._stopped:
            return
        self._stopped = True
        self._wake.set()
        self._thread.join()
        for exporter in self.exporters:
            try:
                exporter.shutdown()
            except Exception:  # noqa: BLE001 - logged; the others are shut down all the same
                _log.warning("telemetry: shutting an exporter down failed", exc_info=True)
