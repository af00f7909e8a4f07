"""The sandbox of ``shell_execute`` (monkey/tools/sandbox.py): real commands run by the real tool in
bubblewrap and under Landlock, real folders, a real TCP server; and the notes the model gets."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from monkey.tools.base import ShellSettings, ToolContext, ToolError
from monkey.tools.sandbox import Sandbox, bubblewrap_problem, landlock_problem, probe
from monkey.tools.sandbox_notes import explain
from monkey.tools.shell import ShellArgs, ShellExecute

PY = sys.executable


def run(sandbox: Sandbox | None, workspace: Path, code: str) -> tuple[bool, str]:
    """Run ``python -c code`` through shell_execute in ``workspace``; (ok, output)."""
    ctx = ToolContext(workspace=workspace, shell=ShellSettings(sandbox=sandbox))
    args = ShellArgs(command=f'{PY} -c "{code}"', timeout=60)
    try:
        return True, asyncio.run(ShellExecute().run(args, ctx)).output
    except ToolError as exc:
        return False, str(exc)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".monkey").mkdir()
    (root / "src").mkdir()
    (root / "src" / "a.py").write_text("a = 1\n")
    (root / "top.txt").write_text("top\n")
    return root


def test_this_machine_has_bubblewrap_and_auto_picks_it() -> None:
    # The README's test command installs bubblewrap; without it the sandbox tests below mean nothing.
    assert bubblewrap_problem() == ""
    found = probe("auto")
    assert found.sandbox is not None and found.sandbox.kind == "bubblewrap" and found.notice == ""


def test_off_is_said_and_gives_no_sandbox() -> None:
    found = probe("off")
    assert found.sandbox is None
    assert "the sandbox is off" in found.notice and "needs a person's approval" in found.notice


@pytest.mark.parametrize("kind", ["bubblewrap", "landlock"])
def test_writes_go_only_where_they_may(kind: str, ws: Path, tmp_path: Path) -> None:
    problem = bubblewrap_problem() if kind == "bubblewrap" else landlock_problem()
    if problem:
        pytest.skip(problem)
    sandbox = probe(kind).sandbox
    assert sandbox is not None and sandbox.kind == kind
    assert run(sandbox, ws, "open('src/b.py', 'w').write('b')")[0]
    assert run(sandbox, ws, "open('top.txt', 'a').write('more')")[0]
    assert run(sandbox, ws, "import tempfile; tempfile.NamedTemporaryFile().write(b'x')")[0]
    ok, out = run(sandbox, ws, "open('.git/hooks/pre-commit', 'w').write('x')")
    assert not ok and ".git/ (read-only in the sandbox)" in out
    assert not run(sandbox, ws, "open('.monkey/config.toml', 'w').write('x')")[0]
    assert not run(sandbox, ws, "import os; os.rename('.git', 'moved')")[0]
    ok, out = run(sandbox, ws, f"open({str(tmp_path / 'outside.txt')!r}, 'w').write('x')")
    assert (tmp_path / "outside.txt").exists() is False
    assert (ws / "src" / "b.py").read_text() == "b" and (ws / "top.txt").read_text() == "top\nmore"
    assert not (ws / ".git" / "hooks" / "pre-commit").exists() and not (ws / ".monkey" / "config.toml").exists()
    assert (ws / ".git").is_dir()


def test_landlock_refuses_new_entries_in_the_root_and_says_why(ws: Path) -> None:
    if landlock_problem():
        pytest.skip(landlock_problem())
    ok, out = run(probe("landlock").sandbox, ws, "open('new.txt', 'w').write('x')")
    assert not ok and "cannot create new entries directly in the workspace root" in out


@pytest.mark.parametrize("kind", ["bubblewrap", "landlock"])
def test_no_network_unless_allowed(kind: str, ws: Path) -> None:
    problem = bubblewrap_problem() if kind == "bubblewrap" else landlock_problem()
    if problem:
        pytest.skip(problem)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(4)
        port = server.getsockname()[1]
        code = f"import socket; socket.create_connection(('127.0.0.1', {port}), 5); print('CONNECTED')"
        ok, out = run(probe(kind).sandbox, ws, code)
        assert not ok and "without network access" in out
        ok, out = run(Sandbox(kind, network=True, executable="bwrap"), ws, code)  # type: ignore[arg-type]
        assert ok and "CONNECTED" in out


@pytest.mark.parametrize("kind", ["bubblewrap", "landlock"])
def test_no_udp_either_where_the_sandbox_promises_no_network(kind: str, ws: Path) -> None:
    problem = bubblewrap_problem() if kind == "bubblewrap" else landlock_problem()
    if problem:
        pytest.skip(problem)
    found = probe(kind)
    assert found.sandbox is not None
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as server:
        server.bind(("127.0.0.1", 0))
        port = server.getsockname()[1]
        code = (
            f"import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'leak', ('127.0.0.1', {port})); "
            "print('SENT')"
        )
        ok, out = run(found.sandbox, ws, code)
        server.setblocking(False)  # the command has ended: a datagram it sent to loopback is already queued here
        try:
            got = server.recv(16)
        except BlockingIOError:
            got = b""
    if kind == "landlock" and not found.sandbox.net_namespace:  # the kernel refuses one: it must be said
        assert "UDP, DNS included, stays open" in found.notice
        return
    assert got == b"", out  # nothing left the sandbox (bubblewrap's own loopback may take it, unheard)


def test_monkeys_home_inside_the_workspace_stays_read_only(ws: Path) -> None:
    home = ws / "tools" / "monkey-home"
    home.mkdir(parents=True)
    for kind in ("bubblewrap", "landlock"):
        if bubblewrap_problem() if kind == "bubblewrap" else landlock_problem():
            continue
        sandbox = Sandbox(kind, home=home, executable="bwrap")  # type: ignore[arg-type]
        ok, out = run(sandbox, ws, "open('tools/monkey-home/config.toml', 'w').write('x')")
        assert not ok and "monkey's home" in out, kind
        assert run(sandbox, ws, "open('tools/other.txt', 'w').write('x')")[0], kind
    assert not (home / "config.toml").exists()


def test_a_killed_sandbox_leaves_no_process(ws: Path) -> None:
    ctx = ToolContext(workspace=ws, shell=ShellSettings(sandbox=probe("bubblewrap").sandbox, kill_grace=0.5))
    marker = "monkey-sandbox-timeout-marker"
    args = ShellArgs(command=f'{PY} -c "import time; time.sleep(60) # {marker}"', timeout=1)
    with pytest.raises(ToolError, match="timed out"):
        asyncio.run(ShellExecute().run(args, ctx))
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    assert left.stdout.strip() == "", left.stdout


def test_notes_name_what_was_denied(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    home = tmp_path / "home"
    note = explain(
        f"sh: 1: cannot create {ws}/.git/hooks/x: Read-only file system\n",
        ws,
        kind="bubblewrap",
        network=False,
        home=home,
    )
    assert note.startswith("[sandbox: ") and ".git/ (read-only in the sandbox)" in note
    note = explain("touch: cannot touch '.monkey/a': Read-only file system\n", ws, kind="bubblewrap", network=False)
    assert ".monkey/ (read-only" in note
    note = explain(
        f"PermissionError: [Errno 13] Permission denied: '{home}/config.toml'\n",
        ws,
        kind="landlock",
        network=False,
        home=home,
    )
    assert "monkey's home" in note
    note = explain("curl: (6) Could not resolve host: example.com\n", ws, kind="bubblewrap", network=False)
    assert "without network access" in note
    assert explain("curl: (6) Could not resolve host: example.com\n", ws, kind="bubblewrap", network=True) == ""
    assert explain("all good\n3 passed\n", ws, kind="bubblewrap", network=False) == ""
    assert explain("error: src/x.py: Permission denied\n", ws, kind="bubblewrap", network=False) == ""
