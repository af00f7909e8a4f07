"""A real OTLP/HTTP receiver on 127.0.0.1 for the telemetry tests and benchmark.

It decodes what an exporter posts to ``/v1/metrics`` and ``/v1/logs`` with the ``opentelemetry.proto``
classes and answers as a collector does. :class:`Hanging` accepts connections and never answers;
:func:`closed_port` is a port nothing listens on.
"""

from __future__ import annotations

import gzip
import socket
import threading
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_value(v) for v in any_value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in any_value.kvlist_value.values}
    return getattr(any_value, kind)


def _attributes(pairs: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in pairs}


@dataclass
class Point:
    """One data point of a sum metric, as received."""

    name: str
    value: float
    attributes: dict[str, Any]
    resource: dict[str, Any]


@dataclass
class LogEvent:
    """One log record, as received."""

    name: str
    attributes: dict[str, Any]
    body: Any
    resource: dict[str, Any]
    time_unix_nano: int


@dataclass
class Received:
    points: list[Point] = field(default_factory=list)
    logs: list[LogEvent] = field(default_factory=list)
    requests: list[bytes] = field(default_factory=list)
    """Every request body as it came (decompressed), for checks on what was sent at all."""
    authorization: list[str] = field(default_factory=list)
    """The ``Authorization`` header of every request (empty when none was sent)."""


class Receiver:
    """``with Receiver() as r:`` an OTLP/HTTP endpoint at ``r.endpoint``; what came in, in ``r.received``."""

    def __init__(self) -> None:
        self.received = Received()
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # connections kept open between exports, as a collector keeps them

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
                    ExportLogsServiceRequest,
                    ExportLogsServiceResponse,
                )
                from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
                    ExportMetricsServiceRequest,
                    ExportMetricsServiceResponse,
                )

                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                encoding = self.headers.get("Content-Encoding", "")
                if encoding == "gzip":
                    body = gzip.decompress(body)
                elif encoding == "deflate":
                    body = zlib.decompress(body)
                if self.path.endswith("/v1/metrics"):
                    request = ExportMetricsServiceRequest.FromString(body)
                    receiver.take_metrics(request)
                    answer = ExportMetricsServiceResponse().SerializeToString()
                elif self.path.endswith("/v1/logs"):
                    request = ExportLogsServiceRequest.FromString(body)
                    receiver.take_logs(request)
                    answer = ExportLogsServiceResponse().SerializeToString()
                else:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                with receiver.lock:
                    receiver.received.requests.append(body)
                    receiver.received.authorization.append(self.headers.get("Authorization", ""))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def take_metrics(self, request: Any) -> None:
        with self.lock:
            for rm in request.resource_metrics:
                resource = _attributes(rm.resource.attributes)
                for sm in rm.scope_metrics:
                    for metric in sm.metrics:
                        if metric.WhichOneof("data") != "sum":
                            continue
                        for dp in metric.sum.data_points:
                            value = dp.as_double if dp.WhichOneof("value") == "as_double" else dp.as_int
                            self.received.points.append(Point(metric.name, value, _attributes(dp.attributes), resource))

    def take_logs(self, request: Any) -> None:
        with self.lock:
            for rl in request.resource_logs:
                resource = _attributes(rl.resource.attributes)
                for sl in rl.scope_logs:
                    for record in sl.log_records:
                        self.received.logs.append(
                            LogEvent(
                                record.event_name,
                                _attributes(record.attributes),
                                _value(record.body),
                                resource,
                                record.time_unix_nano,
                            )
                        )

    def points(self, name: str) -> list[Point]:
        with self.lock:
            return [p for p in self.received.points if p.name == name]

    def logs(self, name: str) -> list[LogEvent]:
        with self.lock:
            return [e for e in self.received.logs if e.name == name]

    def total(self, name: str, **attributes: Any) -> float:
        """The last value of each series of counter ``name`` whose attributes include ``attributes``, summed
        (cumulative temporality: a series' last point is its total)."""
        last: dict[tuple[Any, ...], float] = {}
        for point in self.points(name):
            if all(point.attributes.get(k) == v for k, v in attributes.items()):
                last[tuple(sorted((k, str(v)) for k, v in point.attributes.items()))] = point.value
        return sum(last.values())

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


class Hanging:
    """A port that accepts connections and never answers (a collector that hangs)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.held: list[socket.socket] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def contacted(self, within: float = 30.0) -> bool:
        """Whether a connection came (one queued by the kernel is taken within a fraction of a second)."""
        import time

        deadline = time.monotonic() + within
        while not self.held and time.monotonic() < deadline:
            time.sleep(0.05)
        return bool(self.held)

    def _accept(self) -> None:
        self.sock.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.held.append(conn)  # read nothing, answer nothing

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()
        for conn in self.held:
            conn.close()
        self.sock.close()


def closed_port() -> str:
    """An endpoint on 127.0.0.1 nothing listens on (a collector that is down)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def main() -> None:
    """``python -m tests.support.fakes.otlp_receiver``: serve until stdin closes; the first line printed is the
    endpoint, the last what was received (``{"points": N, "logs": N}``)."""
    import json
    import sys

    with Receiver() as receiver:
        print(receiver.endpoint, flush=True)
        sys.stdin.read()
        print(json.dumps({"points": len(receiver.received.points), "logs": len(receiver.received.logs)}), flush=True)


if __name__ == "__main__":
    main()
