"""``monkey web`` as a command: the printed link, a given port, another address with ``--host``, a signal."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx2 as httpx
import pytest

from tests.support.cli import invoke, monkey_env, run_monkey

pytestmark = pytest.mark.pty


def _start(home: Path, *flags: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "monkey", "web", *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=monkey_env(home),
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("url: http://"), (line, proc.stderr.read() if proc.poll() is not None else "")
    return proc, line.split(" ", 1)[1].strip()


def _stop(proc: subprocess.Popen[str]) -> int:
    proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout=30)


def test_the_printed_link_on_a_given_port_of_127_0_0_1(monkey_home: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc, url = _start(monkey_home, "--port", str(port))
    try:
        assert url.startswith(f"http://127.0.0.1:{port}/?token=")
        with httpx.Client(base_url=url.split("/?")[0], follow_redirects=True) as client:
            assert client.get("/api/sessions").status_code == 401
            assert client.get(url).status_code == 200, "the link opens the sessions page (after the cookie)"
            assert client.get("/api/sessions").json() == {"sessions": []}
            page = client.get("/")
            assert "default-src 'self'" in page.headers["content-security-policy"]
            assert client.get("/static/session.js").status_code == 200
    finally:
        assert _stop(proc) == 0


def test_another_address_only_with_host_and_still_the_token(monkey_home: Path) -> None:
    proc, url = _start(monkey_home, "--host", "0.0.0.0")
    try:
        port = url.split(":")[2].split("/")[0]
        assert url.startswith(f"http://0.0.0.0:{port}/?token=")
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
            assert client.get("/api/sessions").status_code == 401, "a token is needed on any address"
            assert client.get("/api/sessions", headers={"host": f"evil.example:{port}"}).status_code == 403
    finally:
        assert _stop(proc) == 0


def test_a_port_in_use_or_out_of_range_is_one_line(monkey_home: Path) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        run = run_monkey(["web", "--port", str(port)], home=monkey_home)
        assert run.returncode == 1 and run.stderr.startswith(f"monkey: cannot listen on 127.0.0.1:{port}: ")
    run = invoke(["web", "--port", "70000"], home=monkey_home)
    assert run.returncode == 2 and "between 1 and 65535" in run.stderr


def test_agent_web_serves_the_monitor_beside_the_session_in_the_same_process(
    tmp_path: Path, workspace: Path, monkey_home: Path
) -> None:
    import pexpect

    from tests.support.checkpoints import write_script

    script = write_script(tmp_path / "s.json", [{"text": "hello from the session"}])
    child = pexpect.spawn(
        sys.executable,
        [
            "-m",
            "monkey",
            "agent",
            "--plain",
            "--web",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(workspace),
        ],
        env=monkey_env(monkey_home, TERM="xterm"),
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 200),
    )
    try:
        child.expect(r"monkey web: (http://127\.0\.0\.1:\d+/\?token=[\w-]+)")
        url = child.match.group(1)
        child.expect_exact("Type a task")
        child.sendline("say hello")
        child.expect_exact("hello from the session")
        with httpx.Client(base_url=url.split("/?")[0], follow_redirects=True) as client:
            assert client.get(url).status_code == 200
            sessions = client.get("/api/sessions").json()["sessions"]
            assert [(s["title"], s["state"]) for s in sessions] == [("say hello", "idle")]
            assert sessions[0]["status"] == "active"
        child.sendline("/exit")  # a Ctrl-D typed before the prompt reads is lost; a line is not
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 0
        with pytest.raises(httpx.ConnectError), httpx.Client() as client:
            client.get(url)  # it stopped with the session
    finally:
        if child.isalive():
            child.terminate(force=True)
