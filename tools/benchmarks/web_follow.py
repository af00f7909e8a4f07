"""The other process of ``bench.py web``: ``monkey web`` (uvicorn on 127.0.0.1) and its SSE clients.

Run as ``python -m benchmarks.web_follow SESSION`` with ``MONKEY_HOME`` set; it serves the monitor for that
home and answers one command per line on stdin with one JSON line on stdout:

- ``latency N``: one SSE client of the session from its next event on, and beside it a plain poll of the store
  (``events_after`` every ``POLL_S``, the floor any reader of another process's writes has); each takes ``N``
  events and gives, per event, the seconds from its ``ts`` (taken just before it was stored) to its arrival:
  ``{"sse": [...], "poll": [...]}``.
- ``connect K``: ``K`` SSE clients following the session live; ``{"connected": K}``.
- ``disconnect``: they close; ``{"received": [events each got]}``.
- ``quit``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

TOKEN = "bench-token-0123456789abcdef"


async def _stream(client: Any, url: str, got: list[float], counts: list[int], index: int, want: int = 0) -> None:
    async with client.stream("GET", url) as answer:
        async for line in answer.aiter_lines():
            if line.startswith("data:"):
                event = json.loads(line[5:])
                got.append(time.time() - event["ts"])
                counts[index] += 1
                if want and counts[index] >= want:
                    return


async def _poll(sid: str, after: int, want: int, got: list[float]) -> None:
    from monkey.store import SessionStore
    from monkey.store.watch import events_after
    from monkey.web.api import POLL_S

    async with await SessionStore.open(readonly=True) as store:
        last = after
        while len(got) < want:
            rows = await events_after(store, sid, last)
            now = time.time()
            for seq, _, data in rows:
                last = seq
                got.append(now - json.loads(data)["ts"])
            if not rows:
                await asyncio.sleep(POLL_S)


async def main(sid: str) -> None:
    import httpx2 as httpx

    from monkey.web.server import WebFront, WebSettings

    lines: list[str] = []
    front = WebFront(WebSettings(token=TOKEN), say=lines.append)
    serving = asyncio.create_task(front.serve())
    while not lines:
        await asyncio.sleep(0.01)
    base = front.url.split("/?", 1)[0]
    limits = httpx.Limits(max_connections=100, max_keepalive_connections=100)
    async with httpx.AsyncClient(base_url=base, timeout=None, limits=limits) as client:
        await client.get(front.url)
        followers: list[asyncio.Task[None]] = []
        counts: list[int] = []
        while True:
            command = (await asyncio.to_thread(sys.stdin.readline)).split()
            if not command or command[0] == "quit":
                break
            last = (await client.get(f"/api/sessions/{sid}")).json()["events"]
            url = f"/api/sessions/{sid}/events?after={last}"
            if command[0] == "latency":
                want = int(command[1])
                sse: list[float] = []
                poll: list[float] = []
                one = [0]
                await asyncio.gather(_stream(client, url, sse, one, 0, want), _poll(sid, last, want, poll))
                out: dict[str, Any] = {"sse": sse[:want], "poll": poll[:want]}
            elif command[0] == "connect":
                counts = [0] * int(command[1])
                sink: list[float] = []
                followers = [asyncio.create_task(_stream(client, url, sink, counts, i)) for i in range(len(counts))]
                await asyncio.sleep(0.5)  # every stream open and replayed to now
                out = {"connected": len(followers)}
            else:  # disconnect
                for task in followers:
                    task.cancel()
                await asyncio.gather(*followers, return_exceptions=True)
                out = {"received": counts}
                followers = []
            sys.stdout.write(json.dumps(out) + "\n")
            sys.stdout.flush()
    front.stop()
    await serving


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
