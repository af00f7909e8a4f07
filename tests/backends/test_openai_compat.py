"""The OpenAI-compatible backend against a real ``llama_cpp.server`` serving SmolLM2, and
failover to it from a failing Anthropic primary (a local fake server) in one task."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from monkey.backends.base import BackendError
from monkey.backends.openai_compat import ChunkReader, OpenAICompatBackend
from monkey.backends.retry import RetryingBackend, RetryPolicy
from monkey.events import MessageCompleted, TextDelta, Usage
from monkey.messages import Message, ModelRequest, ToolSpec
from tests.support.llama_server import llama_server
from tests.support.cli import invoke
from tests.support.fakes.anthropic_server import FakeAnthropic, Status, error_body

pytestmark = pytest.mark.timeout(300)  # the model loads (or its server starts) on a loaded machine

READ = ToolSpec(
    name="file_read",
    description="Read a file.",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)


@pytest.fixture(scope="module")
def llama_url(tmp_path_factory: pytest.TempPathFactory):
    with llama_server(tmp_path_factory.mktemp("llama") / "server.log") as url:
        yield url


def _request(prompt: str, tools: list[ToolSpec] | None = None) -> ModelRequest:
    return ModelRequest(
        system="You are a helpful assistant.",
        messages=[Message(role="user", content=prompt)],
        tools=tools or [],
        session_id="s-o",
        max_tokens=24,
    )


async def test_streams_text_from_the_real_server(llama_url):
    backend = OpenAICompatBackend(base_url=llama_url)
    try:
        events = [e async for e in backend.stream(_request("Say hello."))]
    finally:
        await backend.aclose()
    deltas = [e for e in events if isinstance(e, TextDelta)]
    [done] = [e for e in events if isinstance(e, MessageCompleted)]
    assert deltas and done.text == "".join(d.text for d in deltas) and done.text.strip()
    assert done.stop_reason in ("end_turn", "max_tokens")
    assert isinstance(events[-1], Usage) and backend.model.endswith(".gguf")


async def test_history_with_tool_pairs_is_accepted(llama_url):
    from monkey.events import ToolCallSpec

    call = ToolCallSpec(id="toolu_01:x", name="file_read", arguments={"path": "a.txt"})
    req = ModelRequest(
        system="You are monkey.",
        session_id="s",
        max_tokens=8,
        tools=[READ],
        messages=[
            Message(role="user", content="read a.txt"),
            Message(role="assistant", content="", tool_calls=[call]),
            Message(role="tool", tool_call_id=call.id, name="file_read", content="forty-two"),
            Message(role="user", content="what did it say?"),
        ],
    )
    backend = OpenAICompatBackend(base_url=llama_url)
    try:
        events = [e async for e in backend.stream(req)]
    finally:
        await backend.aclose()
    assert any(isinstance(e, MessageCompleted) for e in events)


def test_agent_task_through_the_server(llama_url, workspace: Path, monkey_home: Path):
    (monkey_home / "config.toml").write_text("[openai]\nmax_tokens = 16\n")
    run = invoke(
        [
            "agent",
            "--task",
            "Say hello in one short sentence.",
            "--backend",
            "openai",
            "--base-url",
            llama_url,
            "--cwd",
            str(workspace),
            "--output-format",
            "stream-json",
            "--max-iterations",
            "2",
        ],
        home=monkey_home,
    )
    assert run.returncode in (0, 3), run.stderr
    started = run.of_type("session_started")[0]
    assert started["backend"] == "openai"
    assert run.of_type("text_delta") and run.of_type("message_completed")
    assert run.of_type("turn_completed")[0]["reason"] in ("completed", "max_iterations")


def test_base_url_alone_chooses_the_openai_backend(llama_url, workspace: Path, monkey_home: Path):
    (monkey_home / "config.toml").write_text("[openai]\nmax_tokens = 8\n")
    run = invoke(
        [
            "agent",
            "--task",
            "Say hi.",
            "--base-url",
            llama_url,
            "--cwd",
            str(workspace),
            "--output-format",
            "json",
            "--max-iterations",
            "1",
        ],
        home=monkey_home,
    )
    assert run.returncode in (0, 3), run.stderr
    assert json.loads(run.stdout)["iterations"] == 1


def test_failover_from_a_failing_primary_to_the_local_server(llama_url, workspace: Path, monkey_home: Path):
    """The Anthropic primary answers 500 then 529 for good; the task goes on with the model
    served locally, announced by a ``fallback`` event, in the same run."""
    with FakeAnthropic() as fake:
        fake.add(Status(500, error_body("api_error", "Internal server error")))
        fake.default = Status(529, error_body("overloaded_error", "Overloaded"))
        (monkey_home / "config.toml").write_text(
            '[backend]\nprimary = "anthropic"\nfallbacks = ["openai"]\nmax_retries = 2\nretry_base_delay = 0.01\n'
            f'[anthropic]\nbase_url = "{fake.url}"\n[openai]\nbase_url = "{llama_url}"\nmax_tokens = 16\n'
        )
        run = invoke(
            [
                "agent",
                "--task",
                "Say hello.",
                "--cwd",
                str(workspace),
                "--output-format",
                "stream-json",
                "--max-iterations",
                "2",
            ],
            home=monkey_home,
            ANTHROPIC_API_KEY="sk-test",
        )
    assert run.returncode in (0, 3), run.stderr
    types = [e["type"] for e in run.events]
    assert types.count("retry") == 2
    [fallback] = run.of_type("fallback")
    assert (fallback["from_backend"], fallback["to_backend"], fallback["kind"]) == ("anthropic", "openai", "overloaded")
    assert "gave up after 3 attempts" in fallback["reason"]
    assert types.index("fallback") < types.index("message_completed")
    assert run.of_type("message_completed")[0]["text"].strip()
    assert len(fake.requests) == 3


async def test_http_errors_map_to_the_taxonomy():
    with FakeAnthropic() as fake:
        fake.add(
            Status(
                401,
                {
                    "error": {
                        "message": "Incorrect API key provided",
                        "type": "invalid_request_error",
                        "code": "invalid_api_key",
                    }
                },
            ),
            Status(
                429,
                {
                    "error": {
                        "message": "You exceeded your current quota",
                        "type": "insufficient_quota",
                        "code": "insufficient_quota",
                    }
                },
            ),
            Status(404, {"error": {"message": "model 'nope' not found"}}),
            Status(400, {"error": "registry.ollama.ai/library/gemma does not support tools"}),
        )
        backend = RetryingBackend(
            OpenAICompatBackend(base_url=fake.url + "/v1", model="nope"), RetryPolicy(max_retries=0)
        )
        kinds = []
        for _ in range(4):
            with pytest.raises(BackendError) as err:
                [e async for e in backend.stream(_request("hi", [READ]))]
            kinds.append(err.value.kind)
        await backend.aclose()
    assert kinds == ["authentication", "quota_exceeded", "model_not_found", "invalid_request"]
    assert "does not support tool calls" in err.value.message


def _chunks(*deltas: dict, finish: str = "tool_calls") -> list[str]:
    out = [json.dumps({"choices": [{"index": 0, "delta": d, "finish_reason": None}]}) for d in deltas]
    out.append(json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}))
    out.append(
        json.dumps(
            {
                "choices": [],
                "usage": {"prompt_tokens": 50, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 20}},
            }
        )
    )
    out.append("[DONE]")
    return out


def _read(chunks: list[str], tools=(READ,)) -> tuple[ChunkReader, MessageCompleted]:
    reader = ChunkReader("s", list(tools))
    for data in chunks:
        reader.feed(data)
    return reader, reader.completed()


def test_tool_call_deltas_accumulate_per_index():
    _, done = _read(
        _chunks(
            {
                "tool_calls": [
                    {"index": 0, "id": "call_a", "type": "function", "function": {"name": "file_read", "arguments": ""}}
                ]
            },
            {"tool_calls": [{"index": 1, "id": "call_b", "function": {"name": "file_read", "arguments": '{"pa'}}]},
            {"tool_calls": [{"index": 0, "function": {"arguments": '{"path": '}}]},
            {"tool_calls": [{"index": 0, "function": {"arguments": '"a.txt"}'}}]},
            {"tool_calls": [{"index": 1, "function": {"arguments": 'th": "b.txt"}'}}]},
        )
    )
    assert [(c.id, c.name, c.arguments) for c in done.tool_calls] == [
        ("call_a", "file_read", {"path": "a.txt"}),
        ("call_b", "file_read", {"path": "b.txt"}),
    ]
    assert done.stop_reason == "tool_use"


def test_malformed_arguments_become_an_error_the_model_sees():
    _, done = _read(
        _chunks(
            {"tool_calls": [{"index": 0, "id": "c", "function": {"name": "file_read", "arguments": '{"path": "a.tx'}}]}
        )
    )
    [call] = done.tool_calls
    assert call.arguments == {} and "not a valid JSON object" in call.error


def test_a_call_written_as_text_by_a_server_that_ignored_tools():
    text = '```json\n{"name": "file_read", "arguments": {"path": "a.txt"}}\n```'
    _, done = _read(_chunks({"content": text}, finish="stop"))
    assert [(c.name, c.arguments) for c in done.tool_calls] == [("file_read", {"path": "a.txt"})]
    _, plain = _read(_chunks({"content": '{"name": "not_a_tool"}'}, finish="stop"))
    assert plain.tool_calls == [] and plain.text == '{"name": "not_a_tool"}'


def test_usage_reasoning_and_bad_chunks():
    reader, done = _read(_chunks({"reasoning_content": "hmm"}, {"content": "Hi"}, finish="stop"))
    usage = reader.usage("gpt-4o", None)
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (50, 7, 20)
    assert done.thinking == "hmm" and done.text == "Hi"
    with pytest.raises(BackendError, match="not JSON"):
        ChunkReader("s", []).feed("{oops")
    with pytest.raises(BackendError) as err:
        ChunkReader("s", []).feed(json.dumps({"error": {"message": "model overloaded", "type": "overloaded_error"}}))
    assert err.value.kind == "overloaded" and err.value.retryable


async def test_a_server_that_ignores_stream_sends_one_whole_completion():
    completion = {
        "id": "x",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": "Reading.",
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "file_read", "arguments": '{"path": "a.txt"}'},
                        }
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 4},
    }
    with FakeAnthropic() as fake:
        fake.add(Status(200, completion), Status(200, {"unexpected": True}))
        backend = OpenAICompatBackend(base_url=fake.url + "/v1", model="m")
        events = [e async for e in backend.stream(_request("hi", [READ]))]
        with pytest.raises(BackendError) as err:
            [e async for e in backend.stream(_request("hi", [READ]))]
        await backend.aclose()
    [done] = [e for e in events if isinstance(e, MessageCompleted)]
    assert done.text == "Reading." and [(c.id, c.arguments) for c in done.tool_calls] == [("call_1", {"path": "a.txt"})]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Reading."]
    assert err.value.kind == "network" and "ended before" in err.value.message


async def test_model_switch_checks_the_names_the_server_lists(llama_url, workspace: Path) -> None:
    from monkey.agent.loop import Agent
    from monkey.session.switch import BackendSwitcher, switch_command
    from monkey.config import Config

    switcher = BackendSwitcher(Config(), workspace, flagged="openai", base_url=llama_url, env={})
    agent = Agent(backend=switcher.create("openai", None), workspace=workspace)
    listed = await agent.backend.list_models()
    assert listed
    refused = await switch_command(agent, switcher, "/model", "no-such-model")
    assert not refused.ok and refused.event is None
    assert f"has no model 'no-such-model'; it lists {listed[0]}" in refused.lines[0]
    switched = await switch_command(agent, switcher, "/model", listed[0])
    assert switched.ok and agent.backend.model == listed[0]
    await agent.backend.aclose()
