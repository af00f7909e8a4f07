"""``acp_client``: an ACP agent's text stream through the ``acp:NAME`` backend, and a permission round trip.

1. ``acp_text_updates``: an agent answers ``session/prompt`` with 10,000 ``agent_message_chunk``
   updates (written as fast as it can), then its answer. monkey's side is
   :class:`~monkey.backends.acp_client.backend.AcpBackend` streaming the turn (process start, the
   handshake, the transport's framing, the SDK's decoding, one ``text_delta`` event per update); the
   baseline, in the same run, is the bare SDK client (``acp.spawn_agent_process`` and a client that
   counts the updates) with the same requests. Updates per second, median of interleaved runs; target:
   monkey at least 0.8x the baseline.
2. ``acp_permission_round_trip``: the agent asks 200 ``session/request_permission`` one after another
   (a shell command an allow rule covers) and times each from writing the request to reading the
   answer. monkey's side answers through the agent loop's gate (the engine, the approval events); the
   baseline is the bare SDK client answering "allow once" at once. Target: monkey's median at most
   5 ms more than the baseline's.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import figure

UPDATES = 10_000
ASKS = 200
RUNS = 3

AGENT = r"""
import json, os, sys, time
MODE, N, OUT = os.environ["BENCH_MODE"], int(os.environ["BENCH_N"]), os.environ.get("BENCH_OUT", "")
def out(obj):
    sys.stdout.write(json.dumps(obj) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    msg = json.loads(line)
    method, rid = msg.get("method"), msg.get("id")
    if method == "initialize":
        out({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}})
    elif method == "session/new":
        out({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "s"}})
    elif method == "session/prompt" and MODE == "text":
        blob = "".join('{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":'
                       '{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"token %d "}}}}\n' % i
                       for i in range(N))
        sys.stdout.write(blob)
        out({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})
    elif method == "session/prompt":
        times = []
        opts = [{"optionId": "y", "name": "Allow", "kind": "allow_once"},
                {"optionId": "n", "name": "Reject", "kind": "reject_once"}]
        for i in range(N):
            start = time.perf_counter()
            out({"jsonrpc": "2.0", "id": 1000 + i, "method": "session/request_permission", "params": {"sessionId": "s",
                 "toolCall": {"toolCallId": "t%d" % i, "title": "ls", "kind": "execute", "rawInput": {"command": "ls -la"}},
                 "options": opts}})
            while True:
                got = json.loads(sys.stdin.readline())
                if got.get("id") == 1000 + i:
                    break
            times.append(time.perf_counter() - start)
            assert got["result"]["outcome"]["optionId"] == "y", got
            out({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": {
                "sessionUpdate": "tool_call", "toolCallId": "t%d" % i, "title": "ls", "kind": "execute",
                "status": "completed"}}})
        open(OUT, "w").write(json.dumps(times))
        out({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})
