"""A resumed session shows its earlier tool calls, not only the messages and answers."""

from __future__ import annotations

from pathlib import Path

from monkey.events import MessageCompleted, ToolCallEvent, ToolResult, TurnStarted, encode
from monkey.store.history import Said, ToolUse, history_items
from monkey.ui.widgets.assistant_text import AssistantText
from monkey.ui.widgets.tool_block import ToolBlock
from tests.support.cli import invoke_async, write_script
from tests.support.app import settle

SIZE = (120, 36)
WRITE = {"name": "file_write", "arguments": {"path": "notes.txt", "content": "one\n"}}
SHELL = {"name": "shell_execute", "arguments": {"command": "ls"}}


async def test_the_app_resumes_with_the_earlier_tool_calls_and_their_results(
    app_for, workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    script = write_script(
        tmp_path / "first.json",
        [
            {"text": "Writing it.", "tool_calls": [WRITE]},
            {"text": "Listing.", "tool_calls": [SHELL]},
            {"text": "All done."},
        ],
    )
    first = await invoke_async(
        [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(workspace),
            "--no-approval",
            "--task",
            "write notes",
            "--output-format",
            "stream-json",
        ],
        home=monkey_home,
    )
    assert first.returncode == 0, first.stderr
    app = app_for([{"text": "x"}], continue_=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        blocks = list(app.transcript.query(ToolBlock))
        assert [(b.tool, b.state) for b in blocks] == [("file_write", "ok"), ("shell_execute", "ok")]
        assert "notes.txt" in blocks[0].shown and "README.md" in blocks[1].shown
        answers = [a.source for a in app.transcript.query(AssistantText)]
        assert answers == ["Writing it.", "Listing.", "All done."]
        assert "› write notes" in [str(w.render()) for w in app.transcript.query(".user")]


def test_history_keeps_the_order_pairs_results_and_skips_damaged_rows() -> None:
    lines = [
        encode(TurnStarted(turn=1, prompt="do it")),
        encode(MessageCompleted(text="On it.")),
        encode(ToolCallEvent(call_id="c1", name="file_read", arguments={"path": "a"})),
        b"this row was damaged",
        encode(ToolCallEvent(call_id="c2", name="shell_execute", arguments={"command": "sleep 9"})),
        encode(ToolResult(call_id="c1", name="file_read", ok=False, output="no such file")),
        encode(ToolResult(call_id="zz", name="file_read", ok=True, output="a result with no call")),
        encode(MessageCompleted(text="")),
    ]
    items = history_items(lines)
    assert items[:2] == [Said("user", "do it"), Said("assistant", "On it.")]
    read, sleep = items[2:]
    assert isinstance(read, ToolUse) and read.result is not None and read.result.output == "no such file"
    assert isinstance(sleep, ToolUse) and sleep.call.call_id == "c2" and sleep.result is None  # killed while it ran
