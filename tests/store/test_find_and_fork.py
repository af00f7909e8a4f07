"""Titles, rename, full-text search and forks of stored sessions, through the real store and
the command line run in this process (``monkey sessions rename|search|fork``, ``/rename``, ``/fork``)."""

from __future__ import annotations

import json
from pathlib import Path

from monkey.backends.scripted import ScriptCall, ScriptTurn
from monkey.session.replies import Note, ResumeSession
from monkey.session.session import Session
from monkey.store import SessionStore
from tests.support.agent import ListSink, db, drive, make_agent
from tests.support.cli import main_in_thread


def _write(call_id: str, path: str, text: str) -> ScriptCall:
    return ScriptCall(id=call_id, name="file_write", arguments={"path": path, "content": text})


async def _two_turns(workspace: Path) -> str:
    """A session of two turns, each writing a file; returns its id."""
    agent = make_agent(
        workspace,
        [
            ScriptTurn(text="Writing the zebra file.", tool_calls=[_write("c1", "z.txt", "zebra\n")]),
            ScriptTurn(text="Done with the zebra."),
        ],
    )
    await drive(agent, "make a file about a zebra")
    again = make_agent(
        workspace,
        [
            ScriptTurn(text="Writing the yak file.", tool_calls=[_write("c2", "y.txt", "yak\n")]),
            ScriptTurn(text="Done with the yak."),
        ],
    )
    await drive(again, "now one about a yak", resume=agent.session_id)
    return agent.session_id


