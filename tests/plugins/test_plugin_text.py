"""A plugin streaming text as monkey's backend, through the real CLI."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_monkey


def task(workspace: Path, home: Path, name: str, prompt: str = "say hello", *flags: str, timeout: float = 60):
    return run_monkey(["agent", "--backend", f"plugin:{name}", "--task", prompt, "--cwd", str(workspace),
                       "--output-format", "stream-json", *flags], home=home, timeout=timeout)


def test_text_thinking_usage_stream_as_events(install, workspace: Path, monkey_home: Path):
    plugin = install("talker", [{"thinking": "hmm"}, {"text": "Hello"}, {"text": ", world"},
                                {"notify": {"type": "usage", "data": {"input_tokens": 7, "output_tokens": 3}}},
                                {"notify": {"type": "complete", "data": None}},
                                {"respond": {"status": "complete", "tokens_used": 10}}])
    run = task(workspace, monkey_home, "talker")
    assert run.returncode == 0, run.stderr
    assert run.of_type("session_started")[0]["backend"] == "plugin:talker"
    assert [e["text"] for e in run.of_type("text_delta")] == ["Hello", ", world"]
    assert [e["text"] for e in run.of_type("thinking_delta")] == ["hmm"]
    [usage] = run.of_type("usage")
    assert (usage["input_tokens"], usage["output_tokens"], usage["model"]) == (7, 3, "script-1")
    [done] = run.of_type("message_completed")
    assert done["text"] == "Hello, world" and done["tool_calls"] == []
    assert run.of_type("turn_completed")[0]["reason"] == "completed"
    assert plugin.methods() == ["agent.init", "agent.available", "agent.run"]
    run_params = plugin.received()[2]["params"]
    assert run_params["prompt"] == "say hello"
    assert run_params["context"]["workspace"] == str(workspace.resolve())
    assert run_params["context"]["session_id"] == run.of_type("session_started")[0]["session_id"]
    assert [t["name"] for t in run_params["tools"]][:2] == ["file_read", "file_write"]
    assert plugin.saw_eof()  # its stdin was closed once the run was over
