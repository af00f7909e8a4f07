"""Two sub-agents asking at once: one dialog at a time, first asked first shown, each answer to its call.

The parent calls ``task`` twice in one response; both children run at once and both write a
file, which asks the person. The dialog shows one request, says which sub-agent asks and how
many more wait; the other is shown when the first is answered.
"""

from __future__ import annotations

from pathlib import Path

from monkey import events as ev
from monkey.ui.screens.approval import ApprovalScreen
from tests.support.app import settle, until


def task(description: str) -> dict:
    return {
        "name": "task",
        "arguments": {"description": description, "prompt": f"write {description}.txt", "agent": "general"},
    }


def child(name: str) -> dict:
    return {
        "turns": [
            {"tool_calls": [{"name": "file_write", "arguments": {"path": f"{name}.txt", "content": f"{name}\n"}}]},
            {"text": f"{name} done."},
        ]
    }


PARENT = [{"text": "Two at once.", "tool_calls": [task("one"), task("two")]}, {"text": "Both answered."}]
AGENTS = {"general#1": child("one"), "general#2": child("two")}


def title(screen: ApprovalScreen) -> str:
    return str(screen.query_one("#title").render())


async def both_asking(pilot, app) -> ApprovalScreen:  # type: ignore[no-untyped-def]
    app.query_one("#prompt").insert("delegate twice")
    await pilot.press("enter")
    await until(
        pilot,
        lambda: isinstance(app.screen, ApprovalScreen) and "1 more waiting" in title(app.screen),
        "one dialog saying another request waits",
    )
    assert len(app.screen_stack) == 2, "one dialog at a time"
    return app.screen  # type: ignore[return-value]


async def stored(app, *types: str) -> dict[str, list[ev.Event]]:  # type: ignore[no-untyped-def]
    """The stored events of the parent and each child session, by session id."""
    store = app.session.store
    root = app.agent.session_id
    out = {root: [ev.decode(line) for line in await store.event_lines(root, types + ("subagent_started",))]}
    for event in out[root]:
        if isinstance(event, ev.SubagentStarted):
            out[event.child_session_id] = [
                ev.decode(line) for line in await store.event_lines(event.child_session_id, types)
            ]
    return out