async def test_search_finds_prompts_answers_calls_and_results(workspace: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    (workspace / "notes.txt").write_text("the quokka lives on Rottnest\n")
    agent = make_agent(
        workspace,
        [
            ScriptTurn(
                text="Reading.", tool_calls=[ScriptCall(id="c1", name="file_read", arguments={"path": "notes.txt"})]
            ),
            ScriptTurn(text="It is about a quokka."),
        ],
    )
    await drive(agent, "what lives on the island?")
    other = make_agent(workspace, [ScriptTurn(text="nothing here")])
    await drive(other, "an unrelated question")
    ws = str(workspace)

    code, out, _ = await main_in_thread(capsys, "sessions", "search", "quokka", "--json", "--cwd", ws)
    hits = json.loads(out)
    assert code == 0 and {h["session_id"] for h in hits} == {agent.session_id}
    assert sorted(h["kind"] for h in hits) == ["message_completed", "tool_result"]
    assert all(h["turn"] == 1 and "[quokka]" in h["snippet"] for h in hits)
    code, out, _ = await main_in_thread(capsys, "sessions", "search", "notes.txt", "file_read", "--json", "--cwd", ws)
    assert [h["kind"] for h in json.loads(out)] == ["message_completed"], "a tool call: its name and arguments"
    code, out, _ = await main_in_thread(capsys, "sessions", "search", "island", "--cwd", ws)
    assert f"{agent.session_id}  turn 1   prompt" in out and "[island]" in out
    code, out, _ = await main_in_thread(capsys, "sessions", "search", "quokka", "--cwd", str(workspace.parent))
    assert "nothing found" in out, "another workspace's sessions only with --all"
    code, out, _ = await main_in_thread(capsys, "sessions", "search", "quokka", "--all")
    assert agent.session_id in out
    code, out, _ = await main_in_thread(capsys, "sessions", "search", 'NEAR("', ")*", "--json", "--cwd", ws)
    assert code == 0 and json.loads(out) == [], "FTS5 syntax is read as words, never as a query"
    code, _, err = await main_in_thread(capsys, "sessions", "search", "***", "--cwd", ws)
    assert code == 1 and "at least one word" in err

    assert (await main_in_thread(capsys, "sessions", "rm", agent.session_id))[0] == 0
    code, out, _ = await main_in_thread(capsys, "sessions", "search", "quokka", "--json", "--all")
    assert json.loads(out) == [], "a deleted session is not found"


async def test_an_older_database_gets_its_index_filled(workspace: Path, monkey_home: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    sid = await _two_turns(workspace)
    code, out, _ = await main_in_thread(capsys, "sessions", "search", "zebra", "--json", "--all")
    before = json.loads(out)
    assert len(before) >= 3
    conn = db(monkey_home)
    with conn:  # the database as the monkey before this step left it
        conn.execute("DROP TABLE search")
        conn.execute("DROP TABLE search_docs")
        conn.execute("DROP TABLE session_links")
        # and what the later steps made (the summary rows, the web monitor's answers): a store of before them all
        conn.executescript(
            "DROP TABLE stat_slots; DROP TABLE stat_samples; DROP INDEX sessions_by_parent; DROP TABLE control;"
        )
        conn.execute("UPDATE schema_migrations SET version = 2 WHERE component = 'store'")
    conn.close()
    code, out, _ = await main_in_thread(capsys, "sessions", "search", "zebra", "--json", "--all")
    assert json.loads(out) == before, "the step indexes the events already stored, as the recorder does"
    everywhere = (await main_in_thread(capsys, "sessions", "search", "yak", "--json", "--all"))[1]
    assert {h["turn"] for h in json.loads(everywhere)} == {2}
    assert sid
    # the index the step built in one pass is kept from then on, as a new store's is
    later = make_agent(workspace, [ScriptTurn(text="A wombat it is.")])
    await drive(later, "and now a wombat")
    hits = json.loads((await main_in_thread(capsys, "sessions", "search", "wombat", "--json", "--all"))[1])
    assert {h["session_id"] for h in hits} == {later.session_id} and len(hits) == 2
    assert (await main_in_thread(capsys, "sessions", "rm", sid))[0] == 0
    assert json.loads((await main_in_thread(capsys, "sessions", "search", "zebra", "--json", "--all"))[1]) == []
    assert len(json.loads((await main_in_thread(capsys, "sessions", "search", "wombat", "--json", "--all"))[1])) == 2


async def test_rename_from_the_command_line_and_the_session(workspace: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    sid = await _two_turns(workspace)
    async with await SessionStore.open() as store:
        assert (await store.get(sid)).title == "make a file about a zebra", "the first prompt until renamed"
    code, out, _ = await main_in_thread(capsys, "sessions", "rename", sid[:12], "zoo", "\x1b]0;x\x07animals")
    assert code == 0 and "\x1b" not in out
    again = make_agent(workspace, [ScriptTurn(text="still here")])
    await drive(again, "a third turn", resume=sid)
    async with await SessionStore.open() as store:
        assert (await store.get(sid)).title == "zoo \x1b]0;x\x07animals", "kept when the session goes on"

    agent = make_agent(workspace, [ScriptTurn(text="ok")])
    session = Session(agent, switcher=None, show=ListSink(), tell=lambda text, level: None)  # type: ignore[arg-type]
    await session.open()
    try:
        replies = await session.command("/rename   my   own title ")
        assert replies == [Note("renamed this session: my own title")]
        assert (await session.command("/rename"))[0].level == "warning"
        await session.send("the first prompt, which is not the title now")
    finally:
        await session.end()
    async with await SessionStore.open() as store:
        assert (await store.get(agent.session_id)).title == "my own title"


async def test_fork_at_a_turn_and_go_on(workspace: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    sid = await _two_turns(workspace)
    code, out, _ = await main_in_thread(capsys, "sessions", "fork", sid, "--at", "1")
    assert code == 0, out
    fork_id = out.split("after turn 1: ")[1].split()[0]
    assert f"monkey agent --resume {fork_id}" in out
    async with await SessionStore.open() as store:
        fork = await store.get(fork_id)
        restored = await store.load(fork_id)
        original = await store.get(sid)
    assert fork.turns == 1 and fork.state == "forked" and fork.title == "make a file about a zebra (fork)"
    assert fork.cost_usd == 0 and original.turns == 2, "the original is left as it was"
    assert not restored.problems, "its own chains, intact"
    assert [m.content for m in restored.messages if m.role != "tool"] == [
        "make a file about a zebra",
        "Writing the zebra file.",
        "Done with the zebra.",
    ]
    code, out, _ = await main_in_thread(capsys, "sessions", "show", fork_id)
    assert f"forked from {sid} after turn 1" in out
    code, out, _ = await main_in_thread(capsys, "sessions", "search", "zebra", "--json", "--cwd", str(workspace))
    assert fork_id in {h["session_id"] for h in json.loads(out)}, "the fork is searchable"

    going = make_agent(
        workspace,
        [
            ScriptTurn(text="A gnu then.", tool_calls=[_write("c3", "g.txt", "gnu\n")]),
            ScriptTurn(text="Done with the gnu."),
        ],
    )
    await drive(going, "one about a gnu instead", resume=fork_id)
    sent = going.backend.requests[0].messages
    assert [m.content for m in sent if m.role == "user"] == ["make a file about a zebra", "one about a gnu instead"]
    assert not any("yak" in m.content for m in sent), "nothing after the fork point"

    code, _, err = await main_in_thread(capsys, "sessions", "fork", sid, "--at", "3")
    assert code == 1 and "there is no turn 3" in err
    code, _, err = await main_in_thread(capsys, "sessions", "fork", "not-a-session")
    assert code == 1 and "no session" in err


async def test_slash_fork_switches_to_the_fork(workspace: Path) -> None:
    agent = make_agent(workspace, [ScriptTurn(text="one answer")])
    session = Session(agent, switcher=None, show=ListSink(), tell=lambda text, level: None)  # type: ignore[arg-type]
    await session.open()
    try:
        assert (await session.command("/fork"))[0].level == "warning", "nothing to fork before a turn"
        await session.send("the question")
        replies = await session.command("/fork")
    finally:
        await session.end()
    assert isinstance(replies[1], ResumeSession)
    async with await SessionStore.open() as store:
        restored = await store.load(replies[1].session_id)
    assert [m.content for m in restored.messages] == ["the question", "one answer"]
