"""Working memory: notes the model keeps survive --continue and compaction; results the
policies or compaction took out of the context are given back by memory_read; and an edited
conversation still reads its prefix from Anthropic's prompt cache."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import init_git_workspace, invoke, write_script
from tests.support.fakes.anthropic_server import FakeAnthropic, Stream, reply_events


def _call(name: str, call_id: str = "", **arguments: object) -> dict:
    return {"text": "", "tool_calls": [{"name": name, "id": call_id, "arguments": arguments}]}


def _scripted(ws: Path, home: Path, tmp: Path, turns: list[dict], *flags: str):  # type: ignore[no-untyped-def]
    script = write_script(tmp / "script.json", turns)
    return invoke(
        [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(ws),
            "--output-format",
            "stream-json",
            *flags,
            "--task",
            "go",
        ],
        home=home,
    )


def test_notes_survive_continue_and_bad_writes_are_said(tmp_path: Path, monkey_home: Path) -> None:
    ws = init_git_workspace(tmp_path / "ws", tmp_path / "g")
    first = _scripted(
        ws,
        monkey_home,
        tmp_path,
        [
            _call("memory_write", key="plan", value="1. fix the parser\n2. run the tests"),
            _call("memory_write", key="scratch", value="temporary"),
            _call("memory_write", key="scratch", value=""),
            _call("memory_write", key="call:x", value="no"),
            _call("memory_write", key="big", value="v" * 20_001),
            {"text": "noted"},
        ],
    )
    assert first.returncode == 0, first.stderr
    outputs = [r["output"] for r in first.of_type("tool_result")]
    assert outputs[0] == "stored 'plan' (34 characters)" and outputs[2] == "removed 'scratch'"
    assert "are the results of tool calls" in outputs[3] and "at most 20000 characters" in outputs[4]
    assert not first.of_type("approval_requested"), "notes change no file: nothing asks"
    again = _scripted(
        ws,
        monkey_home,
        tmp_path,
        [_call("memory_read"), _call("memory_read", key="plan"), _call("memory_read", key="nope"), {"text": "ok"}],
        "--continue",
    )
    assert again.returncode == 0, again.stderr
    listing, plan, missing = (r["output"] for r in again.of_type("tool_result"))
    assert listing.startswith("1 note(s):\n- plan: 1. fix the parser")
    assert plan == "1. fix the parser\n2. run the tests"
    assert "no note under 'nope'; the keys are: 'plan'" in missing


async def test_a_compacted_result_is_still_read_back_after_a_resume(workspace: Path) -> None:
    from monkey.backends.scripted import ScriptCall, ScriptTurn
    from monkey.session.session import Session
    from tests.support.agent import ListSink, make_agent

    (workspace / "notes.txt").write_text("".join(f"note line {i}\n" for i in range(200)))
    read = ScriptTurn(text="", tool_calls=[ScriptCall(id="r1", name="file_read", arguments={"path": "notes.txt"})])
    agent = make_agent(
        workspace,
        [
            read,
            ScriptTurn(text="read it"),
            ScriptTurn(text="second turn"),
            ScriptTurn(text="third turn"),
            ScriptTurn(text="Summary: notes were read."),
        ],
    )
    session = Session(agent, switcher=None, show=ListSink(), tell=lambda text, level: None)  # type: ignore[arg-type]
    await session.open()
    try:
        for prompt in ("read the notes", "and then", "and more"):
            await session.send(prompt)
        await session.command("/compact")
    finally:
        await session.end()
    assert all(m.tool_call_id != "r1" for m in agent.messages), "compaction took the result out"

    back = ScriptTurn(
        text="",
        tool_calls=[
            ScriptCall(id="m1", name="memory_read", arguments={"key": "call:r1"}),
            ScriptCall(id="m2", name="memory_read", arguments={}),
        ],
    )
    resumed = make_agent(workspace, [back, ScriptTurn(text="found it")])
    sink = ListSink()
    session = Session(resumed, switcher=None, show=sink, tell=lambda text, level: None)  # type: ignore[arg-type]
    await session.open(continue_=True)
    try:
        await session.send("what did the notes say?")
    finally:
        await session.end()
    whole, listing = (e.output for e in sink if getattr(e, "type", "") == "tool_result")
    assert whole.startswith("file_read (ok):") and "note line 199" in whole
    assert "- call:r1 [compacted] file_read ok" in listing


def _cache_run(ws: Path, home: Path, fake: FakeAnthropic, step: int):  # type: ignore[no-untyped-def]
    (home / "config.toml").write_text(f"[context]\nkeep_tool_calls = 2\npolicy_step = {step}\n")
    return invoke(
        [
            "agent",
            "--backend",
            "anthropic",
            "--base-url",
            fake.url,
            "--api-key",
            "k",
            "--cwd",
            str(ws),
            "--output-format",
            "stream-json",
            "--no-approval",
            "--max-iterations",
            "20",
            "--task",
            "read them all",
        ],
        home=home,
    )


def test_an_edited_conversation_still_reads_its_prefix_from_the_prompt_cache(tmp_path: Path, monkey_home: Path) -> None:
    """Ten reads of big files with only two kept whole: the policy edits old results, in steps
    of four, so every request but the ones where the boundary moves reads everything the
    request before it wrote; moved one node at a time (step 1) almost nothing is reused."""
    ws = init_git_workspace(tmp_path / "ws", tmp_path / "g")
    for i in range(10):
        (ws / f"f{i}.txt").write_text(f"file {i}\n" + "content line\n" * 800)
    reads: dict[int, list[int]] = {}
    for step in (4, 1):
        with FakeAnthropic(cache=True) as fake:
            fake.add(
                *[Stream(reply_events(tool_calls=[(f"c{i}", "file_read", {"path": f"f{i}.txt"})])) for i in range(10)],
                Stream(reply_events("all read")),
            )
            run = _cache_run(ws, monkey_home, fake, step)
            assert run.returncode == 0, run.stderr
            usage = run.of_type("usage")
            assert len(usage) == 11
            reads[step] = [u["cache_read_tokens"] for u in usage]
            edits = run.of_type("context_edited")
            assert edits and {e["policy"] for e in edits} == {"drop_completed_tool_calls"}
            if step == 4:
                bodies = [json.dumps(r["body"]["messages"]) for r in fake.requests]
                assert "dropped from context" in bodies[-1] and "content line" * 3 not in bodies[-1].split("c7")[0]
                moved = {
                    k
                    for k in range(1, 11)
                    if bodies[k].count("dropped from context") != bodies[k - 1].count("dropped from context")
                }
                writes = [u["cache_creation_tokens"] for u in usage]
                for k in range(1, 11):
                    if k not in moved:  # the whole previous request came from the cache
                        # (the fake counts four characters a token, each figure rounded down)
                        assert abs(reads[4][k] - reads[4][k - 1] - writes[k - 1]) <= 1, (k, reads[4], writes)
                    assert reads[4][k] > 0, "the system prompt and the tools are read from the cache even so"
    print(f"prompt cache: tokens read from the cache over 11 calls, step 4: {sum(reads[4])}, step 1: {sum(reads[1])}")
    assert sum(reads[4]) > 2 * sum(reads[1]), reads


async def test_the_project_memory_is_kept_with_memory_add_and_reaches_the_model(tmp_path: Path) -> None:
    from monkey.extensions.instructions import load_instructions
    from monkey.backends.scripted import ScriptTurn
    from monkey.session.session import Session
    from tests.support.agent import ListSink, make_agent

    ws = init_git_workspace(tmp_path / "ws", tmp_path / "g")
    home = tmp_path / "home"
    home.mkdir()

    async def session_with(trusted: bool) -> tuple[Session, list[str]]:
        agent = make_agent(ws, [ScriptTurn(text="ok")])
        agent.options.instructions = load_instructions(ws, home=home, trusted=trusted)
        agent.refresh_system_prompt()
        said: list[str] = []
        session = Session(agent, switcher=None, show=ListSink(), tell=lambda text, level: said.append(text))  # type: ignore[arg-type]
        return session, said

    untrusted, _ = await session_with(False)
    (reply,) = await untrusted.command("/memory add use tabs")
    assert "not trusted" in reply.text and not (ws / ".monkey" / "memory.md").exists()

    session, _ = await session_with(True)
    added, changed = await session.command("/memory add the tests run with `make check`")
    assert changed.files == [".monkey/memory.md"], "a front end that names the files shows the new one"
    assert added.text == "remembered in .monkey/memory.md: the tests run with `make check`"
    await session.command("/memory add   never   touch vendor/  ")
    (listing,) = await session.command("/memory")
    assert "  1. the tests run with `make check`\n  2. never touch vendor/" in listing.text
    assert "never touch vendor/" in session.agent.system_prompt, "the prompt follows at once"
    (bad,) = await session.command("/memory remove 7")
    assert bad.text == "no line 7: the project memory has 2"
    gone, _ = await session.command("/memory remove 1")
    assert gone.text == "forgot: the tests run with `make check`"

    later, _ = await session_with(True)
    await later.open()
    try:
        await later.send("hello")
    finally:
        await later.end()
    system = later.agent.backend.requests[0].system
    assert "Project memory (.monkey/memory.md)" in system and "never touch vendor/" in system
    assert "make check" not in system
