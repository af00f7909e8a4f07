"""``monkey web``'s API: the door (token, cookie, Host, Origin), the sessions of every workspace,
events replayed by number and followed live from another process (httpx: the app in-process,
and a real uvicorn on 127.0.0.1 where the network path matters)."""

from __future__ import annotations

import pytest

import asyncio
import json
import sys
from pathlib import Path

import httpx2 as httpx

from tests.support.checkpoints import write_script

from tests.support.cli import init_git_workspace, invoke_async, monkey_env
from tests.support.web import ANSWER, asgi_client, base, login, served, sse, stored_task, TOKEN

pytestmark = pytest.mark.pty


async def test_the_token_is_traded_once_for_a_strict_cookie_and_every_request_needs_it() -> None:
    async with asgi_client() as (client, _):
        assert (await client.get("/api/sessions")).status_code == 401
        assert (await client.get("/")).status_code == 401
        assert (await client.get("/?token=wrong-token-0123456789")).status_code == 401
        first = await client.get(f"/session?id=x&token={TOKEN}")
        assert first.status_code == 303
        assert first.headers["location"] == "/session?id=x", "the token leaves the address bar"
        cookie = first.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
        assert TOKEN not in cookie, "the cookie is not the token"
        assert (await client.get("/api/sessions")).status_code == 200
        stranger = httpx.AsyncClient(transport=client._transport, base_url="http://127.0.0.1:8")
        async with stranger:
            again = await stranger.get(f"/?token={TOKEN}")
            assert again.status_code == 401 and "used already" in again.text, "the token is one-time"
            assert (await stranger.get("/api/sessions", headers={"cookie": "monkey_web=guess"})).status_code == 401


async def test_a_forged_host_or_another_origin_is_refused() -> None:
    async with asgi_client() as (client, _):
        await login(client)
        assert (await client.get("/api/sessions", headers={"host": "evil.example:8"})).status_code == 403
        assert (await client.get("/api/sessions", headers={"host": "10.1.2.3:8"})).status_code == 403
        assert (await client.get("/api/sessions", headers={"host": "localhost:8"})).status_code == 200
        assert (await client.get("/api/sessions", headers={"origin": "http://evil.example"})).status_code == 403
        # a change (not GET) needs this server's own origin: none, another, or a cross-site fetch is refused
        assert (await client.post("/api/sessions")).status_code == 403
        assert (await client.post("/api/sessions", headers={"origin": "http://evil.example"})).status_code == 403
        assert (await client.post("/api/sessions", headers={"origin": "http://localhost:8"})).status_code == 403
        assert (
            await client.post("/api/sessions", headers={"origin": "http://127.0.0.1:8", "sec-fetch-site": "cross-site"})
        ).status_code == 403
        same = await client.post("/api/sessions", headers={"origin": "http://127.0.0.1:8"})
        assert same.status_code == 405, "through the door: the route takes no POST"


async def test_every_session_of_every_workspace_with_its_figures(tmp_path: Path, monkey_home: Path) -> None:
    one = init_git_workspace(tmp_path / "one", tmp_path)
    two = init_git_workspace(tmp_path / "two", tmp_path)
    first = await stored_task(one, monkey_home, tmp_path, ANSWER)
    second = await stored_task(two, monkey_home, tmp_path, [{"text": "nothing to do"}])
    async with asgi_client() as (client, _):
        await login(client)
        listed = (await client.get("/api/sessions")).json()["sessions"]
        by_id = {s["id"]: s for s in listed}
        assert set(by_id) == {first, second}
        s = by_id[first]
        assert s["workspace"] == str(one) and by_id[second]["workspace"] == str(two)
        assert s["backend"] == "scripted" and s["state"] == "ended" and s["turns"] == 1 and s["parent"] is None
        assert s["title"] == "write a file" and s["events"] > 5 and s["pending"] == []
        only = (await client.get("/api/sessions", params={"workspace": str(two)})).json()["sessions"]
        assert [x["id"] for x in only] == [second]
        assert (await client.get("/api/sessions", params={"state": "running"})).json()["sessions"] == []
        assert (await client.get(f"/api/sessions/{first}")).json()["children"] == []
        assert (await client.get("/api/sessions/nope")).status_code == 404


async def test_the_openapi_description_names_every_route() -> None:
    async with asgi_client() as (client, app):
        await login(client)
        doc = (await client.get("/api/openapi.json")).json()
        assert doc["openapi"].startswith("3.")
        routes = {r.path for r in app.app.app.routes if r.path.startswith("/api/")}
        assert routes == set(doc["paths"])


