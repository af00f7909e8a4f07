"""The Codex parser and backend on the real Codex CLI's output.

The ``real_*.jsonl`` fixtures were recorded from ``codex exec --json`` (the version in
``real_VERSION``) driven against the fake Responses API in fake_openai_responses.py by
record_codex.py. They are parsed whole, in random chunks and cut at every byte. With the
pinned CLI installed (``npm ci --prefix tests/npm``, the README's test command, or
``MONKEY_CODEX_CLI``), ``monkey agent --backend codex`` also runs it end to end against the
fake server.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monkey.backends.codex.backend import SUPPORTED
from monkey.backends.supervise import parse_version
from tests.conftest import run_monkey
from tests.external.fake_openai_responses import FakeResponses, codex_config
from tests.external.test_claude_parser import plain
from tests.external.test_codex_parser import FIXTURES, parse

GOOD = ["real_text", "real_resumed", "real_shell", "real_patch", "real_command_failed", "real_unknown_model"]
ALL = GOOD + ["real_api_error"]


def data(name: str) -> bytes:
    return (FIXTURES / f"{name}.jsonl").read_bytes()


def test_recorded_version_is_supported() -> None:
    version = parse_version((FIXTURES / "real_VERSION").read_text())
    assert version is not None and SUPPORTED[0] <= version < SUPPORTED[1]


@pytest.mark.parametrize("name", GOOD)
def test_good_runs_complete_cleanly(name: str) -> None:
    p, events = parse(data(name))
    assert p.error == "" and p.unknown == 0 and p.finished
    assert events[0].type == "agent_session" and events[0].agent == "codex"
    assert events[0].agent_session_id == p.thread_id and len(p.thread_id) == 36
    assert [e.type for e in events[-2:]] == ["usage", "message_completed"]
    done = events[-1]
    assert done.tool_calls == [] and done.text == p.answer
    assert "".join(e.text for e in events if e.type == "text_delta") == done.text
    assert not [e for e in events if e.type == "error" and e.fatal]


def test_text_answer() -> None:
    p, events = parse(data("real_text"))
    assert [e.type for e in events] == ["agent_session", "text_delta", "usage", "message_completed"]
    assert events[-1].text == "Hello from the fake server (user messages: 1)."
    usage = events[2]
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (801, 200, 21)
    assert p.usage == (1001, 200, 21)


def test_resumed_thread_reports_cumulative_usage() -> None:
    first, _ = parse(data("real_text"))
    p, events = parse(data("real_resumed"), previous_usage=first.usage)
    assert p.thread_id == first.thread_id  # `codex exec resume ID` keeps the thread
    assert events[-1].text == "Hello from the fake server (user messages: 2)."
    usage = next(e for e in events if e.type == "usage")
    # the recording is cumulative (2003 = 1001 + 1002); only this call's share is reported
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (802, 200, 22)


def test_shell_command_that_writes_a_file() -> None:
    p, events = parse(data("real_shell"))
    assert [e.type for e in events] == ["agent_session", "thinking_delta", "tool_call", "tool_result", "text_delta",
                                        "usage", "message_completed"]
    assert events[1].text.startswith("**Writing the file**")
    call, result = events[2], events[3]
    assert call.name == "shell" and call.call_id == result.call_id == "item_1"
    assert call.arguments["command"].startswith("/bin/bash -lc ") and "> hello.txt" in call.arguments["command"]
    assert result.ok and result.output == "wrote hello.txt\n"
    assert events[-1].text == "Done: hello.txt is written."


def test_apply_patch_file_change() -> None:
    _, events = parse(data("real_patch"))
    (call,) = [e for e in events if e.type == "tool_call"]
    (result,) = [e for e in events if e.type == "tool_result"]
    assert call.name == "apply_patch" and call.arguments["changes"][0]["kind"] == "add"
    assert call.arguments["changes"][0]["path"].endswith("/notes.txt")
    assert result.ok and result.call_id == call.call_id and result.output.startswith("add /") \
        and result.output.endswith("/notes.txt")
    assert events[-1].text == "Patched."


def test_failing_command() -> None:
    p, events = parse(data("real_command_failed"))
    (result,) = [e for e in events if e.type == "tool_result"]
    assert not result.ok and "No such file or directory" in result.output and "[exit code 1]" in result.output
    assert p.error == "" and events[-1].text == "That file is missing."


def test_api_error_fails_the_turn() -> None:
    p, events = parse(data("real_api_error"))
    assert p.error == "Codex failed: the fake server refuses this on purpose"
    assert [e.type for e in events] == ["agent_session", "error"]
    assert events[1].message == "Codex: the fake server refuses this on purpose" and not events[1].fatal
    assert not p.finished


def test_unknown_model_warning_before_the_turn_is_not_fatal() -> None:
    _, events = parse(data("real_unknown_model"))
    (err,) = [e for e in events if e.type == "error"]
    assert "Model metadata for `gpt-fake` not found" in err.message and not err.fatal


@pytest.mark.parametrize("name", ALL)
def test_cut_at_every_byte(name: str) -> None:
    whole = data(name)
    expected = plain(parse(whole)[1])
    for cut in range(len(whole) + 1):
        p, events = parse(whole[:cut])
        if cut >= len(whole) - 1:  # all of it, or all but the last newline
            assert plain(events) == expected
        else:
            assert p.error  # a stream cut short never looks complete
            assert plain(events)[:len(events) - p.unknown] == expected[:len(events) - p.unknown]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(ALL), st.lists(st.integers(min_value=1, max_value=200), max_size=30))
def test_any_chunking_gives_the_same_events(name: str, chunks: list[int]) -> None:
    whole = data(name)
    assert plain(parse(whole, chunks)[1]) == plain(parse(whole)[1])


# -- the real CLI, end to end --------------------------------------------------------


NPM_CODEX = Path(__file__).resolve().parents[1] / "npm" / "node_modules" / ".bin" / "codex"
"""The pinned Codex CLI the README's test command installs (``npm ci --prefix tests/npm``)."""


