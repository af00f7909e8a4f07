"""The sandbox's placeholders (bubblewrap's empty mount points for protected config not there yet)
are monkey's own: a checkpoint taken while another command holds them never records them."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from monkey.checkpoints.guard import CheckpointGuard
from monkey.tools.sandbox import Sandbox, bubblewrap_problem

_HOLD = "import os, time\nopen('started', 'w').close()\nwhile not os.path.exists('go'):\n    time.sleep(0.05)\n"


def _wait_for(path: Path) -> None:
    deadline = time.monotonic() + 60
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


@pytest.mark.skipif(bool(bubblewrap_problem()), reason=bubblewrap_problem() or "bubblewrap works")
def test_a_checkpoint_taken_while_another_command_holds_placeholders_never_records_them(
    workspace: Path, monkey_home: Path
) -> None:
    ws = workspace.resolve()
    kept = [ws / "AGENTS.md", ws / ".mcp.json", ws / ".claude"]
    sandbox = Sandbox("bubblewrap", executable="bwrap", keep=lambda root: kept)
    guard = CheckpointGuard(ws, home=monkey_home)
    try:
        during = guard.begin(tool="shell_execute", paths=None, session_id="s1", turn=1, call_id="c1")
        prepared = sandbox.prepare([sys.executable, "-c", _HOLD], ws, {"PATH": "/usr/bin:/bin"})
        try:
            holder = subprocess.Popen(prepared.argv, cwd=ws, env=prepared.env, stdin=subprocess.DEVNULL)
            try:
                _wait_for(ws / "started")  # bubblewrap made its mount points before the command ran
                assert (ws / "AGENTS.md").exists() and (ws / ".mcp.json").exists()
                (ws / "made.txt").write_text("this command's\n")
                guard.finish(during, ok=True)  # ends while the placeholders are there
                across = guard.begin(tool="shell_execute", paths=None, session_id="s1", turn=2, call_id="c2")
                (ws / "go").touch()
                assert holder.wait(60) == 0
            finally:
                if holder.poll() is None:
                    holder.kill()
                    holder.wait()
        finally:
            prepared.cleanup()
        assert not (ws / "AGENTS.md").exists() and not (ws / ".mcp.json").exists() and not (ws / ".claude").exists()
        guard.finish(across, ok=True)  # began while they were there, ends after they are gone
        assert "AGENTS.md" not in during.paths and ".mcp.json" not in during.paths, during.paths
        assert "made.txt" in during.paths
        assert "AGENTS.md" not in across.paths and ".mcp.json" not in across.paths, across.paths
    finally:
        guard.close()
