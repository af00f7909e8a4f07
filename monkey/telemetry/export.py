"""The OpenTelemetry SDK's side: a meter provider and the log events' batch, with the OTLP (or console) exporters.

One export per process, shared by its sessions (:func:`acquire`, :func:`release`): the last session
to end shuts it down, waiting :data:`~monkey.telemetry.SHUTDOWN_SECONDS` at most. The SDK reads
what it reads itself (``OTEL_EXPORTER_OTLP_ENDPOINT``, ``_HEADERS``, ``_TIMEOUT``, ``_COMPRESSION``,
``OTEL_METRIC_EXPORT_INTERVAL``, ``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_SERVICE_NAME``, the attribute
limits); this module reads the protocol (``OTEL_EXPORTER_OTLP_PROTOCOL`` and the per-signal ones),
which exporters (``OTEL_METRICS_EXPORTER``, ``OTEL_LOGS_EXPORTER``: ``otlp``, ``console``, ``none``)
and, in :mod:`monkey.telemetry.batch`, the ``OTEL_BLRP_*`` variables.

Metrics are summed in memory (observable counters read at each export) and sent by the periodic
reader's thread; log events wait in a bounded queue (``OTEL_BLRP_MAX_QUEUE_SIZE``, 2048 by default:
the oldest are dropped when a collector cannot keep up) and are built into the SDK's records and sent
by the batch's thread (:class:`~monkey.telemetry.batch.LogBatch`). Nothing here runs an export on the
caller's thread, and the SDK's own exit handlers (30 s each) are replaced by :func:`release`'s bounded
wait.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import logging
import sys
import threading
from collections.abc import Mapping
from typing import Any

from opentelemetry.metrics import Observation
from opentelemetry.sdk._logs.export import ConsoleLogRecordExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    ConsoleMetricExporter,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.util.instrumentation import InstrumentationScope

import monkey
from monkey.telemetry.batch import LogBatch

__all__ = ["COUNTERS", "Exporting", "acquire", "release"]

COUNTERS: dict[str, tuple[str, str]] = {
    "monkey.session.count": ("{session}", "Sessions started"),
    "monkey.token.usage": ("tokens", "Tokens used, by type (input, output, cacheRead, cacheCreation) and model"),
    "monkey.cost.usage": ("USD", "Cost of the model calls, by model"),
    "monkey.lines_of_code.count": ("{line}", "Lines changed by monkey's tools, by type (added, removed)"),
    "monkey.tool.decision": ("{decision}", "Decisions on tool calls, by tool, decision and source"),
    "monkey.active_time.total": ("s", "Time monkey worked (cli) and a person took to answer (user)"),
}
"""The metrics, by name: unit and description."""

_log = logging.getLogger("monkey.telemetry")
_PROTOCOLS = ("http/protobuf", "http/json", "grpc")


class _Forward(logging.Handler):
    """The SDK's own log records (an export that failed) go to monkey's log, never to stderr by themselves."""

    def emit(self, record: logging.LogRecord) -> None:
        _log.handle(record)


def _quiet_sdk() -> None:
    sdk = logging.getLogger("opentelemetry")
    if not any(isinstance(h, _Forward) for h in sdk.handlers):
        sdk.addHandler(_Forward())
    sdk.propagate = False


def _protocol(env: Mapping[str, str], signal: str, problems: list[str]) -> str:
    name = f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL"
    chosen = (env.get(name) or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf").strip().lower()
    if chosen not in _PROTOCOLS:
        problems.append(
            f"telemetry: unknown OTLP protocol {chosen!r} for {signal} (http/protobuf, grpc); sending http/protobuf"
        )
        return "http/protobuf"
    if chosen == "http/json":
        problems.append(
            f"telemetry: the OpenTelemetry Python SDK has no stable http/json exporter; {signal} are "
            "sent as http/protobuf to the same endpoint (OTLP/HTTP receivers take both)"
        )
        return "http/protobuf"
    return chosen


def _kinds(env: Mapping[str, str], signal: str, problems: list[str]) -> list[str]:
    said = env.get(f"OTEL_{signal.upper()}_EXPORTER", "otlp")
    kinds = [k.strip().lower() for k in said.split(",") if k.strip()] or ["otlp"]
    known = [k for k in kinds if k in ("otlp", "console", "none")]
    if len(known) < len(kinds):
        problems.append(f"telemetry: OTEL_{signal.upper()}_EXPORTER={said!r}: only otlp, console and none are known")
    return [k for k in dict.fromkeys(known) if k != "none"]


def _metric_exporter(kind: str, env: Mapping[str, str], problems: list[str]) -> Any:
    if kind == "console":
        return ConsoleMetricExporter(out=sys.stderr)
    if _protocol(env, "metrics", problems) == "grpc":
        try:
            from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
                OTLPMetricExporter,
            )
        except ImportError:
            problems.append(
                "telemetry: grpc needs opentelemetry-exporter-otlp-proto-grpc (the otel extra); "
                "metrics are not exported"
            )
            return None
        return OTLPMetricExporter()
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
        OTLPMetricExporter as HttpMetricExporter,
    )

    return HttpMetricExporter()


def _log_exporter(kind: str, env: Mapping[str, str], problems: list[str]) -> Any:
    if kind == "console":
        return ConsoleLogRecordExporter(out=sys.stderr)
    if _protocol(env, "logs", problems) == "grpc":
        try:
            from opentelemetry.exporter.otlp.proto.grpc._log_exporter import (
                OTLPLogExporter,
            )
        except ImportError:
            problems.append(
                "telemetry: grpc needs opentelemetry-exporter-otlp-proto-grpc (the otel extra); events are not exported"
            )
            return None
        return OTLPLogExporter()
    from opentelemetry.exporter.otlp.proto.http._log_exporter import (
        OTLPLogExporter as HttpLogExporter,
    )

    return HttpLogExporter()


class _Resource(Resource):
    """A resource whose hash is computed once: the SDK's is a JSON dump of its attributes, and the log
    encoder hashes the resource of every record it sends."""

    def __init__(self, resource: Resource) -> None:
        super().__init__(dict(resource.attributes), resource.schema_url)
        self._hash = super().__hash__()

    def __hash__(self) -> int:
        return self._hash


def resource() -> Resource:
    """The process's resource: ``OTEL_RESOURCE_ATTRIBUTES`` and ``OTEL_SERVICE_NAME`` as the SDK reads them,
    ``service.version``, and ``service.name`` ``monkey`` unless one is given."""
    found = Resource.create({"service.version": monkey.__version__})
    if str(found.attributes.get("service.name", "")).startswith("unknown_service"):
        found = found.merge(Resource({"service.name": "monkey"}))
    return _Resource(found)


class Exporting:
    """The meter provider, the counters and the log events' batch of one process."""

    def __init__(self, env: Mapping[str, str], problems: list[str]) -> None:
        _quiet_sdk()
        where = resource()
        readers = [
            PeriodicExportingMetricReader(exporter)
            for kind in _kinds(env, "metrics", problems)
            if (exporter := _metric_exporter(kind, env, problems)) is not None
        ]
        self.meters = MeterProvider(resource=where, metric_readers=readers, shutdown_on_exit=False)
        exporters = [
            exporter
            for kind in _kinds(env, "logs", problems)
            if (exporter := _log_exporter(kind, env, problems)) is not None
        ]
        self.logs = LogBatch(exporters, where, InstrumentationScope("monkey", monkey.__version__), env, problems)
        meter = self.meters.get_meter("monkey", monkey.__version__)
        self._sums: dict[str, dict[tuple[Any, ...], list[Any]]] = {name: {} for name in COUNTERS}
        self._sums_lock = threading.Lock()
        for name, (unit, text) in COUNTERS.items():
            meter.create_observable_counter(
                name, callbacks=[functools.partial(self._observe, name)], unit=unit, description=text
            )

    def add(self, name: str, value: float, attributes: dict[str, Any]) -> None:
        """Add ``value`` to the counter ``name``: a sum kept here, which the reader's thread reads when it
        exports (an observable counter: a microsecond on the loop's thread, not the SDK's tens)."""
        key = tuple(attributes.items())
        with self._sums_lock:
            series = self._sums[name].get(key)
            if series is None:
                self._sums[name][key] = [value, dict(attributes)]
            else:
                series[0] += value

    def _observe(self, name: str, options: Any) -> list[Observation]:
        with self._sums_lock:
            return [Observation(total, attributes) for total, attributes in self._sums[name].values()]

    def log(self, name: str, attributes: dict[str, Any], ts: float) -> None:
        """Queue the log event ``name`` (the batch's thread builds the record and exports it); ``attributes``
        must not change after."""
        self.logs.put(name, attributes, int(ts * 1e9))

    def shutdown(self) -> None:
        """Flush and stop the log events and the meter provider (blocking; see :func:`release` for the bounded
        wait)."""
        try:
            self.logs.shutdown()
        finally:
            self.meters.shutdown()


