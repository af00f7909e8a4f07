"""``parser``: Claude Code stream-json parse throughput against raw JSON decoding and the SDK.

A ~60 MB stream-json file is generated from the recorded shapes in
tests/fixtures/claude_code (mostly ``stream_event`` text and ``input_json_delta`` deltas,
with tool calls, tool results and the ``assistant`` / ``user`` lines around them). Each
contender reads the same bytes, split into lines, in the same run, interleaved:

- monkey's :class:`ClaudeStreamParser` fed in 64 KiB chunks (framing included);
- raw ``msgspec.json.decode`` of each line (and ``orjson.loads`` when installed): what
  any parser must at least do, target >= 0.33x of it;
- the official ``claude-agent-sdk`` message parser (``json.loads`` then its
  ``parse_message``, as its transport does): target monkey >= 2x of it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from benchmarks.common import figure, interleaved, median

ROOT = Path(__file__).resolve().parent.parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "claude_code"
SIZE = 60 * 1024 * 1024
RUNS = 3


def _turn(n: int) -> list[str]:
    """One recorded-shape assistant turn: streamed text, a streamed tool call, its result."""
    sid = "8f0c2a51-3d7e-4c1b-9a55-2f4e1d0b7c63"
    mid = f"msg_{n:08d}"

    def se(ev: dict) -> str:
        return json.dumps(
            {
                "type": "stream_event",
                "event": ev,
                "session_id": sid,
                "parent_tool_use_id": None,
                "uuid": f"u{n}-{len(ev)}",
            }
        )

    lines = [
        se(
            {
                "type": "message_start",
                "message": {
                    "id": mid,
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet-4-5",
                    "content": [],
                    "stop_reason": None,
                    "usage": {"input_tokens": 9},
                },
            }
        ),
        se({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    ]
    words = [f"word{i} of the answer, " for i in range(60)]
    lines += [
        se({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": w}}) for w in words
    ]
    lines.append(se({"type": "content_block_stop", "index": 0}))
    args = {"file_path": f"/tmp/proj/src/module_{n}.py", "content": "def f(x):\n    return x * 2\n" * 20}
    raw = json.dumps(args)
    lines.append(
        se(
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "tool_use", "id": f"toolu_{n}", "name": "Write", "input": {}},
            }
        )
    )
    lines += [
        se(
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": raw[i : i + 40]},
            }
        )
        for i in range(0, len(raw), 40)
    ]
    lines.append(se({"type": "content_block_stop", "index": 1}))
    lines.append(
        json.dumps(
            {
                "type": "assistant",
                "message": {
                    "id": mid,
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet-4-5",
                    "content": [
                        {"type": "text", "text": "".join(words)},
                        {"type": "tool_use", "id": f"toolu_{n}", "name": "Write", "input": args},
                    ],
                    "stop_reason": None,
                    "usage": {"input_tokens": 9},
                },
                "parent_tool_use_id": None,
                "session_id": sid,
                "uuid": f"a{n}",
            }
        )
    )
    lines.append(se({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 90}}))
    lines.append(se({"type": "message_stop"}))
    lines.append(
        json.dumps(
            {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": f"toolu_{n}",
                            "content": "File created successfully\n" * 8,
                        }
                    ],
                },
                "parent_tool_use_id": None,
                "session_id": sid,
                "uuid": f"r{n}",
            }
        )
    )
    return lines


def build_stream(size: int = SIZE) -> bytes:
    """About ``size`` bytes of stream-json: the recorded init, many turns, the recorded result."""
    recorded = (FIXTURES / "text.jsonl").read_bytes().splitlines()
    out = [recorded[0]]
    total = len(recorded[0])
    n = 0
    while total < size:
        for line in _turn(n):
            b = line.encode()
            out.append(b)
            total += len(b) + 1
        n += 1
    out.append(recorded[-1])
    return b"\n".join(out) + b"\n"


def _ours(data: bytes) -> float:
    from monkey.backends.claude_code.parser import ClaudeStreamParser

    start = time.perf_counter()
    p = ClaudeStreamParser()
    step = 1 << 16
    for i in range(0, len(data), step):
        p.feed(data[i : i + step])
    p.close()
    took = time.perf_counter() - start
    assert p.unknown == 0 and p.result is not None, (p.unknown, p.error)
    return took


def _msgspec(data: bytes) -> float:
    import msgspec

    decode = msgspec.json.Decoder().decode
    start = time.perf_counter()
    for line in data.split(b"\n"):
        if line:
            decode(line)
    return time.perf_counter() - start


def _orjson(data: bytes) -> float:
    import orjson

    loads = orjson.loads
    start = time.perf_counter()
    for line in data.split(b"\n"):
        if line:
            loads(line)
    return time.perf_counter() - start


def _sdk(data: bytes) -> float:
    from claude_agent_sdk._internal.message_parser import parse_message

    loads = json.loads
    start = time.perf_counter()
    for line in data.split(b"\n"):
        if line:
            parse_message(loads(line))
    return time.perf_counter() - start


def bench_parser() -> list[dict]:
    data = build_stream()
    mb = len(data) / 1e6
    ours, raw = interleaved(lambda: _ours(data), lambda: _msgspec(data), RUNS)
    ours_mbs, raw_mbs = mb / median(ours), mb / median(raw)
    figs = [
        figure(
            "claude stream-json parse",
            ours_mbs,
            "MB/s",
            "msgspec.json.decode per line",
            raw_mbs,
            target=">= 0.33x raw decode",
            ok=ours_mbs >= 0.33 * raw_mbs,
            size_mb=round(mb, 1),
        )
    ]
    try:
        import orjson  # noqa: F401
    except ImportError:
        pass
    else:
        oj = mb / median([_orjson(data) for _ in range(RUNS)])
        figs.append(
            figure(
                "claude stream-json parse",
                ours_mbs,
                "MB/s",
                "orjson.loads per line",
                oj,
                target=">= 0.33x raw decode",
                ok=ours_mbs >= 0.33 * oj,
                size_mb=round(mb, 1),
            )
        )
    try:
        from claude_agent_sdk._internal.message_parser import parse_message  # noqa: F401
    except ImportError:
        figs.append(
            figure(
                "claude stream-json parse",
                ours_mbs,
                "MB/s",
                "claude-agent-sdk (not installed)",
                0.0,
                ratio=0.0,
                target=">= 2x the SDK parser",
                ok=False,
                note="pip install claude-agent-sdk (the dev extra) to measure it",
            )
        )
    else:
        sdk = mb / median([_sdk(data) for _ in range(RUNS)])
        figs.append(
            figure(
                "claude stream-json parse",
                ours_mbs,
                "MB/s",
                "claude-agent-sdk parse_message",
                sdk,
                target=">= 2x the SDK parser",
                ok=ours_mbs >= 2 * sdk,
                size_mb=round(mb, 1),
            )
        )
    return figs
