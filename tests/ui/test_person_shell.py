"""``!command`` in the message box: the person's own shell command, shown, recorded, undoable."""

from __future__ import annotations

import json
from pathlib import Path

from monkey.ui.widgets.tool_block import ToolBlock
from tests.support.cli import invoke_async
from tests.support.app import SIZE, settle, type_and_send


async def test_a_bang_command_runs_without_the_model_and_can_be_undone(
    app_for, workspace: Path, monkey_home: Path
) -> None:
    app = app_for([{"text": "hand.txt says hello."}])
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "!echo hello > hand.txt && cat hand.txt")
        await settle(pilot, app)
        assert (workspace / "hand.txt").read_text() == "hello\n"
        [block] = app.transcript.query(ToolBlock)
        assert block.state == "ok" and "hello" in block.shown and not block.collapsed
        assert "echo hello > hand.txt" in str(block.title)
        assert app.agent.backend.calls == 0  # no model call for the person's command
        assert app.status.checkpoints == 1
        await type_and_send(pilot, app, "what does hand.txt say?")
        await settle(pilot, app)
        sent = app.agent.backend.requests[-1].messages
        assert "$ echo hello > hand.txt && cat hand.txt\nhello" in sent[-2].content
        session_id = app.agent.session_id
        await app.action_quit()
    exported = await invoke_async(["sessions", "export", session_id], home=monkey_home)
    types = [json.loads(line)["type"] for line in exported.stdout.splitlines()]
    assert types.count("tool_result") == 1 and "checkpoint_created" in types
    undone = await invoke_async(["undo", "--cwd", str(workspace)], home=monkey_home)
    assert undone.returncode == 0, undone.stderr
    assert not (workspace / "hand.txt").exists()
