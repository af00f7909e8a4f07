"""The telemetry as a process sees it: off, nothing of OpenTelemetry is imported; a collector that is
down or never answers does not hold a session's end (the process's exit is what is checked)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from monkey.telemetry import SHUTDOWN_SECONDS
from tests.support.checkpoints import write_script
from tests.support.cli import monkey_env
from tests.support.fakes.otlp_receiver import Hanging, Receiver, closed_port

pytestmark = pytest.mark.subprocess

LONG = 600.0
"""Seconds an export may take before the SDK gives up (OTEL_EXPORTER_OTLP_TIMEOUT, the export timeouts): a
session's end that waited for the export would take this long."""
BOUND = 45.0
"""What the whole process may take here at most: far more than :data:`SHUTDOWN_SECONDS` and the process's own
work on a loaded machine (about 10 s on 2 busy cores), far less than :data:`LONG` or the minute the SDK's own
shutdown would wait (30 s for the events, 30 s for the metrics)."""

_MODULES = """
import json, sys
from monkey.cli import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "otel": sorted(m for m in sys.modules if m.startswith("opentelemetry"))}),
      file=sys.stderr)
"""


def _run(
    args: list[str], home: Path, timeout: float = LONG, **env: str
) -> tuple[subprocess.CompletedProcess[str], dict]:
    proc = subprocess.run(
        [sys.executable, "-c", _MODULES, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=monkey_env(home, **env),
        stdin=subprocess.DEVNULL,
    )
    last = proc.stderr.strip().splitlines()[-1]
    return proc, json.loads(last)


def _task(workspace: Path, tmp_path: Path) -> list[str]:
    script = write_script(
        tmp_path / "script.json",
        [{"text": "", "tool_calls": [{"name": "file_read", "arguments": {"path": "README.md"}}]}, {"text": "done"}],
    )
    return [
        "agent",
        "--backend",
        "scripted",
        "--script",
        str(script),
        "--cwd",
        str(workspace),
        "--output-format",
        "json",
        "--task",
        "read it",
    ]


def test_off_nothing_of_opentelemetry_is_imported(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    proc, seen = _run(_task(workspace, tmp_path), monkey_home)
    assert seen == {"code": 0, "otel": []}, proc.stderr
    assert json.loads(proc.stdout)["result"] == "done"


def test_on_the_sdk_is_used_and_version_stays_light(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    with Receiver() as receiver:
        proc, seen = _run(
            _task(workspace, tmp_path),
            monkey_home,
            MONKEY_ENABLE_TELEMETRY="1",
            OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
        )
        assert seen["code"] == 0 and "opentelemetry.sdk.metrics" in seen["otel"], proc.stderr  # the check can fail
        assert receiver.total("monkey.session.count") == 1
    proc, seen = _run(["--version"], monkey_home, MONKEY_ENABLE_TELEMETRY="1")
    assert seen == {"code": 0, "otel": []} and proc.stdout.startswith("monkey "), proc.stderr


@pytest.mark.parametrize("collector", ["down", "hanging"])
@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_a_collector_down_or_hanging_does_not_hold_the_session(
    collector: str, protocol: str, workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    if protocol == "grpc":
        pytest.importorskip("opentelemetry.exporter.otlp.proto.grpc")
    slow = {
        "OTEL_EXPORTER_OTLP_TIMEOUT": str(int(LONG)),
        "OTEL_METRIC_EXPORT_TIMEOUT": str(int(LONG * 1000)),
        "OTEL_BLRP_EXPORT_TIMEOUT": str(int(LONG * 1000)),
        "OTEL_BLRP_SCHEDULE_DELAY": "1",
        "OTEL_METRIC_EXPORT_INTERVAL": "1",
    }  # exports start at once and would wait LONG for an answer
    assert SHUTDOWN_SECONDS * 10 < BOUND < LONG
    started = time.monotonic()
    if collector == "down":
        endpoint = closed_port()
        proc, seen = _run(
            _task(workspace, tmp_path),
            monkey_home,
            MONKEY_ENABLE_TELEMETRY="1",
            OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
            OTEL_EXPORTER_OTLP_PROTOCOL=protocol,
            **slow,
        )
    else:
        with Hanging() as hanging:
            proc, seen = _run(
                _task(workspace, tmp_path),
                monkey_home,
                MONKEY_ENABLE_TELEMETRY="1",
                OTEL_EXPORTER_OTLP_ENDPOINT=hanging.endpoint,
                OTEL_EXPORTER_OTLP_PROTOCOL=protocol,
                **slow,
            )
            assert hanging.contacted(), "the exporter reached the collector that hangs"
    took = time.monotonic() - started
    assert took < BOUND, f"the process took {took:.1f}s to end"  # waiting for the export would take LONG
    assert seen["code"] == 0 and json.loads(proc.stdout)["result"] == "done", proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