def _cli() -> str:
    path = os.environ.get("MONKEY_CODEX_CLI") or (str(NPM_CODEX) if NPM_CODEX.exists() else "")
    if not path:
        pytest.skip("the Codex CLI is not installed (npm ci --prefix tests/npm, or set MONKEY_CODEX_CLI to its `codex`)")
    return path


def _configure(home: Path, cli: str, codex_home: Path) -> None:
    # Codex runs its shell tool in its sandbox through a helper (``codex-linux-sandbox``, a link to itself
    # it puts under CODEX_HOME and on PATH), and refuses to create that helper inside the temp folder;
    # this CODEX_HOME lies in pytest's temp folder, so the CLI gets a temp folder of its own (as a
    # person's ~/.codex is not in theirs). Without it every command failed with "bwrap: execvp
    # codex-linux-sandbox: No such file or directory" and hello.txt was never written.
    tmp = codex_home.parent / "tmp"
    tmp.mkdir(exist_ok=True)
    env = {"CODEX_HOME": str(codex_home), "HOME": str(codex_home.parent), "FAKE_OPENAI_KEY": "sk-fake",
           "TMPDIR": str(tmp)}
    lines = ["[codex]", f"executable = {json.dumps(cli)}", "idle_timeout = 60.0", "timeout = 120.0",
             "[codex.env]"] + [f"{k} = {json.dumps(v)}" for k, v in env.items()]
    (home / "config.toml").write_text("\n".join(lines) + "\n")


def _agent(home: Path, workspace: Path, task: str, *extra: str):  # type: ignore[no-untyped-def]
    return run_monkey(["agent", "--backend", "codex", *extra, "--task", task, "--output-format", "stream-json",
                       "--cwd", str(workspace)], home=home, timeout=150)


def test_real_codex_cli(monkey_home: Path, workspace: Path, tmp_path: Path) -> None:
    cli = _cli()
    codex_home = tmp_path / "cli-home" / ".codex"
    codex_home.mkdir(parents=True)
    with FakeResponses() as server:
        (codex_home / "config.toml").write_text(codex_config(server.url, model="gpt-5.5"))
        _configure(monkey_home, cli, codex_home)

        # a text answer
        run = _agent(monkey_home, workspace, "say hello")
        assert run.returncode == 0, run.stderr
        (done,) = run.of_type("turn_completed")
        assert done["reason"] == "completed" and done["result"] == "Hello from the fake server (user messages: 1)."
        (started,) = run.of_type("agent_session")
        assert started["agent"] == "codex" and started["agent_session_id"]
        assert run.of_type("usage")[0]["output_tokens"] > 0

        # a file written by Codex's own shell tool, checkpointed, then undone
        run = _agent(monkey_home, workspace, "please create hello.txt")
        assert run.returncode == 0, run.stderr
        assert (workspace / "hello.txt").read_text() == "hi there\n"
        (call,) = run.of_type("tool_call")
        assert call["name"] == "shell" and "hello.txt" in call["arguments"]["command"]
        (result,) = run.of_type("tool_result")
        assert result["ok"] and result["call_id"] == call["call_id"]
        assert run.of_type("checkpoint_created")[0]["tool"] == "codex"
        assert run.of_type("turn_completed")[0]["result"] == "Done: hello.txt is written."
        undo = run_monkey(["undo", "--json", "--cwd", str(workspace)], home=monkey_home)
        assert undo.returncode == 0, undo.stderr
        assert not (workspace / "hello.txt").exists()

        # a resumed second turn: `codex exec resume` sends the earlier conversation again
        sid = run.of_type("agent_session")[0]["agent_session_id"]
        before = len(server.main_requests())
        again = _agent(monkey_home, workspace, "say hello again", "--continue")
        assert again.returncode == 0, again.stderr
        assert again.of_type("agent_session")[0]["agent_session_id"] == sid
        sent = json.dumps(server.main_requests()[before]["body"]["input"])
        assert "please create hello.txt" in sent and "say hello again" in sent
        assert again.of_type("turn_completed")[0]["result"] == "Hello from the fake server (user messages: 1)."

        # an API error: a clear message and exit status 1
        fail = _agent(monkey_home, workspace, "please fail now")
        assert fail.returncode == 1
        assert "the fake server refuses this on purpose" in fail.stderr
        assert fail.of_type("turn_completed")[0]["reason"] == "error"