"""


def _entry(folder: Path, mode: str, n: int, out: Path | None = None):  # type: ignore[no-untyped-def]
    from monkey.backends.acp_client.agents import AgentEntry

    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "bench_agent.py"
    script.write_text(AGENT)
    env = {"BENCH_MODE": mode, "BENCH_N": str(n), **({"BENCH_OUT": str(out)} if out else {})}
    return AgentEntry("bench", sys.executable, (str(script),), env=env, label="bench agent")


async def _ours(entry, workspace: Path) -> float:  # type: ignore[no-untyped-def]
    from monkey.backends.acp_client.backend import AcpBackend
    from monkey.events import TextDelta
    from monkey.messages import Message, ModelRequest

    backend = AcpBackend(entry, sys.executable, workspace=workspace, max_line_bytes=8 << 20)
    request = ModelRequest(system="", messages=[Message(role="user", content="go")], session_id="bench")
    start = time.perf_counter()
    count = 0
    async for event in backend.stream(request):
        if type(event) is TextDelta:
            count += 1
    elapsed = time.perf_counter() - start
    await backend.aclose()
    assert count == UPDATES, count
    return count / elapsed


class _Counter:
    """The bare SDK client: counts text updates, allows every permission at once."""

    def __init__(self) -> None:
        self.count = 0

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if getattr(update, "session_update", "") == "agent_message_chunk":
            self.count += 1

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any) -> Any:
        from acp.schema import AllowedOutcome, RequestPermissionResponse

        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id="y"))


async def _bare(entry, workspace: Path) -> float:  # type: ignore[no-untyped-def]
    from acp import PROTOCOL_VERSION, spawn_agent_process, text_block

    from monkey.process import scrub_env

    client = _Counter()
    start = time.perf_counter()
    async with spawn_agent_process(
        client,
        entry.command,
        *entry.args,
        env={**scrub_env(os.environ), **entry.env},
        cwd=str(workspace),
        transport_kwargs={"limit": 8 << 20},
    ) as (conn, _proc):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[text_block("go")])
        elapsed = time.perf_counter() - start
    assert client.count == UPDATES, client.count
    return client.count / elapsed


async def _asks_ours(folder: Path, workspace: Path) -> list[float]:
    from monkey.agent.loop import Agent
    from monkey.backends.acp_client.backend import AcpBackend
    from monkey.permissions.policy import ApprovalPolicy

    out = folder / "ours.json"
    entry = _entry(folder, "asks", ASKS, out)
    backend = AcpBackend(entry, sys.executable, workspace=workspace)
    agent = Agent(
        backend=backend, workspace=workspace, policy=ApprovalPolicy.from_strings(allow=["shell_execute(ls *)"])
    )
    agent.session_started()
    async for _ in agent.run("go"):
        pass
    await backend.aclose()
    return [t * 1000 for t in json.loads(out.read_text())]


async def _asks_bare(folder: Path, workspace: Path) -> list[float]:
    from acp import PROTOCOL_VERSION, spawn_agent_process, text_block

    from monkey.process import scrub_env

    out = folder / "bare.json"
    entry = _entry(folder, "asks", ASKS, out)
    async with spawn_agent_process(
        _Counter(), entry.command, *entry.args, env={**scrub_env(os.environ), **entry.env}, cwd=str(workspace)
    ) as (conn, _proc):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[text_block("go")])
    return [t * 1000 for t in json.loads(out.read_text())]


def bench_acp_client() -> list[dict]:
    root = Path(tempfile.mkdtemp(prefix="monkey-bench-acp-"))
    workspace = root / "ws"
    workspace.mkdir()
    entry = _entry(root / "text", "text", UPDATES)
    ours, theirs = [], []
    asyncio.run(_bare(entry, workspace))  # warm the page cache and the interpreter's files
    for _ in range(RUNS):
        ours.append(asyncio.run(_ours(entry, workspace)))
        theirs.append(asyncio.run(_bare(entry, workspace)))
    mine, base = statistics.median(ours), statistics.median(theirs)
    trips = asyncio.run(_asks_ours(root / "asks", workspace))
    bare = asyncio.run(_asks_bare(root / "asks", workspace))
    trip, plain = statistics.median(trips), statistics.median(bare)
    return [
        figure(
            "acp_text_updates",
            mine,
            "updates/s",
            "the bare SDK client reading the same agent",
            base,
            target="ratio >= 0.8",
            ok=mine / base >= 0.8,
            updates=UPDATES,
            runs=RUNS,
        ),
        figure(
            "acp_permission_round_trip",
            trip,
            "ms",
            "the bare SDK client allowing at once",
            plain,
            target="value - baseline <= 5 ms",
            ok=trip - plain <= 5.0,
            asks=ASKS,
            overhead_ms=round(trip - plain, 3),
            p90_ms=round(sorted(trips)[int(ASKS * 0.9)], 3),
        ),
    ]