async def test_a_reconnect_replays_exactly_the_missed_events(
    tmp_path: Path, workspace: Path, monkey_home: Path
) -> None:
    sid = await stored_task(workspace, monkey_home, tmp_path, ANSWER)
    stored = await invoke_async(["sessions", "export", sid], home=monkey_home)
    assert stored.returncode == 0, stored.stderr
    everything = [json.loads(line) for line in stored.stdout.splitlines() if line.strip()]
    async with served() as front, httpx.AsyncClient(base_url=base(front)) as client:
        await client.get(front.url)
        url = f"/api/sessions/{sid}/events"
        first = await sse(client, url, 4)
        assert [n for n, _ in first] == [1, 2, 3, 4]
        rest = await sse(client, url, len(everything) - 4, headers={"last-event-id": "4"})
        assert [n for n, _ in rest] == list(range(5, len(everything) + 1))
        assert [e for _, e in first + rest] == everything, "each event as stored, numbered as stored"
        typed = await sse(client, url + "?types=tool_result&after=0", 1)
        assert typed[0][1]["type"] == "tool_result"
        bad = await client.get(url, headers={"last-event-id": "x"})
        assert bad.status_code == 400


async def test_a_session_in_another_process_shows_live_and_waiting_for_a_person(
    tmp_path: Path, workspace: Path, monkey_home: Path
) -> None:
    import pexpect

    script = write_script(tmp_path / "s.json", ANSWER)
    child = pexpect.spawn(
        sys.executable,
        ["-m", "monkey", "agent", "--plain", "--backend", "scripted", "--script", str(script), "--cwd", str(workspace)],
        env=monkey_env(monkey_home, TERM="xterm"),
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 120),
    )
    try:
        child.expect_exact("Type a task")
        child.sendline("write a file")
        child.expect_exact("allow? [")
        async with served() as front, httpx.AsyncClient(base_url=base(front)) as client:
            await client.get(front.url)
            listed = (await client.get("/api/sessions")).json()["sessions"]
            assert [s["state"] for s in listed] == ["waiting"]
            sid = listed[0]["id"]
            assert [p["name"] for p in listed[0]["pending"]] == ["file_write"]

            async def until_result() -> list[str]:
                types: list[str] = []
                async with client.stream("GET", f"/api/sessions/{sid}/events") as answer:
                    async for line in answer.aiter_lines():
                        if line.startswith("data:"):
                            types.append(json.loads(line[5:])["type"])
                            if types[-1] == "approval_requested":
                                child.sendline("y")  # answered at the terminal while the stream follows
                            if types[-1] == "turn_completed":
                                return types
                return types

            types = await asyncio.wait_for(until_result(), 30)
            assert types.index("approval_requested") < types.index("approval_resolved") < types.index("tool_result")
            child.expect_exact("wrote a.txt")
            after = (await client.get(f"/api/sessions/{sid}")).json()
            assert after["state"] == "idle" and after["pending"] == []
    finally:
        child.sendline("/exit")  # a Ctrl-D typed before the prompt reads is lost; a line is not
        child.expect(pexpect.EOF)


async def test_the_stored_events_in_one_json_answer(tmp_path: Path, workspace: Path, monkey_home: Path) -> None:
    sid = await stored_task(workspace, monkey_home, tmp_path, ANSWER)
    stored = await invoke_async(["sessions", "export", sid], home=monkey_home)
    everything = [json.loads(line) for line in stored.stdout.splitlines() if line.strip()]
    async with asgi_client() as (client, _):
        await login(client)
        url = f"/api/sessions/{sid}/events"
        whole = (await client.get(url, params={"format": "json"})).json()
        assert whole == {"last": len(everything), "events": [[n + 1, e] for n, e in enumerate(everything)]}
        rest = (await client.get(url, params={"format": "json", "after": "4"})).json()
        assert [n for n, _ in rest["events"]] == list(range(5, len(everything) + 1))
        assert (await client.get(url, params={"format": "json"}, headers={"last-event-id": "4"})).json() == rest
        typed = (await client.get(url, params={"format": "json", "types": "tool_result"})).json()
        assert [e["type"] for _, e in typed["events"]] == ["tool_result"] and typed["last"] == len(everything)
        assert (await client.get(url, params={"format": "json", "after": "x"})).status_code == 400
