"""An endless line from an agent CLI: monkey stops the child at ``max_line_bytes`` with an error
event, stays small in memory and stores nothing huge (one endless line took monkey to 2.6 GB
and was stored whole)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from monkey.backends.claude_code.parser import ClaudeStreamParser
from monkey.backends.codex.app_parser import CodexAppParser
from tests.support.cli import monkey_env, run_monkey
from tests.support.external import FIXTURES


@pytest.mark.subprocess
def test_endless_line_from_claude_is_stopped_small(monkey_home: Path, workspace: Path, fake_agent: Path) -> None:
    (monkey_home / "config.toml").write_text(
        f"[claude_code]\nexecutable = {json.dumps(str(fake_agent))}\nmax_line_bytes = 1048576\n"
        '[claude_code.env]\nFAKE_MODE = "endless_line"\nFAKE_ENDLESS_MB = "400"\n'
        f"FAKE_REPLAY = {json.dumps(str(FIXTURES / 'claude_code' / 'tool_write.jsonl'))}\n"
    )
    # monkey itself, with its own peak memory (VmHWM: this image only; ru_maxrss would count the
    # forked test runner's memory, kept across exec) said at exit; children are not counted
    boot = (
        "import atexit, re, runpy, sys\n"
        "atexit.register(lambda: sys.stderr.write('PEAK_KB ' + re.search(r'VmHWM:\\s*(\\d+)', "
        "open('/proc/self/status').read())[1] + '\\n'))\n"
        "sys.argv = ['monkey'] + sys.argv[1:]\n"
        "runpy.run_module('monkey', run_name='__main__')\n"
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            boot,
            "agent",
            "--backend",
            "claude-code",
            "--task",
            "hi",
            "--output-format",
            "stream-json",
            "--cwd",
            str(workspace),
        ],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=monkey_env(monkey_home),
        timeout=300,
    )
    out, err = proc.stdout, proc.stderr
    assert proc.returncode == 1, err
    assert b"printed a line longer than 1048576 bytes" in err, err
    peak_mb = int(err.split(b"PEAK_KB ")[1].split()[0]) / 1024
    assert peak_mb < 200, f"monkey grew to {peak_mb:.0f} MB on an endless line"
    events = [json.loads(line) for line in out.splitlines()]
    (error,) = [e for e in events if e["type"] == "error"]
    assert "max_line_bytes" in error["message"] and error["fatal"]
    conn = sqlite3.connect(monkey_home / "monkey.db")
    try:
        biggest = conn.execute("SELECT max(length(data)) FROM events").fetchone()[0]
    finally:
        conn.close()
    assert biggest < 64 * 1024, f"an event of {biggest} bytes was stored"


def test_parsers_drop_an_oversized_line_at_once() -> None:
    for parser in (ClaudeStreamParser(), CodexAppParser()):
        parser.max_line = 1000
        parser.feed(b'{"type":"x"}\n' + b"a" * 600)
        assert not parser.too_long and parser._framer.pending == 600
        assert parser.feed(b"a" * 600) == [] and parser.too_long and "longer than 1000 bytes" in parser.error
        assert parser._framer.pending == 0, "nothing of the long line is kept"
        assert parser.feed(b"more\n") == [] and parser.close() == []


def test_a_line_over_the_cap_ends_a_task_from_stdin_cleanly(
    monkey_home: Path, workspace: Path, fake_agent: Path
) -> None:
    """A task read from standard input: monkey says why the run was stopped and exits with no
    "Event loop is closed" traceback
    (the stopped child's stdout, left unread, kept its transport open past the loop's end)."""
    (monkey_home / "config.toml").write_text(
        f"[claude_code]\nexecutable = {json.dumps(str(fake_agent))}\nmax_line_bytes = 1048576\n"
        '[claude_code.env]\nFAKE_MODE = "endless_line"\nFAKE_ENDLESS_MB = "40"\n'
        f"FAKE_REPLAY = {json.dumps(str(FIXTURES / 'claude_code' / 'tool_write.jsonl'))}\n"
    )
    run = run_monkey(
        ["agent", "--backend", "claude-code", "--plain", "--cwd", str(workspace)],
        home=monkey_home,
        input="hi\n",
        timeout=120,
    )
    assert "printed a line longer than 1048576 bytes (max_line_bytes in its config section)" in run.stderr
    assert "Traceback" not in run.stderr and "Event loop is closed" not in run.stderr, run.stderr
    assert run.returncode == 1


def test_a_stopped_childs_stdout_is_read_to_its_end(fake_agent: Path, tmp_path: Path) -> None:
    """After a line over the cap the child is stopped and what is left of its stdout read, so its
    pipe closes inside the event loop (a full, unread reader kept the transport open until it was
    collected after the loop had closed: "Event loop is closed" when monkey exited)."""
    import asyncio

    import pytest

    from monkey.backends.base import BackendError
    from tests.support.external import backend_events, claude

    backend = claude(
        fake_agent,
        tmp_path,
        mode="endless_line",
        fixture="tool_write",
        env={"FAKE_ENDLESS_MB": "400"},
        max_line_bytes=1 << 20,
    )
    with pytest.raises(BackendError, match="printed a line longer than 1048576 bytes"):
        asyncio.run(backend_events(backend))
    assert backend.last is not None and backend.last.drained