async def test_two_children_asking_at_once_are_asked_in_turn(app_for, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    app = app_for(PARENT, agents=AGENTS)
    async with app.run_test(size=(120, 40)) as pilot:
        first = await both_asking(pilot, app)
        asked = first.request
        assert asked.asker.startswith("general (sub-agent): ")
        assert f"asked by {asked.asker}" in title(first)
        first_name = asked.arguments["path"].removesuffix(".txt")
        second_name = {"one": "two", "two": "one"}[first_name]
        assert asked.asker == f"general (sub-agent): {first_name}"
        await pilot.press("y")
        await until(
            pilot,
            lambda: isinstance(app.screen, ApprovalScreen) and app.screen is not first,
            "the second request's dialog",
        )
        second = app.screen
        assert second.request.arguments["path"] == f"{second_name}.txt"
        assert second.request.asker == f"general (sub-agent): {second_name}"
        assert "more waiting" not in title(second) and len(app.screen_stack) == 2
        asked = [e.arguments["path"] for _, e in app.event_pane.events if isinstance(e, ev.ApprovalRequested)]
        assert asked == [f"{first_name}.txt", f"{second_name}.txt"], "first asked, first shown"
        await pilot.press("n", *"not that one", "enter")
        await settle(pilot, app)
        assert len(app.screen_stack) == 1
        assert (workspace / f"{first_name}.txt").read_text() == f"{first_name}\n"
        assert not (workspace / f"{second_name}.txt").exists()
        assert app.last_reason == "completed" and app.last_result == "Both answered."

        events = await stored(app, "approval_requested", "approval_resolved", "tool_result", "subagent_completed")
        root = events.pop(app.agent.session_id)
        handoffs = {e.handoff.session_id: e.handoff for e in root if isinstance(e, ev.SubagentCompleted)}
        assert len(events) == 2 and set(handoffs) == set(events)
        by_file = {}
        for sid, child_events in events.items():
            [requested] = [e for e in child_events if isinstance(e, ev.ApprovalRequested)]
            by_file[requested.arguments["path"]] = (sid, child_events)
        sid, mine = by_file[f"{first_name}.txt"]
        [resolved] = [e for e in mine if isinstance(e, ev.ApprovalResolved)]
        assert (resolved.decision, resolved.by) == ("approved", "user")
        assert [e.ok for e in mine if isinstance(e, ev.ToolResult)] == [True]
        assert handoffs[sid].completed and handoffs[sid].summary == f"{first_name} done."
        sid, theirs = by_file[f"{second_name}.txt"]
        [resolved] = [e for e in theirs if isinstance(e, ev.ApprovalResolved)]
        assert (resolved.decision, resolved.by, resolved.reason) == ("denied", "user", "the user said: not that one")
        [result] = [e for e in theirs if isinstance(e, ev.ToolResult)]
        assert not result.ok and "not that one" in result.output
        assert handoffs[sid].summary == f"{second_name} done.", "told why, the child went on"


async def test_escape_refuses_the_waiting_request_too(app_for, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    app = app_for(PARENT, agents=AGENTS)
    async with app.run_test(size=(120, 40)) as pilot:
        await both_asking(pilot, app)
        await pilot.press("escape")
        await settle(pilot, app)
        assert len(app.screen_stack) == 1, "no dialog is left open"
        assert not (workspace / "one.txt").exists() and not (workspace / "two.txt").exists()
        assert app.last_reason == "denied"
        events = await stored(app, "approval_resolved")
        events.pop(app.agent.session_id)
        decisions = [(e.decision, e.reason) for child_events in events.values() for e in child_events]
        assert decisions == [("denied", "the user stopped the turn")] * 2


async def test_ctrl_c_closes_the_dialog_and_the_waiting_request(app_for, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    app = app_for(PARENT, agents=AGENTS)
    async with app.run_test(size=(120, 40)) as pilot:
        await both_asking(pilot, app)
        await pilot.press("ctrl+c")
        await settle(pilot, app)
        assert len(app.screen_stack) == 1, "no dialog is left open"
        assert app.last_reason == "cancelled"
        assert not (workspace / "one.txt").exists() and not (workspace / "two.txt").exists()
        assert app._approvals.shown is None and not app._approvals.waiting


async def test_a_session_grant_on_the_first_covers_the_waiting_one(app_for, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    app = app_for(PARENT, agents=AGENTS)
    async with app.run_test(size=(120, 40)) as pilot:
        first = await both_asking(pilot, app)
        await pilot.press("a")  # every file_write in the workspace, for the session
        await settle(pilot, app)
        assert len(app.screen_stack) == 1, "the waiting request was not shown: the engine's grant decided it"
        assert (workspace / "one.txt").exists() and (workspace / "two.txt").exists()
        assert app.last_reason == "completed"
        events = await stored(app, "approval_requested", "approval_resolved")
        events.pop(app.agent.session_id)
        resolved = {}
        for child_events in events.values():
            [requested] = [e for e in child_events if isinstance(e, ev.ApprovalRequested)]
            [answer] = [e for e in child_events if isinstance(e, ev.ApprovalResolved)]
            resolved[requested.arguments["path"]] = (answer.decision, answer.by)
        shown = first.request.arguments["path"]
        other = ({"one.txt", "two.txt"} - {shown}).pop()
        assert resolved == {shown: ("approved_session", "user"), other: ("approved", "session")}


async def test_who_asks_is_shown_as_written_and_the_count_follows(workspace: Path) -> None:
    """The sub-agent's task is the model's text: never markup, its escapes written out, on one line."""
    from dataclasses import replace

    from tests.support.screen_data import ScreenApp, edit_request, shown_text

    asker = "general (sub-agent): [bold red]fix[/] \x1b[2Kgone\nnext"
    screen = ApprovalScreen(replace(edit_request(workspace), asker=asker), guard=0, waiting=2)
    app = ScreenApp(screen)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        shown = shown_text(screen.query_one("#title")).splitlines()
        assert shown[1].strip() == (
            "asked by general (sub-agent): [bold red]fix[/] \\x1b[2Kgone\\nnext   ·   2 more waiting"
        )
        screen.set_waiting(1)
        await pilot.pause()
        assert shown_text(screen.query_one("#title")).splitlines()[1].strip().endswith("·   1 more waiting")
        screen.set_waiting(0)
        await pilot.pause()
        assert "waiting" not in shown_text(screen.query_one("#title"))
        await pilot.press("y")
    assert app.results[0].approved
