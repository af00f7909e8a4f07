"""``plugins``: an agent plugin's text stream through monkey's host, and a ``tool_use`` round trip.

1. ``plugin_text_events``: a plugin answers ``agent.run`` with 100,000 ``text`` notifications
   (written as fast as it can), then ``complete`` and its response. monkey's side is
   :class:`~monkey.backends.plugin.backend.PluginBackend` streaming the run (process start, the
   handshake, the JSON-RPC framing and decoding, one ``text_delta`` event per notification);
   the baseline, in the same run, starts the same plugin, sends the same three requests and
   reads its stdout line by line with ``json.loads`` per line. Events (lines) per second,
   median of interleaved runs; target: monkey at least 0.5x the baseline.
2. ``plugin_tool_round_trip``: the plugin asks for 200 ``file_read`` calls one after another (two files, twenty
   offsets: no cycle the repetition guard would stop)
   through the real agent loop (rules, events, the call's result back as ``agent.tool_result``);
   the plugin times each round trip from writing ``tool_use`` to reading the result. The
   baseline is the tool's own run time as the loop measured it (``tool_result.duration_ms``);
   target: the round trip at most 5 ms more than the tool (medians).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import figure

NOTIFICATIONS = 100_000
CALLS = 200
RUNS = 3

PLUGIN = r"""
import json, os, sys, time
MODE, N, OUT = os.environ["BENCH_MODE"], int(os.environ["BENCH_N"]), os.environ.get("BENCH_OUT", "")
def out(obj):
    sys.stdout.write(json.dumps(obj) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    msg = json.loads(line)
    method, rid = msg.get("method"), msg.get("id")
    if method == "agent.init":
        out({"jsonrpc": "2.0", "id": rid,
             "result": {"name": "bench", "model": "bench-1", "capabilities": ["streaming", "tool_use"]}})
    elif method == "agent.available":
        out({"jsonrpc": "2.0", "id": rid, "result": {"available": True}})
    elif method == "agent.run" and MODE == "text":
        blob = "".join('{"jsonrpc":"2.0","method":"stream","params":{"type":"text","data":"token %d "}}\n' % i for i in range(N))
        sys.stdout.write(blob)
        out({"jsonrpc": "2.0", "method": "stream", "params": {"type": "complete", "data": None}})
        out({"jsonrpc": "2.0", "id": rid, "result": {"status": "complete", "tokens_used": N}})
    elif method == "agent.run":
        times = []
        for i in range(N):
            start = time.perf_counter()
            call = {"id": "t%d" % i, "name": "file_read", "input": {"path": "f%d.txt" % (i % 2), "offset": i % 20 + 1}}
            out({"jsonrpc": "2.0", "method": "stream", "params": {"type": "tool_use", "data": call}})
            while True:
                got = json.loads(sys.stdin.readline())
                if got.get("method") == "agent.tool_result":
                    break
            times.append(time.perf_counter() - start)
            if "id" in got:
                out({"jsonrpc": "2.0", "id": got["id"], "result": {}})
        open(OUT, "w").write(json.dumps(times))
        out({"jsonrpc": "2.0", "method": "stream", "params": {"type": "text", "data": "done"}})
        out({"jsonrpc": "2.0", "id": rid, "result": {"status": "complete"}})
"""

MANIFEST = """version: "1"
name: "bench"
type: "agent"
protocol: "1"
executable:
  command: ["{python}", "./bench_plugin.py"]
agent:
  capabilities: [streaming, tool_use]
"""


def _plugin(folder: Path, mode: str, n: int, out: Path | None = None):  # type: ignore[no-untyped-def]
    from monkey.backends.plugin.discovery import PluginSettings, Resolved
    from monkey.backends.plugin.manifest import load_manifest

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bench_plugin.py").write_text(PLUGIN)
    (folder / "plugin.yaml").write_text(MANIFEST.format(python=sys.executable))
    env = {"BENCH_MODE": mode, "BENCH_N": str(n), **({"BENCH_OUT": str(out)} if out else {})}
    manifest = load_manifest(folder)
    return Resolved(name="bench", manifest=manifest, settings=PluginSettings(env=env, max_line_bytes=8 << 20))


async def _ours(resolved, workspace: Path) -> float:  # type: ignore[no-untyped-def]
    from monkey.backends.plugin.backend import PluginBackend
    from monkey.events import TextDelta
    from monkey.messages import Message, ModelRequest

    backend = PluginBackend(resolved, workspace=workspace)
    request = ModelRequest(system="", messages=[Message(role="user", content="go")], session_id="bench")
    start = time.perf_counter()
    count = 0
    async for event in backend.stream(request):
        if type(event) is TextDelta:
            count += 1
    elapsed = time.perf_counter() - start
    await backend.aclose()
    assert count == NOTIFICATIONS, count
    return count / elapsed


def _baseline(resolved) -> float:  # type: ignore[no-untyped-def]
    """The same plugin, the same requests, ``json.loads`` per line of its stdout."""
    from monkey.process import scrub_env

    requests = "".join(
        json.dumps({"jsonrpc": "2.0", "id": i, "method": m, "params": p}) + "\n"
        for i, m, p in [
            (1, "agent.init", {"config": {}}),
            (2, "agent.available", {}),
            (3, "agent.run", {"prompt": "go", "context": {}}),
        ]
    )
    start = time.perf_counter()
    proc = subprocess.Popen(
        resolved.manifest.argv(),
        cwd=resolved.manifest.folder,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**scrub_env(os.environ), **resolved.settings.env},
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(requests.encode())
    proc.stdin.flush()
    count = 0
    for line in proc.stdout:
        msg = json.loads(line)
        if msg.get("method") == "stream" and msg["params"]["type"] == "text":
            count += 1
        elif msg.get("id") == 3:
            break
    elapsed = time.perf_counter() - start
    proc.stdin.close()
    proc.wait()
    assert count == NOTIFICATIONS, count
    return count / elapsed


async def _round_trips(folder: Path, workspace: Path) -> tuple[list[float], list[float]]:
    from monkey.agent.loop import Agent, AgentOptions
    from monkey.backends.plugin.backend import PluginBackend
    from monkey.events import ToolResult

    out = folder.parent / "round_trips.json"
    resolved = _plugin(folder, "tools", CALLS, out)
    for i in range(2):
        (workspace / f"f{i}.txt").write_text("some text\n" * 20)
    agent = Agent(
        backend=PluginBackend(resolved, workspace=workspace),
        workspace=workspace,
        options=AgentOptions(max_iterations=CALLS + 5),
    )
    agent.session_started()
    tool_ms = [e.duration_ms async for e in agent.run("read") if isinstance(e, ToolResult)]
    await agent.backend.aclose()
    assert len(tool_ms) == CALLS, len(tool_ms)
    return [t * 1000 for t in json.loads(out.read_text())], tool_ms


def bench_plugins() -> list[dict]:
    root = Path(tempfile.mkdtemp(prefix="monkey-bench-plugins-"))
    workspace = root / "ws"
    workspace.mkdir()
    resolved = _plugin(root / "text", "text", NOTIFICATIONS)
    ours, theirs = [], []
    _baseline(resolved)  # warm the page cache and the interpreter's files
    for _ in range(RUNS):
        ours.append(asyncio.run(_ours(resolved, workspace)))
        theirs.append(_baseline(resolved))
    mine, base = statistics.median(ours), statistics.median(theirs)
    trips, tools = asyncio.run(_round_trips(root / "tools", workspace))
    trip, tool = statistics.median(trips), statistics.median(tools)
    return [
        figure(
            "plugin_text_events",
            mine,
            "events/s",
            "json.loads per line of the same plugin's stdout",
            base,
            target="ratio >= 0.5",
            ok=mine / base >= 0.5,
            notifications=NOTIFICATIONS,
            runs=RUNS,
        ),
        figure(
            "plugin_tool_round_trip",
            trip,
            "ms",
            "the tool's own run time (file_read, tool_result.duration_ms)",
            tool,
            target="value - baseline <= 5 ms",
            ok=trip - tool <= 5.0,
            calls=CALLS,
            overhead_ms=round(trip - tool, 3),
            p90_ms=round(sorted(trips)[int(CALLS * 0.9)], 3),
        ),
    ]
