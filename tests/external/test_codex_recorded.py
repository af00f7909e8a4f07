"""The Codex backend on the real Codex CLI's ``app-server`` output, and the real CLI end to end.

The ``app_*.jsonl`` fixtures were recorded from ``codex app-server`` (the version in
``app_VERSION``) driven against the fake Responses API in tests/support/fakes/openai_responses.py by
record_codex_app.py. They are parsed whole, in random chunks and cut short. With the pinned CLI
installed (``npm install --prefix tests/npm``, the README's test command, or ``MONKEY_CODEX_CLI``),
``monkey agent --backend codex`` also runs it end to end against the fake server: an allowed
command, a refused one, a file change allowed and undone, a protected path refused, a resumed
thread and an API error.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monkey.backends.codex.app_parser import CodexAppParser
from monkey.backends.codex.backend import SUPPORTED
from monkey.backends.supervise import parse_version
from tests.support.cli import Run, invoke
from tests.support.fakes.openai_responses import FakeResponses, codex_config
from tests.support.external import codex_cli, configure_codex, run_task
from tests.support.external import plain

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "codex"
GOOD = ["app_text", "app_resumed", "app_shell", "app_declined", "app_patch", "app_hook"]
ALL = GOOD + ["app_cancel", "app_api_error"]


def data(name: str) -> bytes:
    return (FIXTURES / f"{name}.jsonl").read_bytes().replace(b"@WORKSPACE@", b"/w")


def parse(data: bytes, chunks: list[int] | None = None) -> tuple[CodexAppParser, list]:
    p = CodexAppParser()
    events: list = []
    pos = 0
    for size in chunks or []:
        events += p.feed(data[pos : pos + size])
        pos += size
    events += p.feed(data[pos:]) + p.close()
    return p, events


def test_recorded_version_is_supported() -> None:
    version = parse_version((FIXTURES / "app_VERSION").read_text())
    assert version is not None and SUPPORTED[0] <= version < SUPPORTED[1]


@pytest.mark.parametrize("name", GOOD)
def test_good_runs_complete_cleanly(name: str) -> None:
    p, events = parse(data(name))
    assert p.error == "" and p.unknown == 0 and p.finished
    assert events[0].type == "agent_session" and events[0].agent == "codex"
    assert events[0].agent_session_id == p.thread_id and len(p.thread_id) == 36
    done = events[-1]
    assert done.type == "message_completed" and done.tool_calls == [] and done.text == p.answer
    assert "".join(e.text for e in events if e.type == "text_delta") == done.text
    assert not [e for e in events if e.type == "error"]


def test_text_answer_and_its_usage() -> None:
    p, events = parse(data("app_text"))
    assert [e.type for e in events if e.type != "text_delta"] == ["agent_session", "usage", "message_completed"]
    assert events[-1].text == "Hello from the fake server (user messages: 1)."
    (usage,) = [e for e in events if e.type == "usage"]
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (801, 200, 21)
    assert usage.model == events[0].model == p.model == "gpt-5.5"  # Codex reports tokens, no cost
    assert usage.cost_usd == 0.0 and p.requests == []


def test_resumed_thread_counts_only_this_turns_usage() -> None:
    first, _ = parse(data("app_text"))
    p, events = parse(data("app_resumed"))
    assert p.thread_id == first.thread_id
    assert events[-1].text == "Hello from the fake server (user messages: 2)."
    # the resumed thread first tells the earlier turn's usage again (before turn/start): not counted
    (usage,) = [e for e in events if e.type == "usage"]
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (802, 200, 22)


def test_command_approval_request_and_result() -> None:
    p, events = parse(data("app_shell"))
    kinds = [e.type for e in events if e.type not in ("text_delta", "thinking_delta")]
    assert kinds == ["agent_session", "tool_call", "tool_result", "usage", "usage", "message_completed"]
    assert "".join(e.text for e in events if e.type == "thinking_delta").startswith("**Writing the file**")
    (request,) = p.requests
    assert request["method"] == "item/commandExecution/requestApproval" and request["id"] == 0
    (call,) = [e for e in events if e.type == "tool_call"]
    (result,) = [e for e in events if e.type == "tool_result"]
    assert call.name == "shell" and call.call_id == result.call_id == request["params"]["itemId"]
    assert result.ok and result.output == "wrote hello.txt\n"


def test_declined_command_is_a_failed_result_and_codex_goes_on() -> None:
    _, events = parse(data("app_declined"))
    (result,) = [e for e in events if e.type == "tool_result"]
    assert not result.ok and result.output.startswith("declined")
    assert events[-1].text == "Done: hello.txt is written."


def test_file_change_paths_come_before_its_request() -> None:
    p, events = parse(data("app_patch"))
    (request,) = p.requests
    assert request["method"] == "item/fileChange/requestApproval" and "changes" not in request["params"]
    item = p.items[request["params"]["itemId"]]
    assert item["changes"][0]["path"] == "/w/notes.txt"
    (call,) = [e for e in events if e.type == "tool_call"]
    assert call.name == "apply_patch" and call.arguments["changes"][0]["kind"] == "add"
    (result,) = [e for e in events if e.type == "tool_result"]
    assert result.ok and result.output == "add /w/notes.txt"


def test_cancelled_approval_interrupts_the_turn() -> None:
    p, events = parse(data("app_cancel"))
    assert p.finished and p.error == "Codex's turn was interrupted"
    assert not [e for e in events if e.type == "message_completed"]


def test_api_error_fails_the_turn() -> None:
    p, events = parse(data("app_api_error"))
    assert p.error == "Codex failed: the fake server refuses this on purpose"
    assert [e.type for e in events] == ["agent_session", "error"]
    assert events[1].message == "Codex: the fake server refuses this on purpose" and not events[1].fatal


def test_a_refused_request_ends_the_run() -> None:
    p, events = parse(b'{"id":2,"error":{"code":-32600,"message":"no rollout found for thread id x"}}\n')
    assert p.finished and p.error == "Codex refused the thread: no rollout found for thread id x"
    assert events == []


@pytest.mark.parametrize("name", ALL)
def test_cut_short(name: str) -> None:
    whole = data(name)
    expected = plain(parse(whole)[1])
    lines = whole.splitlines(keepends=True)
    for n in range(len(lines)):  # cut after every line, and in the middle of the next
        for cut in (sum(map(len, lines[:n])), sum(map(len, lines[:n])) + len(lines[n]) // 2):
            p, events = parse(whole[:cut])
            assert p.error  # a stream cut short never looks complete
            assert plain(events)[: len(events) - p.unknown] == expected[: len(events) - p.unknown]
    assert plain(parse(whole.rstrip(b"\n"))[1]) == expected


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(ALL), st.lists(st.integers(min_value=1, max_value=400), max_size=30))
def test_any_chunking_gives_the_same_events(name: str, chunks: list[int]) -> None:
    whole = data(name)
    assert plain(parse(whole, chunks)[1]) == plain(parse(whole)[1])


def test_junk_is_counted_never_raised() -> None:
    p, events = parse(
        b'not json\n{"method":"something/new","params":{}}\n[1,2]\n{"method":"item/started","params":{}}\n'
    )
    assert p.unknown == 4 and [e.type for e in events] == ["raw"] * 4


# -- the real CLI, end to end --------------------------------------------------------


def _agent(home: Path, workspace: Path, task: str, *extra: str) -> Run:
    return run_task(home, workspace, "codex", task, *extra, timeout=150, process=True)


@pytest.mark.external
def test_real_codex_cli(monkey_home: Path, workspace: Path, tmp_path: Path) -> None:
    cli = codex_cli()
    codex_home = tmp_path / "cli-home" / ".codex"
    codex_home.mkdir(parents=True)
    with FakeResponses() as server:
        (codex_home / "config.toml").write_text(codex_config(server.url, model="gpt-5.5"))
        configure_codex(monkey_home, cli, codex_home, allow=("shell_execute(touch)", "file_write"))

        # a text answer
        run = _agent(monkey_home, workspace, "say hello")
        assert run.returncode == 0, run.stderr
        (done,) = run.of_type("turn_completed")
        assert done["reason"] == "completed" and done["result"] == "Hello from the fake server (user messages: 1)."
        (started,) = run.of_type("agent_session")
        assert started["agent"] == "codex" and started["agent_session_id"]
        assert run.of_type("usage")[0]["output_tokens"] > 0

        # a command monkey's rule allows: Codex runs it, the run's checkpoint lets `monkey undo` revert it
        run = _agent(monkey_home, workspace, "please touch made.txt")
        assert run.returncode == 0, run.stderr
        assert (workspace / "made.txt").exists()
        (call,) = run.of_type("tool_call")
        assert call["name"] == "shell" and "touch made.txt" in call["arguments"]["command"]
        (allowed,) = run.of_type("approval_resolved")
        assert allowed["decision"] == "approved" and allowed["by"] == "rule" and allowed["call_id"] == call["call_id"]
        (result,) = run.of_type("tool_result")
        assert result["ok"] and result["call_id"] == call["call_id"]
        assert run.of_type("checkpoint_created")[0]["tool"] == "codex"
        assert run.of_type("turn_completed")[0]["result"] == "Made."
        undo = invoke(["undo", "--json", "--cwd", str(workspace)], home=monkey_home)
        assert undo.returncode == 0, undo.stderr
        assert not (workspace / "made.txt").exists()

        # a command no rule allows, headless: refused, Codex goes on without it
        run = _agent(monkey_home, workspace, "please create hello.txt")
        assert run.returncode == 0, run.stderr
        assert not (workspace / "hello.txt").exists()
        (asked,) = run.of_type("approval_requested")
        assert asked["arguments"]["command"] == "printf 'hi there\\n' > hello.txt && echo wrote hello.txt"
        assert run.of_type("approval_resolved")[0]["decision"] == "denied"
        (result,) = run.of_type("tool_result")
        assert not result["ok"]
        told = json.dumps(server.main_requests()[-1]["body"]["input"])  # the model was told it did not run
        assert "rejected" in told or "declined" in told
        assert run.of_type("turn_completed")[0]["reason"] == "completed"

        # a file change allowed by a rule: its own checkpoint; `monkey undo` removes the file
        run = _agent(monkey_home, workspace, "please patch notes.txt")
        assert run.returncode == 0, run.stderr
        assert (workspace / "notes.txt").read_text() == "patched by the fake model\n"
        per_call = [c for c in run.of_type("checkpoint_created") if c["tool"] == "fileChange"]
        assert len(per_call) == 1 and per_call[0]["paths"] == ["notes.txt"]
        undo = invoke(["undo", "--json", "--cwd", str(workspace)], home=monkey_home)
        assert undo.returncode == 0, undo.stderr
        assert not (workspace / "notes.txt").exists()

        # a file change into .git/hooks: refused although a rule allows file_write
        run = _agent(monkey_home, workspace, "please patch a hook")
        assert run.returncode == 0, run.stderr
        assert not (workspace / ".git" / "hooks" / "pre-commit").exists()
        (asked,) = run.of_type("approval_requested")
        assert asked["arguments"]["path"] == ".git/hooks/pre-commit"
        assert run.of_type("approval_resolved")[0]["decision"] == "denied"

        # a resumed second turn: thread/resume keeps the earlier conversation
        sid = run.of_type("agent_session")[0]["agent_session_id"]
        before = len(server.main_requests())
        again = _agent(monkey_home, workspace, "say hello again", "--continue")
        assert again.returncode == 0, again.stderr
        assert again.of_type("agent_session")[0]["agent_session_id"] == sid
        sent = json.dumps(server.main_requests()[before]["body"]["input"])
        assert "please patch a hook" in sent and "say hello again" in sent

        # an API error: a clear message and exit status 1
        fail = _agent(monkey_home, workspace, "please fail now")
        assert fail.returncode == 1
        assert "the fake server refuses this on purpose" in fail.stderr
        assert fail.of_type("turn_completed")[0]["reason"] == "error"
