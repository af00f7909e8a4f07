"""``monkey acp``: edits as diffs, errors as text, stop reasons, sessions reopened by a later process."""

from __future__ import annotations

from pathlib import Path

from monkey.events import MessageCompleted, TurnCompleted
from monkey.tools.fileio import unified_diff
from tests.support.acp import prompt, start_monkey, text_of
from tests.support.cli import invoke_async, write_script


def _args(script: Path) -> tuple[str, ...]:
    return ("--backend", "scripted", "--script", str(script))


async def test_an_edit_is_shown_as_its_hunk(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "s.json",
        [
            {
                "tool_calls": [
                    {
                        "name": "file_edit",
                        "arguments": {"path": "README.md", "old_string": "# proj", "new_string": "# project"},
                    }
                ]
            },
            {"text": "renamed"},
        ],
    )
    async with start_monkey(monkey_home, *_args(script), "--no-approval") as (conn, client, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=prompt("rename the project"))
    done = [u for u in client.updates if u.session_update == "tool_call_update" and u.status == "completed"][0]
    (diff,) = done.content
    assert (diff.path, diff.old_text, diff.new_text) == (str(workspace / "README.md"), "# proj\n", "# project\n")
    assert (workspace / "README.md").read_text() == "# project\n"


async def test_a_failing_model_call_is_said_and_the_session_goes_on(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    script = write_script(
        tmp_path / "s.json",
        [{"error": "the server fell over", "error_kind": "invalid_request"}, {"text": "better now"}],
    )
    async with start_monkey(monkey_home, *_args(script)) as (conn, client, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        failed = await conn.prompt(session_id=session.session_id, prompt=prompt("try"))
        said = text_of(client.updates)
        again = await conn.prompt(session_id=session.session_id, prompt=prompt("try again"))
    assert failed.stop_reason == "end_turn"
    assert "the server fell over" in said
    assert again.stop_reason == "end_turn" and text_of(client.updates).endswith("better now")


async def test_a_session_made_over_acp_reopens_in_a_later_process(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "first answer"}])
    async with start_monkey(monkey_home, *_args(script)) as (conn, _, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=prompt("first question"))
    listed = await invoke_async(["sessions", "list", "--json", "--cwd", str(workspace)], home=monkey_home)
    assert '"completed"' in listed.stdout  # the editor went away: the session was ended, not left active
    later = write_script(tmp_path / "later.json", [{"text": "second answer"}])
    async with start_monkey(monkey_home, *_args(later)) as (conn, client, _):
        await conn.load_session(cwd=str(workspace), session_id=session.session_id, mcp_servers=[])
        replayed = [u for u in client.updates if u.session_update != "available_commands_update"]
        reply = await conn.prompt(session_id=session.session_id, prompt=prompt("second question"))
    assert [(u.session_update, u.content.text) for u in replayed] == [
        ("user_message_chunk", "first question"),
        ("agent_message_chunk", "first answer"),
    ]
    assert reply.stop_reason == "end_turn"


def test_stop_reasons() -> None:
    from monkey.acp.updates import stop_reason  # the acp SDK, imported when a test needs it

    def turn(reason: str) -> TurnCompleted:
        return TurnCompleted(turn=1, reason=reason)  # type: ignore[arg-type]

    refused = MessageCompleted(text="", stop_reason="refusal")
    assert stop_reason(turn("completed"), MessageCompleted(text="hi")) == "end_turn"
    assert stop_reason(turn("completed"), refused) == "refusal"
    assert stop_reason(turn("completed"), MessageCompleted(text="cut", stop_reason="max_tokens")) == "max_tokens"
    assert stop_reason(turn("cancelled"), refused) == "cancelled"
    assert stop_reason(turn("max_iterations"), None) == "max_turn_requests"
    assert stop_reason(turn("denied"), None) == "end_turn"
    assert stop_reason(turn("error"), None) == "end_turn"


def test_diff_contents_cover_new_deleted_and_unterminated_files(tmp_path: Path) -> None:
    from monkey.acp.updates import diff_contents

    (new,) = diff_contents(tmp_path, unified_diff("a.txt", "", "hi\n"))
    assert (new.path, new.old_text, new.new_text) == (str(tmp_path / "a.txt"), None, "hi\n")
    (gone,) = diff_contents(tmp_path, unified_diff("a.txt", "x\ny\n", ""))
    assert (gone.old_text, gone.new_text) == ("x\ny\n", "")
    (bare,) = diff_contents(tmp_path, unified_diff("a.txt", "x\n", "x\ny"))
    assert (bare.old_text, bare.new_text) == ("x\n", "x\ny")
    far = "".join(f"line {i}\n" for i in range(40))
    two = diff_contents(
        tmp_path, unified_diff("a.txt", far, far.replace("line 1\n", "one\n").replace("line 38\n", "x\n"))
    )
    assert len(two) == 2 and "one\n" in two[0].new_text and "x\n" in two[1].new_text


async def test_the_question_is_stored_before_the_editor_sees_it(
    workspace: Path, monkey_home: Path, tmp_path: Path
) -> None:
    import asyncio
    import sys

    from tests.support.cli import monkey_env

    script = write_script(
        tmp_path / "s.json",
        [{"tool_calls": [{"name": "file_write", "arguments": {"path": "a.txt", "content": "a\n"}}]}, {"text": "ok"}],
    )
    seen: list[str] = []
    async with start_monkey(monkey_home, *_args(script)) as (conn, client, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])

        async def look() -> None:
            export = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "monkey",
                "sessions",
                "export",
                session.session_id,
                stdout=asyncio.subprocess.PIPE,
                env=monkey_env(monkey_home),
            )
            out, _ = await export.communicate()
            seen.append(out.decode())

        client.before_answer = look
        await conn.prompt(session_id=session.session_id, prompt=prompt("write a.txt"))
    (stored,) = seen
    assert '"type":"tool_call"' in stored and '"type":"approval_requested"' in stored
    assert '"type":"tool_result"' not in stored


def test_background_process_tools_have_their_kinds() -> None:
    from monkey.acp.updates import tool_kind  # the acp SDK, imported when a test needs it

    assert [tool_kind(n) for n in ("shell_execute", "process_output", "process_list", "process_stop")] == [
        "execute",
        "read",
        "read",
        "other",
    ]
