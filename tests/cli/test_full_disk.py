"""The monkey home on a real full file system (a tmpfs of a few MB filled to the last byte, mounted in a
private mount namespace), and an empty ``monkey.db``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import invoke, monkey_env, write_script

FILL = """
set -u
mount -t tmpfs -o size=8m tmpfs "$MONKEY_HOME" || exit 99
"$PY" -m monkey agent --backend scripted --script "$SCRIPT" --cwd "$WS" --no-approval --task write >/dev/null || exit 98
dd if=/dev/zero of="$MONKEY_HOME/fill" bs=64k 2>/dev/null
python3 -c "import os, sys; s = os.statvfs(sys.argv[1]); sys.exit(97 if s.f_bavail else 0)" "$MONKEY_HOME" || exit 97
"$PY" -m monkey checkpoints --cwd "$WS" --json > "$OUT/list.json" 2> "$OUT/list.err"; echo $? > "$OUT/list.rc"
ID=$("$PY" -c "import json, sys; print(json.load(open(sys.argv[1]))['checkpoints'][0]['id'])" "$OUT/list.json" 2>/dev/null)
"$PY" -m monkey checkpoints show "$ID" --cwd "$WS" > "$OUT/show.txt" 2> "$OUT/show.err"; echo $? > "$OUT/show.rc"
"$PY" -m monkey undo --cwd "$WS" > /dev/null 2> "$OUT/undo.err"; echo $? > "$OUT/undo.rc"
"""


@pytest.mark.subprocess
def test_checkpoints_are_listed_and_shown_on_a_full_disk(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare(1) to mount a tmpfs in a private mount namespace")
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot make a mount namespace here: {probe.stderr.decode().strip()}")
    script = write_script(
        tmp_path / "s.json",
        [{"tool_calls": [{"name": "file_write", "arguments": {"path": "a.txt", "content": "one\n"}}]}, {"text": "ok"}],
    )
    out = tmp_path / "out"
    out.mkdir()
    env = monkey_env(monkey_home, PY=sys.executable, SCRIPT=str(script), WS=str(workspace), OUT=str(out))
    run = subprocess.run(["unshare", "-m", "sh", "-c", FILL], env=env, capture_output=True, text=True, timeout=300)
    if run.returncode == 99:
        pytest.skip(f"cannot mount a tmpfs here: {run.stderr.strip()}")
    assert run.returncode == 0, (run.returncode, run.stderr)
    assert (out / "list.rc").read_text().strip() == "0", (out / "list.err").read_text()
    [listed] = json.loads((out / "list.json").read_text())["checkpoints"]
    assert listed["paths"] == ["a.txt"] and listed["added"] == 1
    assert (out / "show.rc").read_text().strip() == "0", (out / "show.err").read_text()
    assert "+one" in (out / "show.txt").read_text()
    # a command that must write says why it cannot, in one line
    assert (out / "undo.rc").read_text().strip() == "1"
    assert "no space left on device" in (out / "undo.err").read_text()
    assert (workspace / "a.txt").read_text() == "one\n"


def test_an_empty_database_file_is_said(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    (monkey_home / "monkey.db").write_bytes(b"")
    listed = invoke(["checkpoints", "--cwd", str(workspace)], home=monkey_home)
    assert "monkey.db was empty (0 bytes); it is set up afresh" in listed.stderr
    script = write_script(tmp_path / "s.json", [{"text": "hi"}])
    (monkey_home / "monkey.db").write_bytes(b"")
    task = invoke(
        ["agent", "--backend", "scripted", "--script", str(script), "--cwd", str(workspace), "--task", "hi"],
        home=monkey_home,
    )
    assert task.returncode == 0, task.stderr
    assert "monkey.db was empty (0 bytes); it is set up afresh" in task.stderr
    again = invoke(
        ["agent", "--backend", "scripted", "--script", str(script), "--cwd", str(workspace), "--task", "hi"],
        home=monkey_home,
    )
    assert "was empty" not in again.stderr  # only when it is
