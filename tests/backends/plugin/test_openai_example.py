"""The plugin shipped with monkey (an OpenAI-compatible server as a monkey agent) against the
fake server: streaming text, tool use through monkey's approvals and checkpoints, undo."""

from __future__ import annotations

from pathlib import Path

from tests.support.cli import invoke
from tests.support.fakes.openai_server import FakeOpenAI, Reply
from tests.support.plugins import configure_openai_compat, task


def test_text_streams_from_the_server(workspace: Path, monkey_home: Path):
    with FakeOpenAI([Reply(text="Hello from the fake model.", usage=(20, 6))]) as server:
        configure_openai_compat(monkey_home, server.url)
        run = task(workspace, monkey_home, "openai-compat", "say hello")
    assert run.returncode == 0, run.stderr
    assert "".join(e["text"] for e in run.of_type("text_delta")) == "Hello from the fake model."
    assert run.of_type("message_completed")[0]["text"] == "Hello from the fake model."
    usage = run.of_type("usage")[0]
    assert (usage["input_tokens"], usage["output_tokens"], usage["model"]) == (20, 6, "fake-model")
    [request] = server.requests
    assert request["model"] == "fake-model" and request["messages"][-1] == {"role": "user", "content": "say hello"}
    assert request["messages"][0]["role"] == "system"  # monkey's instructions
    assert {t["function"]["name"] for t in request["tools"]} >= {"file_read", "file_write", "shell_execute"}


def test_tool_use_goes_through_monkey_and_undo_reverts_it(workspace: Path, monkey_home: Path):
    replies = [
        Reply(
            text="Writing it.", tool_calls=[("call_1", "file_write", {"path": "hello.py", "content": "print('hi')\n"})]
        ),
        Reply(tool_calls=[("call_2", "file_read", {"path": "hello.py"})]),
        Reply(text="Done: hello.py prints hi."),
    ]
    with FakeOpenAI(replies) as server:
        configure_openai_compat(monkey_home, server.url, '\n[approvals]\nallow = ["file_write(hello.py)"]\n')
        run = task(workspace, monkey_home, "openai-compat", "write hello.py")
    assert run.returncode == 0, run.stderr
    assert (workspace / "hello.py").read_text() == "print('hi')\n"
    assert [c["name"] for c in run.of_type("tool_call")] == ["file_write", "file_read"]
    assert run.of_type("approval_resolved")[0]["by"] == "rule"
    assert run.of_type("checkpoint_created")[0]["paths"] == ["hello.py"]
    assert run.of_type("turn_completed")[0]["result"] == "Done: hello.py prints hi."
    tool_messages = [m for m in server.requests[2]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["call_1", "call_2"]
    assert tool_messages[1]["content"].endswith("print('hi')\n") or "print('hi')" in tool_messages[1]["content"]
    undo = invoke(["undo", "--cwd", str(workspace)], home=monkey_home)
    assert undo.returncode == 0, undo.stderr
    assert not (workspace / "hello.py").exists()


def test_a_denied_call_is_said_to_the_model(workspace: Path, monkey_home: Path):
    replies = [
        Reply(tool_calls=[("call_1", "shell_execute", {"command": "rm -rf build"})]),
        Reply(text="I was not allowed to."),
    ]
    with FakeOpenAI(replies) as server:
        configure_openai_compat(monkey_home, server.url)
        run = task(workspace, monkey_home, "openai-compat", "clean up")
    assert run.of_type("approval_resolved")[0]["decision"] == "denied"
    [tool_message] = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert tool_message["content"].startswith("denied")
    assert run.of_type("message_completed")[-1]["text"] == "I was not allowed to."


def test_a_server_error_ends_the_turn_with_its_message(workspace: Path, monkey_home: Path):
    with FakeOpenAI([Reply(status=500)]) as server:
        configure_openai_compat(monkey_home, server.url)
        run = task(workspace, monkey_home, "openai-compat", "hi")
    assert run.returncode == 1
    assert "plugin openai-compat answered agent.run with error -32000: the server answered 500" in run.stderr


def test_no_server_means_not_available(workspace: Path, monkey_home: Path):
    with FakeOpenAI() as server:
        url = server.url
    configure_openai_compat(monkey_home, url)
    run = task(workspace, monkey_home, "openai-compat", "hi")
    assert run.returncode == 1
    assert f"plugin openai-compat is not available: no server at {url}" in run.stderr
