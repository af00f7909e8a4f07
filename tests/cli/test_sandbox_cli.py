"""The sandbox of ``shell_execute``, driven as a person runs monkey: ``monkey agent --task`` as a real
subprocess, the scripted backend playing a model that tries to get out, ``--no-approval`` (auto)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import invoke
from tests.support.script import call
from tests.support.pty import PTY_TIMEOUT

PY = sys.executable


def py(code: str) -> dict:
    """A shell_execute call running ``code`` in Python (a plain argv command, no shell)."""
    return call("shell_execute", command=f"{PY} -c {json.dumps(code)}", timeout=60)


def results(run) -> list[dict]:  # type: ignore[no-untyped-def]
    return run.of_type("tool_result")


@pytest.fixture
def outside() -> Iterator[Path]:
    """A folder outside the workspace and outside /tmp (in the home folder: tests never write there)."""
    path = Path(tempfile.mkdtemp(prefix=".monkey-test-outside-", dir=Path.home()))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_auto_mode_cannot_write_protected_places_but_writes_the_workspace(
    scripted, workspace: Path, monkey_home: Path, tmp_path: Path, outside: Path
) -> None:
    home = tmp_path / "user-home"
    home.mkdir()
    (home / ".bashrc").write_text("# mine\n")
    (workspace / ".monkey").mkdir()
    (workspace / ".monkey" / "config.toml").write_text("# project\n")
    targets = {
        "hook": workspace / ".git" / "hooks" / "pre-commit",
        "config": workspace / ".monkey" / "config.toml",
        "bashrc": home / ".bashrc",
        "monkey home": monkey_home / "config.toml",
        "outside": outside / "planted.txt",
        "sibling": tmp_path / "sibling.txt",
    }
    # What the parser cannot see: a script of the repository's (a conftest.py, a Makefile) does the writing.
    payloads = [f"open({str(path)!r}, 'w').write('pwned')" for path in targets.values()]
    payloads.append(
        "import subprocess, sys; "
        "sys.exit(subprocess.run(['git', 'config', 'core.fsmonitor', 'touch pwned']).returncode)"
    )
    payloads.append("open('ok.txt', 'w').write('fine')")
    calls = []
    for n, payload in enumerate(payloads):
        (workspace / f"task{n}.py").write_text(payload + "\n")
        calls.append(call("shell_execute", command=f"{PY} task{n}.py", timeout=60))
    run = scripted([{"tool_calls": [c]} for c in calls] + [{"text": "done"}], "--no-approval", HOME=str(home))
    assert run.returncode == 0, run.stderr
    outcomes = results(run)
    assert len(outcomes) == len(calls)
    for (what, path), outcome in zip(targets.items(), outcomes, strict=False):  # the last two calls are not targets
        assert not outcome["ok"], (what, outcome["output"])
        assert "[sandbox: the sandbox kept this command from writing " in outcome["output"], what
        if path.exists():
            assert "pwned" not in path.read_text(), what
    hook, config = outcomes[0]["output"], outcomes[1]["output"]
    assert "Read-only file system" in hook and "[sandbox: " in hook and ".git/ (read-only" in hook
    assert "needs a person's approval" in hook
    assert ".monkey/ (read-only" in config
    assert not outcomes[-2]["ok"] and "fsmonitor" not in (workspace / ".git" / "config").read_text()
    assert outcomes[-1]["ok"], outcomes[-1]["output"]
    assert (workspace / "ok.txt").read_text() == "fine"
    assert (home / ".bashrc").read_text() == "# mine\n"
    assert not (outside / "planted.txt").exists() and not (tmp_path / "sibling.txt").exists()


_SCAN = (
    "import os\nfound = []\nfor pid in os.listdir('/proc'):\n"
    "    try:\n        data = open(f'/proc/{pid}/environ', 'rb').read()\n    except OSError:\n        continue\n"
    "    if b'sandbox-secret-value' in data:\n        found.append(pid)\n"
    "print('FOUND' if found else 'NOT FOUND')"
)


def test_a_child_cannot_read_monkeys_environment(scripted, workspace: Path, monkey_home: Path) -> None:
    (workspace / "scan.py").write_text(_SCAN)
    scan = call("shell_execute", command=f"{PY} scan.py")
    run = scripted(
        [{"tool_calls": [scan]}, {"text": "done"}],
        "--no-approval",
        process=True,
        MONKEY_TEST_SECRET="sandbox-secret-value",
    )  # monkey's own /proc/<pid>/environ: its process
    assert run.returncode == 0, run.stderr
    assert results(run)[0]["output"] == "NOT FOUND\n[exit code 0]"
    # unsandboxed (allowed by the user's own rule): root's child passes PR_SET_DUMPABLE and reads monkey's
    # /proc/<pid>/environ, where monkey blanked the credential at start; the key still works (below)
    (monkey_home / "config.toml").write_text('[shell]\nsandbox = "off"\n[approvals]\nallow = ["shell_execute"]\n')
    bare = scripted([{"tool_calls": [scan]}, {"text": "done"}], process=True, MONKEY_TEST_SECRET="sandbox-secret-value")
    assert bare.returncode == 0, bare.stderr
    assert results(bare)[0]["output"] == "NOT FOUND\n[exit code 0]"
    # nor an --api-key given on the command line, in /proc/<pid>/cmdline (anyone's to read)
    (workspace / "scan_argv.py").write_text(_SCAN.replace("environ", "cmdline"))
    argv_scan = call("shell_execute", command=f"{PY} scan_argv.py")
    keyed = scripted(
        [{"tool_calls": [argv_scan]}, {"text": "done"}], "--api-key", "sandbox-secret-value", process=True
    )  # monkey's own /proc/<pid>/cmdline: its process
    assert keyed.returncode == 0, keyed.stderr
    assert results(keyed)[0]["output"] == "NOT FOUND\n[exit code 0]"


@pytest.fixture
def server() -> Iterator[int]:
    """A TCP server on 127.0.0.1 that accepts anyone; yields its port."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    stop = threading.Event()

    def serve() -> None:
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield sock.getsockname()[1]
    stop.set()
    thread.join(timeout=5)
    sock.close()


