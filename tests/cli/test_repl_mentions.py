"""``@path`` in the ``--plain`` REPL: the file goes to the model with the line, as in the app."""

from __future__ import annotations

import json
from pathlib import Path

import pexpect

from tests.conftest import run_monkey, spawn_repl, write_script


def test_a_mention_attaches_the_file_in_the_repl(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    child = spawn_repl(workspace, monkey_home, write_script(tmp_path / "s.json", [{"text": "A title."}]))
    child.expect_exact("Type a task")
    child.sendline("what is @README.md about")
    child.expect_exact("attached README.md (1 line)")
    child.expect_exact("A title.")
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    listing = json.loads(run_monkey(["sessions", "list", "--json", "--cwd", str(workspace)], home=monkey_home).stdout)
    export = run_monkey(["sessions", "export", listing[0]["id"], "--format", "jsonl"], home=monkey_home).stdout
    [started] = [json.loads(line) for line in export.splitlines() if '"turn_started"' in line]
    assert started["prompt"].startswith("what is @README.md about\n\n")
    assert '<file path="README.md">\n# proj\n</file>' in started["prompt"]
