"""``backends``: monkey's Anthropic streaming path against the bare ``anthropic`` SDK.

Both read the same recorded-format SSE stream (``EVENTS`` text deltas) from the same local
server (tests/support/fakes/anthropic_server.py) through the same SDK, in the same run:

- the baseline consumes ``client.messages.create(stream=True)`` and touches each event;
- monkey's path is what ``monkey agent`` runs: :class:`RetryingBackend` around
  :class:`AnthropicBackend`, which converts the request, turns every SDK event into monkey
  events (``text_delta`` ..., one ``message_completed``, one ``usage`` with the cost).

``backend_stream_per_event``: time per streamed event, monkey over the SDK; target
ratio <= 1.2. ``backend_first_text_delta``: from the call to the first ``text_delta``,
against the SDK's first event; target <= 5 ms more. Runs alternate (ABBA) after a warm-up
and the medians are compared, so both sides see the same machine noise.
"""

from __future__ import annotations

import asyncio
import importlib.util
import time

from benchmarks.common import figure, median

EVENTS = 2000
"""Text deltas per streamed message."""
RUNS = 8
CHUNK_EVENTS = 40
"""SSE events per HTTP chunk, as a fast server batches them."""


def _skipped(reason: str) -> list[dict]:
    return [
        figure(
            "backend_stream_per_event",
            0.0,
            "us",
            "anthropic_sdk_per_event",
            0.0,
            ratio=0.0,
            target="ratio <= 1.2",
            skipped=reason,
        ),
        figure(
            "backend_first_text_delta",
            0.0,
            "ms",
            "anthropic_sdk_first_event",
            0.0,
            ratio=0.0,
            target="<= baseline + 5 ms",
            skipped=reason,
        ),
    ]


async def _sdk_run(client, text_pieces: int) -> tuple[float, float]:
    start = time.perf_counter()
    first = 0.0
    count = 0
    stream = await client.messages.create(
        model="claude-sonnet-4-6", max_tokens=4096, stream=True, messages=[{"role": "user", "content": "write"}]
    )
    async for event in stream:
        if not count:
            first = time.perf_counter() - start
        count += 1
        _ = event.type
    total = time.perf_counter() - start
    if count < text_pieces:
        raise RuntimeError(f"the SDK saw {count} events, expected more than {text_pieces}")
    return total, first


async def _monkey_run(backend, request, text_pieces: int) -> tuple[float, float]:
    from monkey.events import TextDelta

    start = time.perf_counter()
    first = 0.0
    deltas = 0
    async for event in backend.stream(request):
        if isinstance(event, TextDelta):
            if not deltas:
                first = time.perf_counter() - start
            deltas += 1
    total = time.perf_counter() - start
    if deltas != text_pieces:
        raise RuntimeError(f"monkey streamed {deltas} text deltas, expected {text_pieces}")
    return total, first


async def _measure(url: str, runs: int) -> dict[str, list[float]]:
    import anthropic

    from monkey.backends.anthropic import AnthropicBackend
    from monkey.backends.retry import RetryingBackend
    from monkey.messages import Message, ModelRequest

    client = anthropic.AsyncAnthropic(api_key="bench", base_url=url, max_retries=0)
    backend = RetryingBackend(AnthropicBackend(api_key="bench", base_url=url))
    request = ModelRequest(system="", messages=[Message(role="user", content="write")], max_tokens=4096)
    out: dict[str, list[float]] = {"sdk": [], "sdk_first": [], "monkey": [], "monkey_first": []}
    await _sdk_run(client, EVENTS)  # warm-up: connections, imports, pydantic caches
    await _monkey_run(backend, request, EVENTS)
    for i in range(runs):
        order = ("sdk", "monkey") if i % 2 == 0 else ("monkey", "sdk")
        for side in order:
            if side == "sdk":
                total, first = await _sdk_run(client, EVENTS)
            else:
                total, first = await _monkey_run(backend, request, EVENTS)
            out[side].append(total)
            out[f"{side}_first"].append(first)
    await client.close()
    await backend.aclose()
    return out


def bench_backends(runs: int = RUNS) -> list[dict]:
    """The two figures; skipped with the reason when the ``anthropic`` SDK is missing."""
    if importlib.util.find_spec("anthropic") is None:
        return _skipped("the anthropic package is not installed")
    from tests.support.fakes.anthropic_server import FakeAnthropic, Stream, reply_events

    events = reply_events("x" * EVENTS, piece=1, ping=True)
    total_events = len(events)
    with FakeAnthropic() as server:
        server.default = Stream(events, chunk_events=CHUNK_EVENTS)
        times = asyncio.run(_measure(server.url, runs))
    sdk, mine = median(times["sdk"]), median(times["monkey"])
    sdk_first, mine_first = median(times["sdk_first"]) * 1000, median(times["monkey_first"]) * 1000
    per_sdk, per_mine = sdk / total_events * 1e6, mine / total_events * 1e6
    ratio = mine / sdk if sdk else float("inf")
    return [
        figure(
            "backend_stream_per_event",
            per_mine,
            "us",
            "anthropic_sdk_per_event",
            per_sdk,
            ratio=ratio,
            target="ratio <= 1.2",
            ok=ratio <= 1.2,
            events=total_events,
            runs=runs,
        ),
        figure(
            "backend_first_text_delta",
            mine_first,
            "ms",
            "anthropic_sdk_first_event",
            sdk_first,
            target="<= baseline + 5 ms",
            ok=mine_first <= sdk_first + 5.0,
            extra_ms=round(mine_first - sdk_first, 3),
            runs=runs,
        ),
    ]