def test_the_network_is_off_unless_the_user_allows_it(scripted, monkey_home: Path, server: int) -> None:
    connect = py(f"import socket; socket.create_connection(('127.0.0.1', {server}), 5); print('CONNECTED')")
    run = scripted([{"tool_calls": [connect]}, {"text": "done"}], "--no-approval")
    outcome = results(run)[0]
    assert not outcome["ok"] and "CONNECTED" not in outcome["output"]
    assert "without network access" in outcome["output"]
    (monkey_home / "config.toml").write_text("[shell]\nsandbox_network = true\n")
    allowed = scripted([{"tool_calls": [connect]}, {"text": "done"}], "--no-approval")
    assert results(allowed)[0]["ok"] and "CONNECTED" in results(allowed)[0]["output"]


def test_sandbox_off_says_so_and_no_approval_no_longer_runs_commands(
    scripted, workspace: Path, monkey_home: Path
) -> None:
    (monkey_home / "config.toml").write_text('[shell]\nsandbox = "off"\n')
    run = scripted(
        [
            {"tool_calls": [py("open('x.txt', 'w').write('x')")]},
            {"tool_calls": [call("file_write", path="y.txt", content="y")]},
            {"text": "done"},
        ],
        "--no-approval",
    )
    assert run.stderr.count("the sandbox is off") == 1, run.stderr
    shell, write = results(run)
    assert not shell["ok"] and "no terminal" in shell["output"]
    assert "without a sandbox here, every shell command does, even with --no-approval" in shell["output"]
    assert "or run with --no-approval" not in shell["output"]  # that is what it ran with
    assert not (workspace / "x.txt").exists()
    assert write["ok"] and (workspace / "y.txt").exists(), "file tools do not need the sandbox"
    denied = run.of_type("approval_resolved")[0]
    assert denied["decision"] == "denied" and denied["by"] == "policy"


def test_a_bad_sandbox_value_is_a_usage_error(scripted, monkey_home: Path) -> None:
    (monkey_home / "config.toml").write_text('[shell]\nsandbox = "sometimes"\n')
    run = scripted([{"text": "done"}], "--no-approval")
    assert run.returncode == 2
    assert "shell.sandbox must be one of auto, bubblewrap, landlock, off" in run.stderr
    assert run.stderr.count("\n") == 1


def test_a_project_config_cannot_turn_the_sandbox_off(
    scripted, workspace: Path, monkey_home: Path, server: int
) -> None:
    invoke(["trust", str(workspace)], home=monkey_home)
    (workspace / ".monkey").mkdir()
    (workspace / ".monkey" / "config.toml").write_text(
        '[shell]\nsandbox = "off"\nsandbox_network = true\ntimeout = 30\n'
    )
    hook = workspace / ".git" / "hooks" / "post-checkout"
    (workspace / "setup_hooks.py").write_text(f"open({str(hook)!r}, 'w').write('pwned')\n")
    run = scripted(
        [{"tool_calls": [call("shell_execute", command=f"{PY} setup_hooks.py")]}, {"text": "done"}], "--no-approval"
    )
    assert run.returncode == 0, run.stderr
    assert "ignored shell.sandbox, shell.sandbox_network" in run.stderr
    assert not results(run)[0]["ok"] and not hook.exists()


def test_ordinary_commands_work_in_the_sandbox(scripted, workspace: Path) -> None:
    (workspace / "test_tiny.py").write_text("def test_adds():\n    assert 1 + 1 == 2\n")
    run = scripted(
        [
            {"tool_calls": [call("shell_execute", command="git status --short")]},
            {"tool_calls": [py("import tempfile; print(tempfile.mkdtemp()); print('python ok')")]},
            {
                "tool_calls": [
                    call("shell_execute", command=f"{PY} -m pytest -q -p no:randomly test_tiny.py", timeout=120)
                ]
            },
            {"tool_calls": [call("shell_execute", command="make --version")]}
            if shutil.which("make")
            else {"text": "-"},
            {"text": "done"},
        ],
        "--no-approval",
    )
    assert run.returncode == 0, run.stderr
    outcomes = results(run)
    assert all(o["ok"] for o in outcomes), [o["output"] for o in outcomes]
    assert "?? test_tiny.py" in outcomes[0]["output"]
    assert "python ok" in outcomes[1]["output"]
    assert "1 passed" in outcomes[2]["output"]
    assert "[sandbox:" not in "".join(o["output"] for o in outcomes)


