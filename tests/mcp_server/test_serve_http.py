"""``monkey serve http``: the same server over streamable HTTP, driven by the official ``mcp`` client."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import httpx2
import pytest

from tests.support.cli import invoke, invoke_async, run_monkey
from tests.support.mcp_serve import http_session, start_http, text
from tests.support.mcp_serve import TOOLS


@pytest.mark.subprocess
async def test_tools_calls_health_and_undo_over_http(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    (monkey_home / "config.toml").write_text('[approvals]\ndeny = ["file_write(secret/**)"]\n')
    server = start_http(workspace, monkey_home)
    try:
        assert server.url.startswith("http://127.0.0.1:") and server.url.endswith("/mcp")
        assert len(server.token) >= 32  # made and printed once on stderr, on loopback too
        auth = {"Authorization": f"Bearer {server.token}"}
        health = httpx2.get(server.base + "/health", headers=auth, timeout=30)
        assert health.status_code == 200
        assert health.json()["status"] == "ok" and health.json()["workspace"] == str(workspace)
        async with http_session(server.url, server.token) as client:
            assert [t.name for t in (await client.list_tools()).tools] == TOOLS
            wrote = await client.call_tool("file_write", {"path": "web.txt", "content": "over http\n"})
            assert not wrote.is_error, text(wrote)
            assert text(await client.call_tool("file_read", {"path": "web.txt"})) == "over http\n"
            denied = await client.call_tool("file_write", {"path": "secret/k", "content": "x"})
            assert denied.is_error and "denied by rule" in text(denied)
            escape = await client.call_tool("file_read", {"path": "../../etc/passwd"})
            assert escape.is_error and "outside the workspace" in text(escape)
            shell = await client.call_tool("shell_execute", {"command": "ls"})
            assert "web.txt" in text(shell)
        assert httpx2.get(server.base + "/health", headers=auth, timeout=30).json()["session"]
        assert server.stop(signal.SIGTERM) == 128 + signal.SIGTERM
    finally:
        server.stop(signal.SIGKILL)
    assert server.proc.stderr is not None and "Traceback" not in server.proc.stderr.read()
    listed = await invoke_async(["sessions", "list", "--json", "--cwd", str(workspace)], home=monkey_home)
    (session,) = json.loads(listed.stdout)
    assert session["state"] == "completed" and session["turns"] == 5
    undo = await invoke_async(["undo", "--cwd", str(workspace)], home=monkey_home)
    assert undo.returncode == 0, undo.stderr
    assert not (workspace / "web.txt").exists()


@pytest.mark.subprocess
def test_a_given_port_and_a_bad_request(workspace: Path, monkey_home: Path) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = start_http(workspace, monkey_home, str(port))
    try:
        assert server.url == f"http://127.0.0.1:{port}/mcp"
        auth = {"Authorization": f"Bearer {server.token}"}
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json", **auth}
        bad = httpx2.post(server.url, content=b"{not json", headers=headers, timeout=30)
        assert bad.status_code == 400 and bad.json()["error"]["code"] == -32700
        assert httpx2.get(server.base + "/health", headers=auth, timeout=30).status_code == 200  # still serving
        for argv in (
            ["serve", "http", str(port), "--cwd", str(workspace)],
            ["serve", "http", "--cwd", str(workspace), str(port)],  # the port after an option
            ["serve", "--cwd", str(workspace), "http", str(port)],
        ):
            busy = run_monkey(argv, home=monkey_home)
            assert busy.returncode == 1 and f"cannot serve on 127.0.0.1:{port}" in busy.stderr, argv
            assert busy.stdout == ""
    finally:
        assert server.stop(signal.SIGINT) == 128 + signal.SIGINT


def test_bad_ports_anywhere_are_one_line(workspace: Path, monkey_home: Path) -> None:
    for argv, said in (
        (["serve", "http", "--cwd", str(workspace), "eighty"], "not a port number: 'eighty'"),
        (["serve", "http", "--cwd", str(workspace), "70000"], "between 1 and 65535"),
        (["serve", "http", "--cwd", str(workspace), "8080", "--port", "8081"], "the port is given twice"),
        (["serve", "--cwd", str(workspace), "8080"], "invalid choice: '8080'"),
        (["serve", "http", "--cwd", str(workspace), "8080", "9090"], "unrecognized arguments: 9090"),
    ):
        run = invoke(argv, home=monkey_home)
        assert run.returncode == 2 and said in run.stderr, (argv, run.stderr)
        assert run.stdout == ""


async def test_a_token_is_checked_on_every_request(workspace: Path, monkey_home: Path) -> None:
    token = "t0ken-for-the-test-1234"
    server = start_http(workspace, monkey_home, "--token", token)
    try:
        assert httpx2.get(server.base + "/health", timeout=30).status_code == 401
        wrong = httpx2.get(server.base + "/health", headers={"Authorization": "Bearer nope"}, timeout=30)
        assert wrong.status_code == 401
        right = httpx2.get(server.base + "/health", headers={"Authorization": f"Bearer {token}"}, timeout=30)
        assert right.status_code == 200
        posted = httpx2.post(server.url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, timeout=30)
        assert posted.status_code == 401
        async with http_session(server.url, token) as client:
            assert len((await client.list_tools()).tools) == len(TOOLS)
    finally:
        server.stop()


async def test_loopback_needs_the_token_and_a_local_host_and_origin(workspace: Path, monkey_home: Path) -> None:
    """On 127.0.0.1 too: no token 401; a Host of another name (DNS rebinding) or a foreign Origin 403."""
    server = start_http(workspace, monkey_home)
    try:
        assert server.url.startswith("http://127.0.0.1:") and len(server.token) >= 32
        port = server.url.rsplit(":", 1)[1].split("/")[0]
        auth = {"Authorization": f"Bearer {server.token}"}
        listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        assert httpx2.get(server.base + "/health", timeout=30).status_code == 401
        assert httpx2.post(server.url, json=listing, timeout=30).status_code == 401
        wrong = {"Authorization": "Bearer " + "x" * len(server.token)}
        assert httpx2.get(server.base + "/health", headers=wrong, timeout=30).status_code == 401
        for host in (f"evil.example:{port}", "evil.example", f"127.0.0.1.evil.example:{port}", ""):
            for path in ("/health", "/mcp"):
                rebound = httpx2.get(server.base + path, headers={**auth, "Host": host}, timeout=30)
                assert rebound.status_code == 403, (host, path, rebound.status_code)
            posted = httpx2.post(server.url, json=listing, headers={**auth, "Host": host}, timeout=30)
            assert posted.status_code == 403, host
        for origin in ("http://evil.example", f"http://evil.example:{port}", "null", "https://127.0.0.1.evil.example"):
            foreign = httpx2.post(server.url, json=listing, headers={**auth, "Origin": origin}, timeout=30)
            assert foreign.status_code == 403, origin
        for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"127.0.0.2:{port}", f"[::1]:{port}", "localhost"):
            local = httpx2.get(
                server.base + "/health", headers={**auth, "Host": host, "Origin": f"http://{host}"}, timeout=30
            )
            assert local.status_code == 200, host
        async with http_session(server.url, server.token) as client:
            assert len((await client.list_tools()).tools) == len(TOOLS)
    finally:
        assert server.stop() == 128 + signal.SIGTERM
    assert server.proc.stdout is not None and server.token not in server.proc.stdout.read()


def test_non_loopback_binds_need_an_explicit_host_and_then_a_token(workspace: Path, monkey_home: Path) -> None:
    server = start_http(workspace, monkey_home, "--host", "0.0.0.0")
    try:
        assert len(server.token) >= 32  # generated and printed
        port = server.url.rsplit(":", 1)[1].split("/")[0]
        local = f"http://127.0.0.1:{port}"
        assert httpx2.get(local + "/health", timeout=30).status_code == 401
        ok = httpx2.get(local + "/health", headers={"Authorization": f"Bearer {server.token}"}, timeout=30)
        assert ok.status_code == 200
    finally:
        server.stop()


@pytest.mark.parametrize(
    "flags, said",
    [
        (["http", "--token", "short"], "at least 16 characters"),
        (["http", "70000"], "between 1 and 65535"),
        (["http", "80", "--port", "81"], "the port is given twice"),
        (["http", "eighty"], "not a port number"),
        (["--port", "8080"], "are for 'monkey serve http'"),
    ],
)
def test_bad_flags_are_one_line_errors(workspace: Path, monkey_home: Path, flags: list[str], said: str) -> None:
    run = invoke(["serve", *flags, "--cwd", str(workspace)], home=monkey_home)
    assert run.returncode == 2 and said in run.stderr and run.stdout == ""
    assert len(run.stderr.strip().splitlines()) == 1