_lock = threading.Lock()
_shared: Exporting | None = None
_problems: list[str] = []
_users = 0


def acquire(env: Mapping[str, str], timeout: float) -> tuple[Exporting, list[str]]:
    """The process's export, started by its first session; what to tell the person about it. ``timeout``:
    what a process that ends without ending its sessions waits for the last export, at most."""
    global _shared, _users, _problems
    with _lock:
        if _shared is None:
            _problems = []
            _shared = Exporting(env, _problems)
            if _users == 0 and not getattr(acquire, "registered", False):
                atexit.register(_at_exit, timeout)
                acquire.registered = True  # type: ignore[attr-defined]
        _users += 1
        return _shared, list(_problems)


def _stop(exporting: Exporting) -> threading.Thread:
    """Shut ``exporting`` down on a daemon thread (a collector that never answers holds only that thread)."""
    thread = threading.Thread(
        target=_shutdown_quietly, args=(exporting,), name="monkey-telemetry-shutdown", daemon=True
    )
    thread.start()
    return thread


def _shutdown_quietly(exporting: Exporting) -> None:
    try:
        exporting.shutdown()
    except Exception:  # noqa: BLE001 - logged; the session has ended anyway
        _log.warning("telemetry shutdown failed", exc_info=True)


async def release(timeout: float) -> None:
    """One session is done with the export; the last one shuts it down, waiting ``timeout`` seconds at most."""
    global _shared, _users
    with _lock:
        _users = max(0, _users - 1)
        if _users or _shared is None:
            return
        exporting, _shared = _shared, None
    thread = _stop(exporting)
    deadline = asyncio.get_running_loop().time() + timeout
    while thread.is_alive() and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.02)
    if thread.is_alive():
        _log.warning("telemetry: the collector did not take the last export within %.1f s; it is dropped", timeout)


def _at_exit(timeout: float) -> None:
    """A process that ends without its sessions' end (a crash of a front end): the same bounded wait."""
    global _shared
    with _lock:
        exporting, _shared = _shared, None
    if exporting is not None:
        _stop(exporting).join(timeout)