def test_a_missing_program_reads_the_same_in_the_sandbox(scripted) -> None:
    run = scripted(
        [{"tool_calls": [call("shell_execute", command="no-such-program-xyz --flag")]}, {"text": "x"}], "--no-approval"
    )
    assert results(run)[0]["output"] == "command not found: no-such-program-xyz"


def test_a_sandboxed_command_is_undone(scripted, workspace: Path, monkey_home: Path) -> None:
    (workspace / "README.md").write_text("# proj\nedited before\n")
    run = scripted(
        [
            {"tool_calls": [py("open('made.txt', 'w').write('new'); open('README.md', 'a').write('more\\n')")]},
            {"text": "done"},
        ],
        "--no-approval",
    )
    assert run.returncode == 0, run.stderr
    assert results(run)[0]["ok"], results(run)[0]["output"]
    assert (workspace / "made.txt").exists()
    undo = invoke(["undo", "--cwd", str(workspace)], home=monkey_home)
    assert undo.returncode == 0, undo.stdout + undo.stderr
    assert not (workspace / "made.txt").exists()
    assert (workspace / "README.md").read_text() == "# proj\nedited before\n"


@pytest.mark.pty
def test_a_persons_own_command_runs_outside_and_an_approved_call_only_when_approved_again(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    import pexpect

    from tests.support.cli import monkey_env, write_script

    from tests.support.pty import spawn_repl

    # !command: typed by the person, theirs (git commit writes .git/, which the sandbox keeps read-only)
    child = spawn_repl(workspace, monkey_home, write_script(tmp_path / "s.json", [{"text": "ok"}]))
    child.expect_exact("Type a task")
    child.sendline(f"!{PY} -c \"open('.git/hooks/by-hand', 'w').write('mine')\"")
    child.expect_exact("exit code 0")
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert (workspace / ".git" / "hooks" / "by-hand").read_text() == "mine"
    # the model's call, approved by the person in the inline question, still runs in the sandbox; blocked,
    # it runs outside only when the person says so to a second question
    script = write_script(
        tmp_path / "t.json",
        [{"tool_calls": [py("open('.git/hooks/approved', 'w').write('approved')")]}, {"text": "done"}],
    )
    task = pexpect.spawn(
        PY,
        [
            "-m",
            "monkey",
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(workspace),
            "--task",
            "do it",
        ],
        env=monkey_env(monkey_home, TERM="xterm"),
        encoding="utf-8",
        timeout=PTY_TIMEOUT,
        dimensions=(40, 120),
    )
    task.expect_exact("allow? [y/a/")
    task.sendline("y")
    task.expect_exact("this command runs again OUTSIDE the sandbox")
    task.expect_exact("allow? [y/n]")
    assert not (workspace / ".git" / "hooks" / "approved").exists()  # the sandboxed run could not write it
    task.sendline("y")
    task.expect(pexpect.EOF)
    task.close()
    assert (workspace / ".git" / "hooks" / "approved").read_text() == "approved"


@pytest.mark.subprocess
def test_kill_9_of_monkey_kills_everything_in_the_sandbox(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    """Even the grandchild that left the session and cleared its environment (which monkey alone cannot
    find after a kill -9): the sandbox's PID namespace dies with monkey, and everything in it."""
    import subprocess
    import time

    from tests.support.cli import monkey_env, write_script

    from tests.support.procs import pids_running

    family = Path(__file__).parent.parent / "support" / "fakes" / "family.py"
    folder = workspace / f"family-{os.getpid()}"  # in the workspace: the only place the command may write
    folder.mkdir()
    script = write_script(
        tmp_path / "s.json",
        [{"tool_calls": [call("shell_execute", command=f"{PY} {family} {folder} wait", timeout=300)]}, {"text": "x"}],
    )
    monkey = subprocess.Popen(
        [
            PY,
            "-m",
            "monkey",
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(workspace),
            "--no-approval",
            "--output-format",
            "stream-json",
            "--task",
            "run it",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=monkey_env(monkey_home),
    )
    try:
        deadline = time.monotonic() + 60
        while not (folder / "pids").exists():
            assert time.monotonic() < deadline and monkey.poll() is None, "the family never started"
            time.sleep(0.05)
        assert len(pids_running(str(folder))) >= 4  # the child and its three grandchildren (and bwrap)
        monkey.kill()
        monkey.wait()
        deadline = time.monotonic() + 20
        while pids_running(str(folder)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pids_running(str(folder)) == []
    finally:
        for pid in pids_running(str(folder)):
            os.kill(pid, 9)
