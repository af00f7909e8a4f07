"""A plugin streaming text as monkey's backend, through the real CLI."""

from __future__ import annotations

from pathlib import Path

from tests.support.cli import invoke
from tests.support.plugins import task


def test_text_thinking_usage_stream_as_events(install, workspace: Path, monkey_home: Path):
    plugin = install(
        "talker",
        [
            {"thinking": "hmm"},
            {"text": "Hello"},
            {"text": ", world"},
            {"notify": {"type": "usage", "data": {"input_tokens": 7, "output_tokens": 3}}},
            {"notify": {"type": "complete", "data": None}},
            {"respond": {"status": "complete", "tokens_used": 10}},
        ],
    )
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


async def test_backend_command_switches_to_a_plugin_and_keeps_the_conversation(
    install, tmp_path: Path, workspace: Path, monkey_home: Path
):
    import json

    from monkey.agent.loop import Agent
    from monkey.session.switch import BackendSwitcher, switch_command
    from monkey.config import load_config
    from monkey.events import TextDelta

    plugin = install("talker", [{"text": "plugin here"}])
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [{"text": "scripted here"}]}))
    switcher = BackendSwitcher(load_config(workspace), workspace, script=str(script), flagged="scripted")
    agent = Agent(backend=switcher.create("scripted", None), workspace=workspace)
    agent.session_started()
    [e async for e in agent.run("first")]
    listing = await switch_command(agent, switcher, "/backend", "")
    assert any("plugin:talker" in line and "agent plugin" in line for line in listing.lines)
    assert any("plugin:openai-compat" in line for line in listing.lines)
    result = await switch_command(agent, switcher, "/backend", "plugin:talker")
    assert result.ok and result.event is not None and result.event.to_backend == "plugin:talker"
    events = [e async for e in agent.run("second")]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["plugin here"]
    history = plugin.received()[2]["params"]["context"]["history"]
    assert history == [{"role": "user", "content": "first"}, {"role": "assistant", "content": "scripted here"}]
    await agent.backend.aclose()
    unknown = await switch_command(agent, switcher, "/backend", "plugin:nothing")
    assert not unknown.ok and "no plugin or agent alias named 'nothing'" in unknown.lines[0]


def test_the_environment_is_scrubbed_then_defaults_then_config(
    install, workspace: Path, monkey_home: Path, tmp_path: Path
):
    import json

    from tests.support.plugins import manifest_text

    dump = tmp_path / "env.json"
    plugin = install(
        "envy",
        [{"env_to": str(dump)}, {"text": "ok"}],
        init={"name": "envy", "model": "m", "capabilities": ["streaming"]},
        settings='config = { temperature = 0.5 }\nmodel = "from-config"\n',
    )
    manifest = plugin.folder / "plugin.yaml"
    text = manifest.read_text()
    command = text.split("command: ")[1].split("\n")[0]
    manifest.write_text(
        manifest_text(
            "envy",
            json.loads(command),
            ["streaming"],
            "env:\n  PLUGIN_COLOR:\n    default: blue\n  PLUGIN_SHAPE:\n    default: square\n",
        )
    )
    config = (
        (monkey_home / "config.toml")
        .read_text()
        .replace("PLUGIN_LOG = ", 'PASSED_KEY = "${MY_API_KEY}", PLUGIN_SHAPE = "round", PLUGIN_LOG = ')
    )
    (monkey_home / "config.toml").write_text(config)
    run = invoke(
        [
            "agent",
            "--backend",
            "plugin:envy",
            "--task",
            "hi",
            "--cwd",
            str(workspace),
            "-m",
            "flagged",
            "--output-format",
            "stream-json",
        ],
        home=monkey_home,
        MY_API_KEY="sk-secret-value-123",
        GITHUB_TOKEN="ghp_x",
        PLUGIN_COLOR="green",
    )
    assert run.returncode == 0, run.stderr
    env = json.loads(dump.read_text())
    assert "MY_API_KEY" not in env and "GITHUB_TOKEN" not in env  # scrubbed
    assert env["PASSED_KEY"] == "sk-secret-value-123"  # passed on explicitly by the person's config
    assert env["PLUGIN_COLOR"] == "green"  # the environment's own value beats the manifest's default
    assert env["PLUGIN_SHAPE"] == "round"  # the config beats the default
    init = plugin.received()[0]["params"]
    assert init == {"config": {"temperature": 0.5, "model": "flagged"}}
    assert "tools" not in plugin.received()[2]["params"]  # no tool_use (manifest nor agent.init): no tools


def test_a_required_variable_set_nowhere_is_a_usage_error(install, workspace: Path, monkey_home: Path):
    from tests.support.plugins import manifest_text

    plugin = install("needy", [{"text": "never"}])
    manifest = plugin.folder / "plugin.yaml"
    manifest.write_text(
        manifest_text(
            "needy",
            ["python3", "x.py"],
            ["streaming"],
            'env:\n  NEEDY_URL:\n    description: "where the model is"\n    required: true\n',
        )
    )
    run = invoke(["agent", "--backend", "plugin:needy", "--task", "hi", "--cwd", str(workspace)], home=monkey_home)
    assert run.returncode == 2
    assert run.stderr.strip() == (
        "monkey: plugin needy needs NEEDY_URL (where the model is); set it in [plugins.needy] env in monkey's config"
    )
    assert plugin.methods() == []
