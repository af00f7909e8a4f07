"""One scripted conversation through every front end stores the same events.

Every front end starts its session through the session layer (:mod:`monkey.session.setup`) and
stores what happens through the session's one pump (:meth:`monkey.session.session.Session.pump`);
so ``--task``, the ``--plain`` REPL, the app, ACP and ``monkey serve`` (its ``agent`` tool) must
leave the same events in the store for the same conversation: a message, a ``file_write`` the
auto mode lets run (checkpointed), the model's answer, the end of the session.

What differs by nature is normalised and nothing else: the workspace path (each front end works
in its own repository), ids (sessions, calls, checkpoints: new ones each run), times and
durations, and the shadow repository's commit hashes (they hash the time). No front end records
an event the others do not: ``--task`` ends the session with the turn's own reason, the others
with ``completed`` when the person (or the editor, or the client) goes away; for a completed turn
both are ``session_ended`` with reason ``completed``.

The app runs in-process (Pilot), ``--task``, ACP and ``monkey serve`` in-process on the same
objects their commands build (the process boundary is not what this tests; their own tests
spawn them); the REPL runs on a pty, since prompt-toolkit reads keys from a terminal.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pexpect
import pytest

from monkey.permissions.requests import HeadlessApprover
from monkey.session.setup import Questions, SessionRequest, build_agent
from monkey.store import SessionStore
from tests.support.cli import init_git_workspace, write_script
from tests.support.pty import spawn_repl

pytestmark = pytest.mark.pty

TURNS = [
    {
        "text": "I will write the notes.",
        "tool_calls": [{"name": "file_write", "arguments": {"path": "notes.txt", "content": "hi\n"}}],
    },
    {"text": "Wrote notes.txt."},
]
PROMPT = "write the notes"
FRONT_ENDS = ("task", "repl", "app", "acp", "serve")

_HEX = re.compile(r"\b[0-9a-f]{12,64}\b")
_TIMES = ("ts", "duration_ms", "ttft_ms", "wait_ms", "elapsed_ms", "ran_ms", "seconds", "wall")


def _request(workspace: Path, script: Path) -> SessionRequest:
    return SessionRequest(workspace=workspace, backend="scripted", script=str(script), no_approval=True)


async def _task(workspace: Path, script: Path) -> None:
    """``monkey agent --task PROMPT --no-approval`` (stream-json on stdout), its driver in this process."""
    from monkey.line.task import run_task

    setup = build_agent(_request(workspace, script), HeadlessApprover())
    code = await asyncio.to_thread(run_task, setup, PROMPT, output_format="stream-json")
    assert code == 0


def _repl(workspace: Path, home: Path, script: Path) -> None:
    """``monkey agent --plain --no-approval``: type the message, wait for the answer, quit."""
    child = spawn_repl(workspace, home, script, "--no-approval")
    child.expect_exact("Type a task")
    child.sendline(PROMPT)
    child.expect_exact("Wrote notes.txt.")
    child.expect_exact("›")
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


async def _app(workspace: Path, script: Path) -> None:
    """The app (Pilot): type the message, wait for the turn, quit."""
    from tests.support.app import make_app, settle, type_and_send

    app = make_app(workspace, script, TURNS, "--no-approval")
    async with app.run_test(size=(120, 36)) as pilot:
        await type_and_send(pilot, app, PROMPT)
        await settle(pilot, app)
        await app.action_quit()


async def _acp(workspace: Path, script: Path) -> None:
    """An editor over ACP: ``session/new``, one ``session/prompt``, then the connection closes."""
    from acp import PROTOCOL_VERSION, text_block

    from monkey.acp.server import MonkeyAcpAgent
    from tests.support.acp import EditorClient

    agent = MonkeyAcpAgent(_request(None, script), Questions())  # type: ignore[arg-type]  # the editor names it
    agent.on_connect(EditorClient())
    await agent.initialize(protocol_version=PROTOCOL_VERSION)
    new = await agent.new_session(cwd=str(workspace), mcp_servers=[])
    done = await agent.prompt(session_id=new.session_id, prompt=[text_block(PROMPT)])
    assert done.stop_reason == "end_turn"
    await agent.close_all()


async def _serve(workspace: Path, script: Path) -> None:
    """An MCP client calls ``monkey serve``'s ``agent`` tool once, then the server stops."""
    from monkey.mcp_server.host import build_host

    host = build_host(_request(workspace, script), Questions())
    try:
        done = await host.tasks.start(PROMPT)  # type: ignore[union-attr]
        assert done.ok, done
    finally:
        await host.close()


def _normal(value: Any, workspace: str, ids: dict[str, str], key: str = "") -> Any:
    """``value`` with what differs between runs by nature replaced (see the module's docstring)."""
    if isinstance(value, dict):
        return {k: _normal(v, workspace, ids, k) for k, v in value.items() if k not in _TIMES}
    if isinstance(value, list):
        return [_normal(v, workspace, ids, key) for v in value]
    if isinstance(value, str):
        if key == "id" or key.endswith("_id"):
            return ids.setdefault(value, f"<id{len(ids)}>") if value else value
        return _HEX.sub("<hex>", value.replace(workspace, "<ws>"))
    return value


async def _stored(workspace: Path) -> list[dict[str, Any]]:
    """The events of the one session stored for ``workspace``, normalised."""
    async with await SessionStore.open() as store:
        sessions = await store.list_sessions(str(workspace))
        assert len(sessions) == 1, f"{workspace}: {[s.id for s in sessions]}"
        lines = await store.event_lines(sessions[0].id)
    ids: dict[str, str] = {}
    return [_normal(json.loads(line), str(workspace), ids) for line in lines]


async def test_the_same_conversation_is_stored_the_same_through_every_front_end(
    tmp_path: Path, monkey_home: Path
) -> None:
    script = write_script(tmp_path / "script.json", TURNS)
    # paths of one length: the system prompt names the workspace, and its length is counted in the tokens
    spaces = {
        name: init_git_workspace(tmp_path / f"w{n}" / "proj", tmp_path / f"w{n}") for n, name in enumerate(FRONT_ENDS)
    }
    await _task(spaces["task"], script)
    await asyncio.to_thread(_repl, spaces["repl"], monkey_home, script)
    await _app(spaces["app"], tmp_path / "app-script.json")
    await _acp(spaces["acp"], script)
    await _serve(spaces["serve"], script)
    for name, ws in spaces.items():
        assert (ws / "notes.txt").read_text() == "hi\n", f"{name} did not write the file"
    stored = {name: await _stored(ws) for name, ws in spaces.items()}
    reference = stored["task"]
    kinds = [event["type"] for event in reference]
    assert kinds[0] == "session_started" and kinds[-1] == "session_ended"
    assert {"tool_started", "checkpoint_created", "tool_result", "message_completed", "turn_completed"} <= set(kinds)
    for name in FRONT_ENDS[1:]:
        theirs = stored[name]
        assert [e["type"] for e in theirs] == kinds, f"{name} stored other events than --task"
        for ours, other in zip(reference, theirs, strict=True):
            assert other == ours, f"{name} stored {other} where --task stored {ours}"
