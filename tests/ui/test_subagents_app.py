"""The app shows a sub-agent as a block under its task call: live tool calls, then its answer."""

from __future__ import annotations

from monkey.ui.widgets.subagent_block import SubagentBlock
from monkey.ui.widgets.tool_block import ToolBlock
from tests.support.app import settle, until

WRITE = {"name": "file_write", "arguments": {"path": "found.txt", "content": "42\n"}}
TASK = {"name": "task", "arguments": {"description": "find it", "prompt": "find the answer", "agent": "general"}}


async def test_a_child_block_under_its_task_call(app_for, workspace) -> None:  # type: ignore[no-untyped-def]
    turns = [{"tool_calls": [TASK]}, {"text": "The child wrote it."}]
    child = {"turns": [{"tool_calls": [WRITE]}, {"text": "Wrote found.txt."}]}
    app = app_for(turns, "--no-approval", agents={"general": child})
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app._agent is not None, "the agent is built")
        app.query_one("#prompt").insert("delegate")
        await pilot.press("enter")
        await settle(pilot, app)
        [block] = app.transcript.query(SubagentBlock)
        tools = list(app.transcript.query(ToolBlock))
        assert [t.tool for t in tools] == ["task"], "the child's calls are in its block, not the transcript"
        children = list(app.transcript.children)
        assert children.index(block) == children.index(tools[0]) + 1, "right under the task call"
        assert block.title.startswith("↳ general: find it · done · 1 calls")
        assert [line.plain for line in block.lines] == ["● file_write found.txt ✓"]
        assert block.answer == "Wrote found.txt."
        assert app.last_reason == "completed" and app.last_result == "The child wrote it."
        assert (workspace / "found.txt").read_text() == "42\n"
        pane = app.event_pane
        pane.set_filter("@" + block.session_id[:12])
        kept = [event for _, event in pane.events if pane._matches(event)]
        assert kept and all(event.session_id == block.session_id for event in kept)
        assert {"session_started", "tool_call", "tool_result", "session_ended"} <= {e.type for e in kept}
        pane.set_filter("@" + block.session_id[:12] + " tool_call")
        assert [e.type for _, e in pane.events if pane._matches(e)] == ["tool_call"]


async def test_a_resumed_parent_shows_its_children(app_for, workspace, monkey_home, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tests.support.cli import invoke_async, write_script

    child = {"turns": [{"tool_calls": [WRITE]}, {"text": "Wrote found.txt."}]}
    script = write_script(
        tmp_path / "first.json", [{"tool_calls": [TASK]}, {"text": "The child wrote it."}], agents={"general": child}
    )
    run = await invoke_async(
        [
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
            "delegate",
        ],
        home=monkey_home,
    )
    assert run.returncode == 0, run.stderr
    root = run.events[0]["session_id"]
    app = app_for([{"text": "again"}], resume=root)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: list(app.transcript.query(SubagentBlock)), "the child's block is shown")
        [block] = app.transcript.query(SubagentBlock)
        assert block.collapsed and block.title.startswith("↳ general: find it · done · 1 calls")
        assert [line.plain for line in block.lines] == ["● file_write found.txt ✓"]
        assert block.answer == "Wrote found.txt."
        children = list(app.transcript.children)
        task_block = app.transcript.tools[block.call_id]
        assert children.index(block) == children.index(task_block) + 1


async def test_a_background_child_block_says_so_until_it_ends(app_for, workspace) -> None:  # type: ignore[no-untyped-def]
    (workspace / "wait.sh").write_text("for i in $(seq 1200); do [ -f go ] && break; sleep 0.05; done\n")
    background = {**TASK, "arguments": {**TASK["arguments"], "background": True}}
    turns = [{"tool_calls": [background]}, {"text": "Waiting for it."}, {"text": "It is done."}]
    child = {
        "turns": [
            {"tool_calls": [{"name": "shell_execute", "arguments": {"command": "sh wait.sh"}}]},
            {"text": "Saw go."},
        ]
    }
    app = app_for(turns, "--no-approval", agents={"general": child})
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app._agent is not None, "the agent is built")
        app.query_one("#prompt").insert("delegate in the background")
        await pilot.press("enter")
        await until(
            pilot, lambda: [b for b in app.transcript.query(SubagentBlock) if b.lines], "the child runs its command"
        )
        [block] = app.transcript.query(SubagentBlock)
        assert block.title.startswith("↳ general: find it · running in the background · 1 calls")
        assert app.transcript.tools[block.call_id].finished, "the task call itself has returned"
        (workspace / "go").write_text("")
        await until(pilot, lambda: app.last_reason == "completed", "the turn ends after the child")
        assert block.title.startswith("↳ general: find it · done · 1 calls")
        assert app.last_result == "It is done." and block.answer == "Saw go."
