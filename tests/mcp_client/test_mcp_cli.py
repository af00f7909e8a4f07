"""monkey as an MCP client, driven as a person would: the real CLI, the scripted model, real servers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import invoke
from tests.support.mcp import EVERYTHING, FILESYSTEM, fake_server, needs_npm, results, write_servers
from tests.support.script import call


@needs_npm
def test_an_everything_echo_runs_when_a_rule_allows_its_server(scripted, monkey_home: Path) -> None:
    write_servers(monkey_home / "mcp.json", {"everything": {"command": str(EVERYTHING)}})
    (monkey_home / "config.toml").write_text('[approvals]\nallow = ["mcp__everything"]\n')
    run = scripted([{"tool_calls": [call("mcp__everything__echo", message="hi there")]}, {"text": "done"}])
    assert run.returncode == 0, run.stderr
    [result] = results(run.stdout)
    assert result["ok"] and "Echo: hi there" in result["output"]


@needs_npm
def test_every_mcp_call_asks_so_headless_denies_it_with_the_reason(scripted, monkey_home: Path) -> None:
    write_servers(monkey_home / "mcp.json", {"everything": {"command": str(EVERYTHING)}})
    run = scripted(
        [{"tool_calls": [call("mcp__everything__echo", message="hi")]}, {"text": "done"}], "--mode", "accept-edits"
    )
    [result] = results(run.stdout)
    assert not result["ok"] and "needs approval and there is no terminal to ask on" in result["output"]


@needs_npm
def test_a_deny_rule_for_a_server_pattern_refuses_its_tools(scripted, monkey_home: Path) -> None:
    write_servers(monkey_home / "mcp.json", {"everything": {"command": str(EVERYTHING)}})
    (monkey_home / "config.toml").write_text(
        '[approvals]\nallow = ["mcp__everything"]\ndeny = ["mcp__everything__get-*"]\n'
    )
    run = scripted(
        [
            {"tool_calls": [call("mcp__everything__get-sum", a=1, b=2), call("mcp__everything__echo", message="ok")]},
            {"text": "done"},
        ]
    )
    first, second = results(run.stdout)
    assert not first["ok"] and "denied by rule mcp__everything__get-*" in first["output"]
    assert second["ok"] and "Echo: ok" in second["output"]


def test_a_project_server_in_an_untrusted_folder_is_not_started(scripted, workspace: Path, tmp_path: Path) -> None:
    state = tmp_path / "starts"
    write_servers(workspace / ".mcp.json", {"fake": fake_server(state)})
    run = scripted([{"tool_calls": [call("mcp__fake__greet", name="x")]}, {"text": "done"}], "--no-approval")
    assert "this folder is not trusted, so monkey did not use: the MCP servers of .mcp.json" in run.stderr
    assert "MCP server fake not started" not in run.stderr  # said once, with the rest
    assert not state.exists(), "the untrusted project's server ran"
    [result] = results(run.stdout)
    assert "unknown tool 'mcp__fake__greet'" in result["output"]


def test_a_trusted_project_server_still_needs_its_definition_approved(
    scripted, workspace: Path, tmp_path: Path, monkey_home: Path
) -> None:
    state = tmp_path / "starts"
    write_servers(workspace / ".mcp.json", {"fake": fake_server(state)})
    invoke(["trust", str(workspace)], home=monkey_home)
    run = scripted([{"text": "done"}], "--no-approval")
    assert "MCP server fake not started" in run.stderr and "you have not approved this definition" in run.stderr
    assert not state.exists()


def test_a_changed_definition_needs_a_person_even_with_a_rule(scripted, monkey_home: Path, tmp_path: Path) -> None:
    state = tmp_path / "starts"
    write_servers(
        monkey_home / "mcp.json",
        {"fake": fake_server(state, env={"PYTHONPATH": str(Path.cwd()), "FAKE_MCP_CHANGE": "1"})},
    )
    (monkey_home / "config.toml").write_text('[approvals]\nallow = ["mcp__fake"]\n')
    turns = [{"tool_calls": [call("mcp__fake__greet", name="ann")]}, {"text": "done"}]
    first = scripted(turns)
    [result] = results(first.stdout)
    assert result["ok"] and "hello ann" in result["output"], first.stderr
    pins = json.loads((monkey_home / "mcp" / "pins.json").read_text())
    assert "greet" in pins["fake"]
    second = scripted(turns)  # the server's second start describes greet differently
    [result] = results(second.stdout)
    assert not result["ok"]
    assert (
        "needs a person's approval of this exact call (the definition of mcp__fake__greet changed" in result["output"]
    )
    third = scripted(turns, "--no-approval")  # nor does auto mode skip it
    [result] = results(third.stdout)
    assert not result["ok"] and "definition of mcp__fake__greet changed" in result["output"]


def test_a_huge_result_is_cut_and_saved_whole(scripted, monkey_home: Path, tmp_path: Path) -> None:
    write_servers(monkey_home / "mcp.json", {"fake": fake_server(tmp_path / "starts")})
    (monkey_home / "config.toml").write_text('[approvals]\nallow = ["mcp__fake__huge"]\n[mcp]\nresult_limit = 5000\n')
    run = scripted([{"tool_calls": [call("mcp__fake__huge", n=300_000)]}, {"text": "done"}])
    [result] = results(run.stdout)
    assert result["ok"] and len(result["output"]) < 6000
    assert "[output cut at 5,000 of" in result["output"]
    saved = Path(result["output"].rsplit("saved in ", 1)[1].rstrip("]"))
    assert saved.is_relative_to(monkey_home) and saved.read_text().count("x") == 300_000


def test_a_malformed_result_is_an_error_the_model_sees(scripted, monkey_home: Path, tmp_path: Path) -> None:
    write_servers(monkey_home / "mcp.json", {"fake": fake_server(tmp_path / "starts")})
    (monkey_home / "config.toml").write_text('[approvals]\nallow = ["mcp__fake"]\n')
    run = scripted(
        [{"tool_calls": [call("mcp__fake__malformed"), call("mcp__fake__greet", name="b")]}, {"text": "done"}]
    )
    bad, good = results(run.stdout)
    assert not bad["ok"] and "gave no usable result for malformed" in bad["output"]
    assert good["ok"] and "hello b" in good["output"]


def test_a_crashed_server_is_reported_and_restarted_once(scripted, monkey_home: Path, tmp_path: Path) -> None:
    state = tmp_path / "starts"
    write_servers(monkey_home / "mcp.json", {"fake": fake_server(state)})
    (monkey_home / "config.toml").write_text('[approvals]\nallow = ["mcp__fake"]\n')
    run = scripted([{"tool_calls": [call("mcp__fake__crash")]}, {"text": "done"}])
    [result] = results(run.stdout)
    assert not result["ok"] and "the MCP server fake went away during the call" in result["output"]
    assert state.read_text() == "2", "the server was not started again"


def test_a_stdio_server_gets_only_the_variables_its_config_names(scripted, monkey_home: Path, tmp_path: Path) -> None:
    write_servers(
        monkey_home / "mcp.json",
        {"fake": fake_server(tmp_path / "s", env={"PYTHONPATH": str(Path.cwd()), "GREETING": "${MY_GREETING}"})},
    )
    (monkey_home / "config.toml").write_text('[approvals]\nallow = ["mcp__fake__env"]\n')
    run = scripted(
        [
            {"tool_calls": [call("mcp__fake__env", name="GREETING"), call("mcp__fake__env", name="GITHUB_TOKEN")]},
            {"text": "done"},
        ],
        MY_GREETING="hej",
        GITHUB_TOKEN="ghp_" + "a1B2" * 9,
    )
    named, secret = results(run.stdout)
    assert '"hej"' in named["output"]
    assert "<unset>" in secret["output"]


@needs_npm
def test_a_filesystem_server_write_is_undone_by_monkey_undo(scripted, workspace: Path, monkey_home: Path) -> None:
    write_servers(monkey_home / "mcp.json", {"fs": {"command": str(FILESYSTEM), "args": [str(workspace)]}})
    (monkey_home / "config.toml").write_text('[approvals]\nallow = ["mcp__fs__write_file"]\n')
    run = scripted(
        [
            {"tool_calls": [call("mcp__fs__write_file", path=str(workspace / "made.txt"), content="by mcp\n")]},
            {"text": "done"},
        ]
    )
    [result] = results(run.stdout)
    assert result["ok"], result
    assert (workspace / "made.txt").read_text() == "by mcp\n"
    assert any(json.loads(line)["type"] == "checkpoint_created" for line in run.stdout.splitlines())
    undo = invoke(["undo", "--cwd", str(workspace)], home=monkey_home)
    assert undo.returncode == 0, undo.stderr
    assert not (workspace / "made.txt").exists()


def test_a_broken_mcp_config_file_is_one_clear_line(scripted, monkey_home: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"mcpServers": {"x": ')
    run = scripted([{"text": "done"}], "--mcp-config", str(bad))
    assert run.returncode == 2
    assert run.stderr.strip().splitlines()[-1].startswith(f"monkey: cannot read {bad}: Expecting value at line 1")
    (monkey_home / "mcp.json").write_text("{not json")
    run = scripted([{"text": "done"}])
    assert run.returncode == 0
    assert f"cannot read {monkey_home / 'mcp.json'}" in run.stderr and "its servers were not started" in run.stderr


@pytest.mark.parametrize(("legacy", "protocol"), [(False, "2026-07-28"), (True, "2025-11-25")])
def test_tools_listed_again_after_list_changed_are_offered(
    scripted, monkey_home: Path, tmp_path: Path, legacy: bool, protocol: str
) -> None:
    """The 2026-07-28 revision tells of changed tools on a subscriptions/listen stream; a server of an
    earlier revision (the initialize handshake) with notifications/tools/list_changed."""
    server = fake_server(tmp_path / "starts")
    if legacy:
        server["env"] = {**server["env"], "FAKE_MCP_LEGACY": "1"}
    write_servers(monkey_home / "mcp.json", {"fake": server})
    (monkey_home / "config.toml").write_text('[approvals]\nallow = ["mcp__fake"]\n')
    run = scripted(
        [{"tool_calls": [call("mcp__fake__grow")]}, {"tool_calls": [call("mcp__fake__later")]}, {"text": "done"}]
    )
    grow, later = results(run.stdout)
    assert grow["ok"] and f"grown (protocol {protocol})" in grow["output"], run.stdout
    assert later["ok"] and "I came later" in later["output"], run.stdout


def test_tool_timeout_bounds_a_call(scripted, monkey_home: Path, tmp_path: Path) -> None:
    write_servers(monkey_home / "mcp.json", {"fake": fake_server(tmp_path / "starts", tool_timeout=1)})
    (monkey_home / "config.toml").write_text('[approvals]\nallow = ["mcp__fake"]\n')
    run = scripted(
        [{"tool_calls": [call("mcp__fake__slow", seconds=60), call("mcp__fake__greet", name="c")]}, {"text": "done"}]
    )
    slow, greet = results(run.stdout)
    assert not slow["ok"] and "took longer than 1 s (tool_timeout); the call was cancelled" in slow["output"]
    assert greet["ok"], "the server still answers after a cancelled call"


@pytest.mark.subprocess
def test_a_call_is_cancelled_with_its_turn(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    from tests.support.cli import monkey_env, write_script

    write_servers(monkey_home / "mcp.json", {"fake": fake_server(tmp_path / "starts")})
    (monkey_home / "config.toml").write_text('[approvals]\nallow = ["mcp__fake"]\n')
    script = write_script(tmp_path / "s.json", [{"tool_calls": [call("mcp__fake__slow", seconds=120)]}, {"text": "x"}])
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "monkey",
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(workspace),
            "--task",
            "wait",
            "--output-format",
            "stream-json",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=monkey_env(monkey_home),
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if json.loads(line)["type"] == "tool_started":
            break
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert time.monotonic() - started < 60
    assert json.loads(out.splitlines()[-1])["reason"] == "cancelled"


@needs_npm
def test_images_are_kept_and_structured_content_is_given(scripted, monkey_home: Path) -> None:
    write_servers(monkey_home / "mcp.json", {"everything": {"command": str(EVERYTHING)}})
    (monkey_home / "config.toml").write_text('[approvals]\nallow = ["mcp__everything"]\n')
    run = scripted(
        [
            {
                "tool_calls": [
                    call("mcp__everything__get-tiny-image"),
                    call("mcp__everything__get-structured-content", location="New York"),
                ]
            },
            {"text": "done"},
        ]
    )
    image, structured = results(run.stdout)
    assert image["ok"] and "[image 1: image/png," in image["output"]
    assert [i["media_type"] for i in image["images"]] == ["image/png"]  # passed on by backends that take them
    assert structured["ok"] and json.loads(structured["output"]).get("temperature") is not None


@pytest.mark.subprocess
def test_a_streamable_http_server_is_reached_by_its_url(scripted, monkey_home: Path, tmp_path: Path) -> None:
    import os
    import socket
    import subprocess
    import sys
    import time

    from tests.support.cli import ROOT

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.support.fakes.mcp_server", str(tmp_path / "starts")],
        cwd=ROOT,
        env={**os.environ, "FAKE_MCP_HTTP_PORT": str(port), "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None, "the HTTP server did not start"
                time.sleep(0.05)
        (monkey_home / "config.toml").write_text(
            f'[approvals]\nallow = ["mcp__web"]\n[mcp_servers.web]\nurl = "http://127.0.0.1:{port}/mcp"\n'
            'headers = { Authorization = "Bearer ${WEB_TOKEN}" }\n'
        )
        run = scripted([{"tool_calls": [call("mcp__web__greet", name="http")]}, {"text": "done"}], WEB_TOKEN="t0k")
        [result] = results(run.stdout)
        assert result["ok"] and "hello http" in result["output"], run.stderr
    finally:
        server.terminate()
        server.wait(timeout=10)
