"""The log events' batch (:class:`monkey.telemetry.batch.LogBatch`): what the SDK's batch processor promised
(a bounded queue that drops the oldest, ``OTEL_BLRP_*``, the attribute limits, what is queued sent at the
end), with the SDK's records built on the batch's thread; the SDK's own in-memory exporter receives them."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk._logs import ReadableLogRecord  # noqa: E402
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, LogRecordExportResult  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.util.instrumentation import InstrumentationScope  # noqa: E402

from monkey.telemetry.batch import BATCH, DELAY_MS, QUEUE, LogBatch, settings  # noqa: E402
from monkey.telemetry.export import resource  # noqa: E402

SCOPE = InstrumentationScope("monkey", "test")
LONG = {"OTEL_BLRP_SCHEDULE_DELAY": "600000"}
"""No export by the clock while a test runs: what is sent is what a full batch or the end sends."""


class Held(InMemoryLogRecordExporter):
    """The SDK's in-memory exporter whose first export waits until the test lets it go (a collector that is
    slow to answer): while it waits, the batch's thread is busy and the queue fills."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.go = threading.Event()
        self.batches: list[list[str]] = []

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        self.batches.append([str(r.log_record.attributes["n"]) for r in batch])  # type: ignore[index]
        self.entered.set()
        assert self.go.wait(60), "the test never let the export go"
        return super().export(batch)


def test_a_full_queue_drops_the_oldest_and_the_rest_is_sent_at_the_end() -> None:
    held = Held()
    batch = LogBatch(
        [held], resource(), SCOPE, {**LONG, "OTEL_BLRP_MAX_QUEUE_SIZE": "3", "OTEL_BLRP_MAX_EXPORT_BATCH_SIZE": "3"}, []
    )
    for n in range(3):  # a full batch wakes the thread, which sends it and waits for the collector
        batch.put("monkey.tool_result", {"n": n}, 1_000 + n)
    assert held.entered.wait(60)
    for n in range(3, 8):  # 5 more into a queue of 3: the 2 oldest of them are dropped
        batch.put("monkey.tool_result", {"n": n}, 1_000 + n)
    assert batch.dropped == 2 and [item[1]["n"] for item in batch.queue] == [5, 6, 7]
    held.go.set()
    batch.shutdown()
    assert held.batches == [["0", "1", "2"], ["5", "6", "7"]]
    record = held.get_finished_logs()[-1]
    assert record.log_record.event_name == "monkey.tool_result" and record.log_record.body == "monkey.tool_result"
    assert dict(record.log_record.attributes or {}) == {"event.name": "monkey.tool_result", "n": 7}
    assert record.log_record.timestamp == 1_007 and record.resource == resource()
    assert record.log_record.severity_text == "INFO" and record.instrumentation_scope == SCOPE
    batch.put("monkey.tool_result", {"n": 8}, 1_008)  # after the end: nothing is queued
    assert not batch.queue


def test_force_flush_sends_what_is_queued_on_the_callers_thread() -> None:
    memory = InMemoryLogRecordExporter()
    batch = LogBatch([memory], resource(), SCOPE, LONG, [])
    batch.put("monkey.user_prompt", {"prompt_length": 4}, 5)
    assert not memory.get_finished_logs()  # not a full batch, not the export's time
    assert batch.force_flush() is True
    (record,) = memory.get_finished_logs()
    assert record.log_record.attributes == {"event.name": "monkey.user_prompt", "prompt_length": 4}
    batch.shutdown()
    assert batch.force_flush() is False


class Broken(InMemoryLogRecordExporter):
    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        raise ConnectionError("the collector went away")


def test_an_exporter_that_raises_does_not_stop_the_others_or_the_next_batch() -> None:
    memory = InMemoryLogRecordExporter()
    batch = LogBatch([Broken(), memory], resource(), SCOPE, LONG, [])
    batch.put("monkey.api_error", {"kind": "network"}, 1)
    batch.force_flush()
    batch.put("monkey.api_error", {"kind": "retry"}, 2)
    batch.shutdown()
    assert [r.log_record.attributes["kind"] for r in memory.get_finished_logs()] == [  # type: ignore[index]
        "network",
        "retry",
    ]


def test_the_sdks_attribute_limits_still_apply(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_LOGRECORD_ATTRIBUTE_VALUE_LENGTH_LIMIT", "5")
    monkeypatch.setenv("OTEL_LOGRECORD_ATTRIBUTE_COUNT_LIMIT", "3")
    memory = InMemoryLogRecordExporter()
    batch = LogBatch([memory], resource(), SCOPE, LONG, [])
    batch.put("monkey.user_prompt", {"prompt": "a long prompt", "turn": 1, "prompt_length": 13}, 1)
    batch.shutdown()
    (record,) = memory.get_finished_logs()
    assert dict(record.log_record.attributes or {}) == {"prompt": "a lon", "turn": 1, "prompt_length": 13}
    assert record.dropped_attributes == 1  # event.name, the oldest, made room


@pytest.mark.parametrize(
    ("env", "expected", "said"),
    [
        ({}, (QUEUE, DELAY_MS / 1000, BATCH), []),
        (
            {
                "OTEL_BLRP_MAX_QUEUE_SIZE": "100",
                "OTEL_BLRP_SCHEDULE_DELAY": "250",
                "OTEL_BLRP_MAX_EXPORT_BATCH_SIZE": "10",
            },
            (100, 0.25, 10),
            [],
        ),
        ({"OTEL_BLRP_MAX_EXPORT_BATCH_SIZE": "4096"}, (QUEUE, DELAY_MS / 1000, QUEUE), ["larger than the queue"]),
        (
            {
                "OTEL_BLRP_SCHEDULE_DELAY": "soon",
                "OTEL_BLRP_MAX_QUEUE_SIZE": "0",
                "OTEL_BLRP_MAX_EXPORT_BATCH_SIZE": "-1",
            },
            (QUEUE, DELAY_MS / 1000, BATCH),
            ["OTEL_BLRP_MAX_QUEUE_SIZE='0'", "OTEL_BLRP_SCHEDULE_DELAY='soon'", "OTEL_BLRP_MAX_EXPORT_BATCH_SIZE='-1'"],
        ),
    ],
)
def test_the_batch_variables_and_what_is_wrong_in_them(env: dict[str, str], expected: tuple, said: list[str]) -> None:
    problems: list[str] = []
    assert settings(env, problems) == expected
    assert len(problems) == len(said) and all(s in p for s, p in zip(said, problems, strict=True)), problems


def test_the_resource_hashes_as_the_sdks() -> None:
    ours = resource()
    theirs = Resource(dict(ours.attributes), ours.schema_url)
    assert ours == theirs and hash(ours) == hash(theirs) and {theirs: 1}[ours] == 1
    assert ours.attributes["service.name"] == "monkey"


def test_with_no_exporter_nothing_is_queued_and_no_thread_runs() -> None:
    batch = LogBatch([], resource(), SCOPE, {}, [])
    batch.put("monkey.user_prompt", {"prompt_length": 4}, 1)
    assert not batch.queue and not batch._thread.is_alive()
    batch.shutdown()
