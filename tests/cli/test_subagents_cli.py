"""Sub-agents through the real CLI: stored as child sessions, shown as a tree, resumed with their parent."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.support.cli import invoke, stored_events, write_script

CHILD = {
    "turns": [
        {"tool_calls": [{"name": "file_write", "arguments": {"path": "found.txt", "content": "42\n"}}]},
        {"text": "Wrote found.txt with the answer."},
    ]
}


def task(agent: str, prompt: str, description: str) -> dict:
    return {"name": "task", "arguments": {"description": description, "prompt": prompt, "agent": agent}}


def test_children_are_stored_shown_as_a_tree_and_their_parent_resumes(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    script = write_script(
        tmp_path / "s.json",
        [{"tool_calls": [task("general", "find the answer", "find it")]}, {"text": "The child found it."}],
        agents={"general": CHILD},
    )
    base = ["agent", "--backend", "scripted", "--script", str(script), "--cwd", str(workspace), "--no-approval"]
    run = invoke([*base, "--output-format", "stream-json", "--task", "delegate"], home=monkey_home)
    assert run.returncode == 0, run.stderr
    root = run.events[0]["session_id"]
    [started] = run.of_type("subagent_started")
    child = started["child_session_id"]
    [done] = run.of_type("subagent_completed")
    assert done["handoff"]["files_changed"] == ["found.txt"] and done["handoff"]["completed"] is True
    assert (workspace / "found.txt").read_text() == "42\n"

    conn = sqlite3.connect(monkey_home / "monkey.db")
    rows = dict(conn.execute("SELECT id, parent FROM sessions").fetchall())
    assert rows == {root: None, child: root}
    child_types = [kind for kind, _ in stored_events(conn, child)]
    assert child_types[0] == "session_started" and child_types[-1] == "session_ended"
    assert "tool_result" in child_types and "subagent_started" not in child_types
    root_types = [kind for kind, _ in stored_events(conn, root)]
    assert "subagent_started" in root_types and "subagent_completed" in root_types
    assert not {"file_write"} & {
        json.loads(data).get("name") for kind, data in stored_events(conn, root) if kind == "tool_result"
    }, "the child's calls are in the child's session only"
    status = dict(conn.execute("SELECT id, status FROM sessions").fetchall())
    assert status == {root: "completed", child: "completed"}
    conn.close()

    listed = invoke(["sessions", "list", "--cwd", str(workspace)], home=monkey_home)
    assert root in listed.stdout and child not in listed.stdout, "sessions list shows what a person started"
    shown = invoke(["sessions", "show", root], home=monkey_home)
    assert shown.returncode == 0, shown.stderr
    tree = shown.stdout.split("sub-agents\n", 1)[1].splitlines()
    assert tree[0].startswith(f"  {child}  general  completed 1 turn  $0.0000  find it")
    assert f"parent     {root}" in invoke(["sessions", "show", child], home=monkey_home).stdout

    again = write_script(tmp_path / "again.json", [{"text": "Still 42."}])
    resumed = invoke(
        [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(again),
            "--cwd",
            str(workspace),
            "--continue",
            "--output-format",
            "stream-json",
            "--task",
            "and now?",
        ],
        home=monkey_home,
    )
    assert resumed.returncode == 0, resumed.stderr
    first = resumed.events[0]
    assert first["type"] == "session_started" and first["session_id"] == root and first["resumed"] is True, (
        "--continue goes on with the parent, not its child"
    )
    shown = invoke(["sessions", "show", root], home=monkey_home).stdout
    assert "tool      agent: general (session" in shown, "the parent's conversation keeps the handoff"
    assert f"  {child}  general" in shown, "and its sub-agents"

    removed = invoke(["sessions", "rm", root], home=monkey_home)
    assert removed.returncode == 0, removed.stderr
    conn = sqlite3.connect(monkey_home / "monkey.db")
    assert conn.execute("SELECT count(*) FROM sessions").fetchone() == (0,), "its sub-agents' sessions go with it"
    assert conn.execute("SELECT count(*) FROM events").fetchone() == (0,)
    conn.close()


def test_json_output_is_the_parents(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "s.json",
        [{"tool_calls": [task("explore", "look", "look")]}, {"text": "Parent's answer."}],
        agents={"explore": {"turns": [{"text": "Child's answer."}]}},
    )
    run = invoke(
        [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(workspace),
            "--output-format",
            "json",
            "--task",
            "delegate",
        ],
        home=monkey_home,
    )
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["result"] == "Parent's answer." and out["subtype"] == "success" and out["reason"] == "completed"
    conn = sqlite3.connect(monkey_home / "monkey.db")
    [(root,)] = conn.execute("SELECT id FROM sessions WHERE parent IS NULL").fetchall()
    assert out["session_id"] == root


def test_text_output_shows_the_childs_calls_under_the_task(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "s.json",
        [{"tool_calls": [task("general", "find the answer", "find it")]}, {"text": "The child found it."}],
        agents={
            "general": {
                "turns": [
                    {"text": "I will write it.", "tool_calls": CHILD["turns"][0]["tool_calls"]},
                    {"text": "Wrote found.txt with the answer."},
                ]
            }
        },
    )
    run = invoke(
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
            "delegate",
        ],
        home=monkey_home,
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    at = lines.index("● task general: find it")
    assert lines[at + 1] == "  ↳ general: find it"
    assert lines[at + 2] == "  │ ● file_write found.txt"
    assert lines[at + 3].startswith("  ✓ agent: general (session ")
    assert "I will write it." not in run.stdout, "the child's text is in its handoff, not the parent's answer"
    assert lines[-1] == "The child found it."
    assert "changed found.txt" in run.stderr, "the run's changes include its child's"


def test_a_background_child_is_waited_for_and_its_events_name_the_parents_call(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    background = task("general", "find the answer", "find it")
    background["arguments"] = {**background["arguments"], "background": True}
    script = write_script(
        tmp_path / "s.json",
        [{"tool_calls": [background]}, {"text": "Waiting for the child."}, {"text": "The child wrote found.txt."}],
        agents={"general": CHILD},
    )
    run = invoke(
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
    [started] = run.of_type("subagent_started")
    child, call = started["child_session_id"], started["call_id"]
    assert started["background"] is True
    assert (workspace / "found.txt").read_text() == "42\n"
    child_events = [e for e in run.events if e["session_id"] == child]
    assert child_events and all(e["parent_call_id"] == call for e in child_events)
    assert all("parent_call_id" not in e for e in run.events if e["session_id"] == root)
    last = run.events[-1]
    assert (last["type"], last["session_id"], last["reason"]) == ("session_ended", root, "completed")
    [result] = [e for e in run.of_type("turn_completed") if e["session_id"] == root]
    assert result["result"] == "The child wrote found.txt."

    conn = sqlite3.connect(monkey_home / "monkey.db")
    stored = [json.loads(data) for _, data in stored_events(conn, child)]
    conn.close()
    assert stored and {e.get("parent_call_id") for e in stored} == {call}, "stored as shown"
