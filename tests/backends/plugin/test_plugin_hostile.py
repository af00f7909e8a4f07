"""Plugins that misbehave, as real processes: each ends the turn with one clear error, keeps
what already happened, and leaves no process behind."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.cli import monkey_env, run_monkey
from tests.support.procs import pids_running
from tests.support.plugins import task

FAST = "idle_timeout = 1.0\ngrace = 0.5\n"


def error_of(run) -> str:
    errors = [e for e in run.of_type("error") if e.get("fatal")]
    assert errors, run.stdout[-2000:]
    return errors[-1]["message"]


def ended_with_error(run) -> None:
    assert run.returncode == 1, run.stderr
    assert run.of_type("turn_completed")[0]["reason"] == "error"


def test_garbage_on_stdout_ends_the_turn_and_keeps_the_text(install, workspace: Path, monkey_home: Path):
    install("garbage", [{"text": "before"}, {"line": "Traceback: this is not json"}, {"text": "never"}])
    run = task(workspace, monkey_home, "garbage")
    ended_with_error(run)
    assert (
        "plugin garbage broke the protocol: a line that is not valid JSON: 'Traceback: this is not json'"
        in error_of(run)
    )
    assert [e["text"] for e in run.of_type("text_delta")] == ["before"]
    assert "broke the protocol" in run.stderr.splitlines()[-1]


def test_a_ten_megabyte_line_is_stopped_at_the_limit(install, workspace: Path, monkey_home: Path):
    install("bigline", [{"text": "start"}, {"big": 10_000_000}])
    run = task(workspace, monkey_home, "bigline")
    ended_with_error(run)
    assert "printed a line longer than 8388608 bytes" in error_of(run)
    assert [e["text"] for e in run.of_type("text_delta")] == ["start"]


def test_a_response_to_an_id_never_sent_is_a_protocol_error(install, workspace: Path, monkey_home: Path):
    install("wrongid", [{"text": "hi"}, {"respond": {"status": "complete"}, "id": 99}])
    run = task(workspace, monkey_home, "wrongid")
    ended_with_error(run)
    assert "a response to id 99, which monkey never sent (agent.run is id 3)" in error_of(run)


def test_a_response_before_its_notifications_loses_nothing(install, workspace: Path, monkey_home: Path):
    install(
        "early",
        [
            {"respond": {"status": "complete", "tokens_used": 5}},
            {"text": "late "},
            {"text": "words"},
            {"notify": {"type": "complete", "data": None}},
            {"wait_eof": True},
        ],
    )
    run = task(workspace, monkey_home, "early")
    assert run.returncode == 0, run.stderr
    [done] = run.of_type("message_completed")
    assert done["text"] == "late words"
    assert run.of_type("usage")[0]["output_tokens"] == 5


def test_silence_is_stopped_by_the_idle_watchdog(install, workspace: Path, monkey_home: Path):
    install("silent", [{"text": "thinking..."}, {"sleep": 60}], settings=FAST)
    started = time.monotonic()
    run = task(workspace, monkey_home, "silent")
    ended_with_error(run)
    assert "plugin silent printed nothing for 1 s and was stopped" in error_of(run)
    assert time.monotonic() - started < 30


@pytest.mark.subprocess
def test_a_plugin_ignoring_sigterm_is_killed(install, workspace: Path, monkey_home: Path, tmp_path: Path):
    plugin = install("stubborn", [{"ignore_term": True}, {"text": "you cannot stop me"}, {"sleep": 60}], settings=FAST)
    run = task(workspace, monkey_home, "stubborn", process=True)
    ended_with_error(run)
    assert "printed nothing for 1 s" in error_of(run)
    # none left of this test's plugin (other tests' scripted plugins may be running beside it)
    assert not pids_running(f"PLUGIN_SCRIPT={plugin.script}\0", where="environ")


def test_exiting_mid_run_says_its_status_and_stderr(install, workspace: Path, monkey_home: Path):
    install("crasher", [{"text": "half"}, {"stderr": "boom: out of cheese"}, {"exit": 3}])
    run = task(workspace, monkey_home, "crasher")
    ended_with_error(run)
    message = error_of(run)
    assert "plugin crasher exited with status 3: boom: out of cheese" in message
    assert "before it finished agent.run" in message
    assert [e["text"] for e in run.of_type("text_delta")] == ["half"]


@pytest.mark.parametrize(
    ("error", "said"),
    [
        ({"code": -32601, "message": "Method not found"}, "plugin nope does not implement agent.run (-32601"),
        (
            {"code": -32000, "message": "model exploded"},
            "plugin nope answered agent.run with error -32000: model exploded",
        ),
    ],
)
def test_an_error_object_ends_the_turn(install, workspace: Path, monkey_home: Path, error, said):
    install("nope", [{"text": "so far"}, {"respond": None, "error": error}])
    run = task(workspace, monkey_home, "nope")
    ended_with_error(run)
    assert said in error_of(run)
    assert [e["text"] for e in run.of_type("text_delta")] == ["so far"]


def test_not_available_is_one_line_before_any_work(install, workspace: Path, monkey_home: Path):
    plugin = install("offline", [{"text": "never"}], available={"available": False, "reason": "server not running"})
    run = task(workspace, monkey_home, "offline")
    ended_with_error(run)
    assert error_of(run) == "plugin offline is not available: server not running"
    assert "agent.run" not in plugin.methods()
    assert run.stderr.strip().splitlines()[-1].endswith("plugin offline is not available: server not running")


def test_unknown_notifications_are_counted_raw_events_and_requests_refused(install, workspace: Path, monkey_home: Path):
    install(
        "odd",
        [
            {"notify": {"type": "mystery", "data": {"x": 1}}},
            {"method": "log", "params": "hi"},
            {"request": {"id": "q1", "method": "host.secrets"}},
            {"text": "fine"},
        ],
    )
    run = task(workspace, monkey_home, "odd")
    assert run.returncode == 0, run.stderr
    raws = run.of_type("raw")
    assert [r["data"]["params"] for r in raws] == [{"type": "mystery", "data": {"x": 1}}, "hi"]
    assert all(r["source"] == "plugin:odd" for r in raws)
    assert run.of_type("message_completed")[0]["text"] == "fine"


@pytest.mark.subprocess
def test_ctrl_c_closes_the_plugins_stdin_then_stops_it(install, workspace: Path, monkey_home: Path):
    plugin = install("waiter", [{"text": "working"}, {"wait_eof": True}])
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "monkey",
            "agent",
            "--backend",
            "plugin:waiter",
            "--task",
            "go",
            "--cwd",
            str(workspace),
            "--output-format",
            "stream-json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=monkey_env(monkey_home),
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if b'"text_delta"' in line:
            break
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert b'"reason":"cancelled"' in out, err
    assert plugin.saw_eof()  # it was told by EOF first, and exited on its own


def test_near_misses_of_the_seeds_shapes_still_stream(install, workspace: Path, monkey_home: Path):
    install(
        "sloppy",
        [
            {"line": '{"jsonrpc":"2.0","id":null,"method":"stream","params":{"type":"text","data":"a"}}'},
            {"notify": {"type": "text", "data": {"text": "b"}}},
            {"text": "c"},
        ],
    )
    run = task(workspace, monkey_home, "sloppy")
    assert run.returncode == 0, run.stderr
    assert run.of_type("message_completed")[0]["text"] == "abc"


@pytest.mark.subprocess
async def test_cancelling_a_plugin_that_ignores_eof_and_sigterm_kills_it(install, workspace: Path):
    import asyncio

    from monkey.agent.loop import Agent
    from monkey.backends.select import create_backend
    from monkey.config import load_config
    from monkey.events import TextDelta, TurnCompleted

    install("deaf", [{"ignore_term": True}, {"text": "la la la"}, {"sleep": 120}], settings="grace = 0.5\n")
    backend = create_backend("plugin:deaf", config=load_config(workspace), model=None, script=None, workspace=workspace)
    agent = Agent(backend=backend, workspace=workspace)
    agent.session_started()
    events = []
    async for event in agent.run("go"):
        events.append(event)
        if isinstance(event, TextDelta):
            started = asyncio.get_running_loop().time()
            agent.cancel()
    [done] = [e for e in events if isinstance(e, TurnCompleted)]
    assert done.reason == "cancelled"
    proc = backend.last_host.proc
    assert proc.returncode == -9  # stdin closed, 0.5 s, SIGTERM ignored, 0.5 s, SIGKILL
    assert proc.stopped == "cancelled"
    assert asyncio.get_running_loop().time() - started < 10


def test_a_line_over_the_cap_ends_a_task_from_stdin_cleanly(install, workspace: Path, monkey_home: Path):
    """A task read from standard input: monkey says why the plugin was stopped and exits with no
    "Event loop is closed" traceback (the stopped plugin's stdout, left unread, kept its transport
    open past the loop's end)."""
    install("bigline", [{"text": "start"}, {"big": 10_000_000}])
    run = run_monkey(
        ["agent", "--backend", "plugin:bigline", "--plain", "--cwd", str(workspace)],
        home=monkey_home,
        input="hi\n",
        timeout=120,
    )
    assert "plugin bigline printed a line longer than 8388608 bytes" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr and "Event loop is closed" not in run.stderr, run.stderr
    assert run.returncode == 1
