"""The Anthropic backend through the real ``anthropic`` SDK against a local server that
streams the API's recorded wire format (tests/support/fakes/anthropic_server.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from monkey.backends.anthropic import AnthropicBackend
from monkey.backends.base import BackendError
from monkey.backends.retry import RetryingBackend, RetryPolicy
from monkey.events import MessageCompleted, Retry, TextDelta, ThinkingDelta, ToolCallSpec, Usage
from monkey.messages import Message, ModelRequest, ToolSpec
from tests.support.cli import invoke
from tests.support.fakes.anthropic_server import FakeAnthropic, Status, Stream, error_body, reply_events

READ = ToolSpec(
    name="file_read",
    description="Read a file.",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)
TEXT = "Hello! I will read the file first, then tell you what is in it."


def request(*messages: Message, tools: list[ToolSpec] | None = None) -> ModelRequest:
    msgs = list(messages) or [Message(role="user", content="what is in a.txt?")]
    return ModelRequest(
        system="You are monkey.", messages=msgs, tools=[READ] if tools is None else tools, session_id="s-1"
    )


@pytest.fixture
def server():
    with FakeAnthropic() as srv:
        yield srv


def backend(srv: FakeAnthropic, retries: int = 3, **kw) -> RetryingBackend:
    inner = AnthropicBackend(api_key="sk-test", base_url=srv.url, **kw)
    return RetryingBackend(inner, RetryPolicy(max_retries=retries, base_delay=0.01, max_delay=1.0))


async def collect(b, req: ModelRequest | None = None) -> list:
    try:
        return [e async for e in b.stream(req or request())]
    finally:
        await b.aclose()


def texts(events) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


async def test_text_streams_as_deltas_with_usage_and_cost(server):
    server.add(Stream(reply_events(TEXT, input_tokens=1000, output_tokens=200, cache_write=2000, cache_read=5000)))
    events = await collect(backend(server))
    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 5 and texts(events) == TEXT
    [done] = [e for e in events if isinstance(e, MessageCompleted)]
    assert done.text == TEXT and done.stop_reason == "end_turn" and done.tool_calls == []
    [usage] = [e for e in events if isinstance(e, Usage)]
    assert (usage.input_tokens, usage.output_tokens) == (1000, 200)
    assert (usage.cache_creation_tokens, usage.cache_read_tokens) == (2000, 5000)
    # claude-sonnet-4-5: $3 in, $15 out, $3.75 cache write, $0.30 cache read per million
    assert usage.cost_usd == pytest.approx((1000 * 3 + 200 * 15 + 2000 * 3.75 + 5000 * 0.30) / 1e6)
    assert isinstance(events[-1], Usage) and isinstance(events[-2], MessageCompleted)


async def test_request_has_cache_breakpoints_and_the_key(server):
    server.add(Stream(reply_events("ok")))
    await collect(backend(server))
    [req] = server.requests
    body = req["body"]
    assert "sk-test" in (req["headers"].get("x-api-key", "") + req["headers"].get("Authorization", ""))
    assert body["stream"] is True and body["model"] == "claude-sonnet-4-6"
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}


async def test_tool_use_from_split_json_and_thinking(server):
    args = {"path": "docs/a b.txt", "note": 'quotes " and unicode é'}
    server.add(
        Stream(
            reply_events(
                "Reading.",
                thinking="The user wants the file.",
                signature="sig-123",
                tool_calls=[("toolu_01A", "file_read", args)],
                json_piece=4,
            )
        )
    )
    events = await collect(backend(server))
    thinking = "".join(e.text for e in events if isinstance(e, ThinkingDelta))
    assert thinking == "The user wants the file."
    [done] = [e for e in events if isinstance(e, MessageCompleted)]
    assert done.tool_calls == [ToolCallSpec(id="toolu_01A", name="file_read", arguments=args)]
    assert done.stop_reason == "tool_use" and done.thinking_signature == "sig-123"


async def test_malformed_tool_json_becomes_a_call_error_the_model_sees(server):
    events = reply_events("", tool_calls=[("toolu_x", "file_read", {"path": "a"})])
    for _name, data in events:
        if data.get("delta", {}).get("type") == "input_json_delta":
            data["delta"]["partial_json"] = data["delta"]["partial_json"].replace("}", "")
    server.add(Stream(events))
    [done] = [e for e in await collect(backend(server)) if isinstance(e, MessageCompleted)]
    [call] = done.tool_calls
    assert call.arguments == {} and "not a valid JSON object" in call.error and "file_read" in call.error


async def test_error_event_mid_stream_is_retried_without_repeating_text(server):
    overloaded = error_body("overloaded_error", "Overloaded")
    server.add(Stream(reply_events(TEXT, error=overloaded, error_after_text=3)), Stream(reply_events(TEXT)))
    events = await collect(backend(server))
    assert texts(events) == TEXT  # the three deltas shown before the error are not shown again
    [retry] = [e for e in events if isinstance(e, Retry)]
    assert retry.attempt == 1 and "overloaded" in retry.reason
    assert len(server.requests) == 2


async def test_dropped_connection_is_retried_without_repeating_text(server):
    server.add(Stream(reply_events(TEXT), drop_after=6), Stream(reply_events(TEXT)))
    events = await collect(backend(server))
    assert texts(events) == TEXT
    [retry] = [e for e in events if isinstance(e, Retry)]
    assert "stream broke" in retry.reason or "ended before" in retry.reason
    [done] = [e for e in events if isinstance(e, MessageCompleted)]
    assert done.text == TEXT


async def test_401_is_not_retried_and_says_what_to_do(server):
    server.add(Status(401, error_body("authentication_error", "invalid x-api-key")))
    with pytest.raises(BackendError) as err:
        await collect(backend(server))
    assert err.value.kind == "authentication" and not err.value.retryable
    assert "ANTHROPIC_API_KEY" in err.value.message and "invalid x-api-key" in err.value.message
    assert len(server.requests) == 1


async def test_429_honours_retry_after(server):
    server.add(
        Status(429, error_body("rate_limit_error", "Number of requests exceeded"), {"retry-after": "0.2"}),
        Stream(reply_events("fine")),
    )
    events = await collect(backend(server))
    [retry] = [e for e in events if isinstance(e, Retry)]
    assert retry.delay == pytest.approx(0.2) and "rate limit" in retry.reason
    assert texts(events) == "fine"


async def test_529_until_retries_run_out(server):
    server.default = Status(529, error_body("overloaded_error", "Overloaded"))
    seen = []
    with pytest.raises(BackendError) as err:
        async for e in backend(server, retries=2).stream(request()):
            seen.append(e)
    assert [e.attempt for e in seen if isinstance(e, Retry)] == [1, 2]
    assert err.value.kind == "overloaded" and "gave up after 3 attempts" in err.value.message
    assert len(server.requests) == 3


async def test_500_is_retried(server):
    server.add(Status(500, error_body("api_error", "Internal server error")), Stream(reply_events("back")))
    events = await collect(backend(server))
    assert [e.reason.startswith("Anthropic API (500)") for e in events if isinstance(e, Retry)] == [True]
    assert texts(events) == "back"


async def test_connection_refused_is_a_network_error():
    with FakeAnthropic() as srv:
        url = srv.url
    b = RetryingBackend(AnthropicBackend(api_key="k", base_url=url), RetryPolicy(max_retries=1, base_delay=0.01))
    with pytest.raises(BackendError) as err:
        await collect(b)
    assert err.value.kind == "network" and url in err.value.message


async def test_history_keeps_tool_pairs_and_signed_thinking(server):
    server.add(Stream(reply_events("done")))
    call = ToolCallSpec(id="call.1:x", name="file_read", arguments={"path": "a.txt"})
    req = request(
        Message(role="user", content="read a.txt"),
        Message(
            role="assistant", content="", thinking="I should read it", thinking_signature="sig-9", tool_calls=[call]
        ),
        Message(role="tool", tool_call_id="call.1:x", name="file_read", content="hello"),
    )
    await collect(backend(server, thinking_budget=2048), req)
    body = server.requests[0]["body"]
    assistant, result = body["messages"][1], body["messages"][2]
    assert assistant["content"][0] == {"type": "thinking", "thinking": "I should read it", "signature": "sig-9"}
    use = assistant["content"][1]
    assert use["type"] == "tool_use" and use["id"].startswith("call_1_x_")
    assert result["content"][0]["type"] == "tool_result" and result["content"][0]["tool_use_id"] == use["id"]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}


def test_agent_task_through_the_sdk(server, workspace: Path, monkey_home: Path):
    """A whole ``monkey agent --task`` on the Anthropic backend: a tool call, a retry, the answer."""
    (workspace / "a.txt").write_text("forty-two\n")
    server.add(
        Stream(reply_events("Let me look.", tool_calls=[("toolu_1", "file_read", {"path": "a.txt"})])),
        Status(529, error_body("overloaded_error", "Overloaded"), {"retry-after": "0"}),
        Stream(reply_events("The file says forty-two.", cache_read=900)),
    )
    run = invoke(
        [
            "agent",
            "--task",
            "what is in a.txt?",
            "--backend",
            "anthropic",
            "--base-url",
            server.url,
            "--api-key",
            "sk-test",
            "--cwd",
            str(workspace),
            "--output-format",
            "stream-json",
        ],
        home=monkey_home,
    )
    assert run.returncode == 0, run.stderr
    assert [e["output"] for e in run.of_type("tool_result")] == ["forty-two\n"] or "forty-two" in json.dumps(
        run.of_type("tool_result")
    )
    assert len(run.of_type("retry")) == 1
    assert run.of_type("turn_completed")[0]["result"] == "The file says forty-two."
    usage = run.of_type("usage")
    assert len(usage) == 2 and usage[1]["cache_read_tokens"] == 900 and usage[1]["cost_usd"] > 0
    second = server.requests[-1]["body"]["messages"]
    assert second[1]["content"][-1]["type"] == "tool_use"
    assert second[2]["content"][0]["tool_use_id"] == "toolu_1"


def test_api_key_in_the_environment_chooses_anthropic(server, workspace: Path, monkey_home: Path):
    server.add(Stream(reply_events("hi from claude")))
    run = invoke(
        ["agent", "--task", "hi", "--base-url", server.url, "--cwd", str(workspace)],
        home=monkey_home,
        ANTHROPIC_API_KEY="sk-env",
    )
    # --base-url alone means an OpenAI-compatible server; the key alone means Anthropic
    assert run.returncode != 0 or "hi from claude" not in run.stdout
    (monkey_home / "config.toml").write_text(f'[anthropic]\nbase_url = "{server.url}"\n')
    server.queue.clear()
    server.add(Stream(reply_events("hi from claude")))
    run = invoke(["agent", "--task", "hi", "--cwd", str(workspace)], home=monkey_home, ANTHROPIC_API_KEY="sk-env")
    assert run.returncode == 0, run.stderr
    assert "hi from claude" in run.stdout and "Anthropic API" in run.stderr
    headers = server.requests[-1]["headers"]
    assert "sk-env" in headers.get("x-api-key", "") + headers.get("Authorization", "")


async def test_garbage_and_unknown_events_in_the_stream(server):
    """A chunk that is not JSON breaks the attempt (retried); unknown event and delta
    types from a newer API are skipped."""
    good = reply_events("steady")
    garbage = good[:3] + [("content_block_delta", "{not json at all")] + good[3:]
    newer = (
        good[:3]
        + [
            ("shiny_new_event", {"type": "shiny_new_event", "x": 1}),
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "citations_delta", "citation": {}}},
            ),
        ]
        + good[3:]
    )
    server.add(Stream(garbage), Stream(newer))
    events = await collect(backend(server))
    assert len([e for e in events if isinstance(e, Retry)]) == 1
    assert texts(events) == "steady"
    [done] = [e for e in events if isinstance(e, MessageCompleted)]
    assert done.text == "steady"


async def test_a_stream_without_message_stop_is_a_network_error(server):
    server.default = Stream(reply_events("cut")[:-2])
    with pytest.raises(BackendError) as err:
        await collect(backend(server, retries=1))
    assert err.value.kind == "network" and "message_stop" in err.value.message


async def test_cancelling_mid_stream_ends_the_turn_cleanly(server, workspace: Path):
    import asyncio

    from monkey.agent.loop import Agent

    server.add(Stream(reply_events("slow " * 40, piece=5), delay=0.05))
    agent = Agent(backend=backend(server), workspace=workspace)
    events = []
    async for event in agent.run_task("go"):
        events.append(event)
        if isinstance(event, TextDelta) and len(events) < 10:
            agent.cancel()
    await agent.backend.aclose()
    await asyncio.sleep(0)
    assert events[-2].type == "turn_completed" and events[-2].reason == "cancelled"
    assert not any(e.type == "error" for e in events)
