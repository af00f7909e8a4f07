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
from tests.support.cli import monkey_env
from tests.external.conftest import FIXTURES


@pytest.mark.subprocess
def test_endless_line_from_claude_is_stopped_small(monkey_home: Path, workspace: Path, fake_agent: Path) -> None:
    (monkey_home / "config.toml").write_text(
        f"[claude_code]\nexecutable = {json.dumps(str(fake_agent))}\nmax_line_bytes = 1048576\n"
        "[claude_code.env]\nFAKE_MODE = \"endless_line\"\nFAKE_ENDLESS_MB = \"400\"\n"
        f"FAKE_REPLAY = {json.dumps(str(FIXTURES / 'claude_code' / 'tool_write.jsonl'))}\n")
    # monkey itself, with its own peak memory (VmHWM: this image only; ru_maxrss would count the
    # forked test runner's memory, kept across exec) said at exit; children are not counted
    boot = ("import atexit, re, runpy, sys\n"
            "atexit.register(lambda: sys.stderr.write('PEAK_KB ' + re.search(r'VmHWM:\\s*(\\d+)', "
            "open('/proc/self/status').read())[1] + '\\n'))\n"
            "sys.argv = ['monkey'] + sys.argv[1:]\n"
            "runpy.run_module('monkey', run_name='__main__')\n")
    proc = subprocess.run([sys.executable, "-c", boot, "agent", "--backend", "claude-code", "--task", "hi",
                           "--output-format", "stream-json", "--cwd", str(workspace)],
                          stdin=subprocess.DEVNULL, capture_output=True, env=monkey_env(monkey_home), timeout=300)
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
