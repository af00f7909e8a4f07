"""The OpenTelemetry export: a real session on the scripted backend, a real OTLP/HTTP receiver on 127.0.0.1.

The session runs through the CLI in-process (``monkey agent --task``), its Session's one pump observed;
the receiver decodes what the SDK's exporters post with the ``opentelemetry.proto`` classes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from monkey.cli import main
from tests.support.checkpoints import write_script
from tests.support.fakes.otlp_receiver import Receiver

pytest.importorskip("opentelemetry.sdk")

KEY = "sk-ant-api03-" + "Q7x9" * 6
"""A credential the model puts in a command (a provider's well-known prefix)."""
ENV_SECRET = "pa55-W0rd-only-in-env-93"
"""A credential known only as an environment variable's value (MY_SERVICE_TOKEN)."""
PROMPT = "write a.txt then clean up; the word zanzibar marks this prompt"

TURNS = [
    {
        "text": "writing",
        "tool_calls": [{"name": "file_write", "arguments": {"path": "a.txt", "content": "one\ntwo\n"}}],
        "usage": {
            "input_tokens": 100,
            "output_tokens": 20,
            "cache_read_tokens": 30,
            "cache_creation_tokens": 7,
            "cost_usd": 0.25,
        },
    },
    {
        "text": "",
        "tool_calls": [
            {"name": "shell_execute", "arguments": {"command": f"echo {KEY} {ENV_SECRET}"}},
            {"name": "file_delete", "arguments": {"path": "a.txt"}},
        ],
        "usage": {"input_tokens": 200, "output_tokens": 10, "cost_usd": 0.5},
    },
    {"text": "done", "usage": {"input_tokens": 300, "output_tokens": 5, "cost_usd": 0.25}},
]


@pytest.fixture
def otel_env(monkeypatch: pytest.MonkeyPatch):
    """The telemetry turned on, exporting to a receiver started for the test."""
    for name in (
        "OTEL_LOG_USER_PROMPTS",
        "OTEL_LOG_TOOL_DETAILS",
        "OTEL_LOG_WORKSPACE_PATH",
        "OTEL_SDK_DISABLED",
        "OTEL_METRICS_EXPORTER",
        "OTEL_LOGS_EXPORTER",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ):
        monkeypatch.delenv(name, raising=False)
    with Receiver() as receiver:
        monkeypatch.setenv("MONKEY_ENABLE_TELEMETRY", "1")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        monkeypatch.setenv("MY_SERVICE_TOKEN", ENV_SECRET)
        yield receiver


def run_task(workspace: Path, monkey_home: Path, tmp_path: Path, turns: list[dict] = TURNS) -> int:
    (monkey_home / "config.toml").write_text('[approvals]\nallow = ["shell_execute(echo)"]\ndeny = ["file_delete"]\n')
    script = write_script(tmp_path / "script.json", turns)
    return main(
        [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(workspace),
            "--output-format",
            "json",
            "--mode",
            "accept-edits",
            "--task",
            PROMPT,
        ]
    )


def test_a_session_sends_the_named_metrics_and_events(
    otel_env: Receiver, workspace: Path, monkey_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run_task(workspace, monkey_home, tmp_path)
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["result"] == "done" and code == 4, (captured.out, captured.err)  # 4: a call was denied
    r = otel_env
    sid = out["session_id"]

    assert r.total("monkey.session.count") == 1
    assert r.total("monkey.token.usage", type="input") == 600
    assert r.total("monkey.token.usage", type="output") == 35
    assert r.total("monkey.token.usage", type="cacheRead") == 30
    assert r.total("monkey.token.usage", type="cacheCreation") == 7
    assert r.total("monkey.token.usage", model="scripted") == 672
    assert r.total("monkey.cost.usage", model="scripted") == pytest.approx(1.0)
    assert r.total("monkey.lines_of_code.count", type="added") == 2
    decisions = {
        (p.attributes["tool"], p.attributes["decision"], p.attributes["source"]): p.value
        for p in r.points("monkey.tool.decision")
    }
    assert decisions == {
        ("file_write", "accept", "mode"): 1,
        ("shell_execute", "accept", "rule"): 1,
        ("file_delete", "reject", "rule"): 1,
    }
    assert r.total("monkey.active_time.total", type="cli") > 0

    every = [p.attributes for p in r.received.points] + [e.attributes for e in r.received.logs]
    for attributes in every:  # the common attributes, on every metric point and event
        assert attributes["session.id"] == sid
        assert attributes["backend"] == "scripted"
        assert len(attributes["workspace.hash"]) == 16 and "workspace.path" not in attributes
        assert attributes["monkey.version"]
    assert r.received.points[0].resource["service.name"] == "monkey"

    (prompt,) = r.logs("monkey.user_prompt")
    assert prompt.attributes["prompt_length"] == len(PROMPT) and "prompt" not in prompt.attributes
    requests = r.logs("monkey.api_request")
    assert [e.attributes["input_tokens"] for e in requests] == [100, 200, 300]
    assert [e.attributes["cost_usd"] for e in requests] == [0.25, 0.5, 0.25]
    assert all(
        e.attributes["model"] == "scripted"
        and e.attributes["duration_ms"] > 0
        and 0 < e.attributes["ttft_ms"] <= e.attributes["duration_ms"]
        for e in requests
    )
    tool_decisions = r.logs("monkey.tool_decision")
    assert sorted(e.attributes["source"] for e in tool_decisions) == ["mode", "rule", "rule"]
    results = {e.attributes["call_id"]: e.attributes for e in r.logs("monkey.tool_result")}
    assert sorted((a["tool"], a["success"]) for a in results.values()) == [
        ("file_delete", False),
        ("file_write", True),
        ("shell_execute", True),
    ]
    assert all("tool_parameters" not in a and a["duration_ms"] >= 0 for a in results.values())
    wire = b"".join(r.received.requests)
    assert b"zanzibar" not in wire and str(workspace).encode() not in wire  # no prompt, no path by default


def test_prompts_and_arguments_are_sent_when_asked_with_secrets_redacted(
    otel_env: Receiver,
    workspace: Path,
    monkey_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("OTEL_LOG_USER_PROMPTS", "1")
    monkeypatch.setenv("OTEL_LOG_TOOL_DETAILS", "1")
    monkeypatch.setenv("OTEL_LOG_WORKSPACE_PATH", "1")
    turns = [{**TURNS[0], "text": f"the key is {KEY}"}, *TURNS[1:]]
    assert run_task(workspace, monkey_home, tmp_path, turns) == 4
    r = otel_env
    (prompt,) = r.logs("monkey.user_prompt")
    assert prompt.attributes["prompt"] == PROMPT
    assert prompt.attributes["workspace.path"] == str(workspace)
    shells = [
        json.loads(e.attributes["tool_parameters"])["command"]
        for e in r.logs("monkey.tool_result")
        if e.attributes["tool"] == "shell_execute"
    ]
    assert shells == ["echo [redacted] [redacted]"]
    (write,) = [e for e in r.logs("monkey.tool_result") if e.attributes["tool"] == "file_write"]
    assert json.loads(write.attributes["tool_parameters"]) == {"path": "a.txt", "content": "one\ntwo\n"}
    wire = b"".join(r.received.requests)
    assert KEY.encode() not in wire and ENV_SECRET.encode() not in wire
    assert KEY.encode() in (workspace / ".." / "script.json").resolve().read_bytes()  # it was there to leak


def test_an_api_error_is_an_event(
    otel_env: Receiver, workspace: Path, monkey_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    turns = [{"error": f"the server broke (key {KEY})", "error_kind": "authentication"}]
    assert run_task(workspace, monkey_home, tmp_path, turns) != 0
    (error,) = otel_env.logs("monkey.api_error")
    assert error.attributes["kind"] == "authentication" and error.attributes["fatal"] is True
    assert error.attributes["error"].startswith("the server broke (key [redacted]")
    assert error.attributes["model"] == "scripted"


def test_the_sdk_reads_the_standard_variables_and_http_json_is_said_once(
    otel_env: Receiver,
    workspace: Path,
    monkey_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "otlp,prometheus")
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "team=infra")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer collector-t0ken-77")
    monkeypatch.setenv("OTEL_LOG_TOOL_DETAILS", "1")
    read = {"name": "file_read", "arguments": {"path": "notes-collector-t0ken-77.txt"}}
    run_task(workspace, monkey_home, tmp_path, [{"text": "", "tool_calls": [read]}, {"text": "done"}])
    err = capsys.readouterr().err
    assert err.count("no stable http/json exporter") == 2  # metrics and events, each said once
    assert "OTEL_METRICS_EXPORTER='otlp,prometheus': only otlp, console and none are known" in err
    r = otel_env
    assert r.total("monkey.session.count") == 1 and r.logs("monkey.api_request")
    assert r.received.points[0].resource["team"] == "infra" and r.received.logs[0].resource["team"] == "infra"
    assert r.received.points[0].resource["service.name"] == "monkey"
    assert set(r.received.authorization) == {"Bearer collector-t0ken-77"}
    (result,) = r.logs("monkey.tool_result")  # the header's token, in an argument, is not sent back
    assert json.loads(result.attributes["tool_parameters"]) == {"path": "notes-[redacted].txt"}
    assert b"collector-t0ken-77" not in b"".join(r.received.requests)


def test_batch_variables_the_sdk_refused_are_told_and_the_events_still_sent(
    otel_env: Receiver,
    workspace: Path,
    monkey_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("OTEL_BLRP_MAX_EXPORT_BATCH_SIZE", "4096")  # more than the 2048 queued at most
    monkeypatch.setenv("OTEL_BLRP_SCHEDULE_DELAY", "soon")
    assert run_task(workspace, monkey_home, tmp_path) == 4
    err = capsys.readouterr().err
    assert "OTEL_BLRP_MAX_EXPORT_BATCH_SIZE (4096) is larger than the queue (2048)" in err
    assert "OTEL_BLRP_SCHEDULE_DELAY='soon' is not a positive integer; using 1000" in err
    assert len(otel_env.logs("monkey.tool_result")) == 3 and otel_env.total("monkey.session.count") == 1


def test_the_receiver_keeps_a_connection_open_between_exports_as_a_collector_does() -> None:
    import http.client

    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    with Receiver() as receiver:
        conn = http.client.HTTPConnection(receiver.endpoint.removeprefix("http://"), timeout=30)
        for path, status in (("/v1/logs", 200), ("/v1/traces", 404), ("/v1/logs", 200)):
            conn.request(
                "POST", path, ExportLogsServiceRequest().SerializeToString(), {"Content-Type": "application/x-protobuf"}
            )
            answer = conn.getresponse()
            answer.read()
            assert answer.status == status and not answer.will_close, path
        conn.close()
    assert len(receiver.received.requests) == 2
