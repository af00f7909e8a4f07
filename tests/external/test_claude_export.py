"""``monkey sessions export ID --format claude`` continued by the REAL Claude Code CLI
(``claude --resume <uuid> -p``) against the fake Anthropic server: every earlier turn, tool
call and result reaches the server; a file Claude Code has written to since is never replaced."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path

import pytest

from monkey.backends.scripted import ScriptCall, ScriptTurn
from monkey.cli import main
from monkey.session.claude_export import CLAUDE_CODE_VERSION, claude_uuid, project_dir, project_slug
from tests.support.fakes.anthropic_server import FakeAnthropic
from tests.support.external import claude_cli
from tests.support.agent import drive, make_agent

pytestmark = pytest.mark.external


async def _export(capsys, *extra: str) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    capsys.readouterr()
    code = await asyncio.to_thread(main, ["sessions", "export", *extra])
    out = capsys.readouterr()
    return code, out.out, out.err


def _resume(
    cli: str, workspace: Path, session: str, server: FakeAnthropic, home: Path, config: Path, prompt: str
) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(config),
        "ANTHROPIC_API_KEY": "sk-ant-fake",
        "ANTHROPIC_BASE_URL": server.url,
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
    }
    return subprocess.run(
        [cli, "--resume", session, "-p", prompt, "--output-format", "json"],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=150,
    )


def _texts(message: dict) -> list[str]:  # type: ignore[type-arg]
    content = message["content"]
    if isinstance(content, str):
        return [content]
    out = []
    for block in content:
        if block.get("type") == "text":
            out.append(block["text"])
        elif block.get("type") == "tool_result":
            inner = block["content"]
            out.append(inner if isinstance(inner, str) else " ".join(b.get("text", "") for b in inner))
    return out


async def _session(workspace: Path) -> str:
    (workspace / "notes.txt").write_text("the secret word is pelican\n")
    agent = make_agent(
        workspace,
        [
            ScriptTurn(
                thinking="unsigned musing",
                text="Reading the notes.",
                tool_calls=[ScriptCall(id="call.1", name="file_read", arguments={"path": "notes.txt"})],
            ),
            ScriptTurn(text="The notes name a pelican."),
        ],
    )
    await drive(agent, "what do the notes say?")
    again = make_agent(workspace, [ScriptTurn(text="Still a pelican.")])
    await drive(again, "and again?", resume=agent.session_id)
    return agent.session_id


async def test_claude_resumes_an_exported_session(
    workspace: Path, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    cli = claude_cli()
    version = subprocess.run([cli, "--version"], capture_output=True, text=True, timeout=60).stdout
    assert version.startswith(CLAUDE_CODE_VERSION), (
        f"the format was checked against {CLAUDE_CODE_VERSION}, not {version}"
    )
    config, home = tmp_path / "claude-config", tmp_path / "cli-home"
    home.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    sid = await _session(workspace)

    code, out, err = await _export(capsys, sid, "--format", "claude")
    assert code == 0, err
    session = claude_uuid(sid)
    path = project_dir(str(workspace)) / f"{session}.jsonl"
    assert f"claude --resume {session}" in out and str(path) in out
    assert "1 thinking block(s) without an Anthropic signature left out" in out
    records = [json.loads(line) for line in path.read_text().splitlines()]
    messages = [r for r in records if r["type"] in ("user", "assistant")]
    assert [r["parentUuid"] for r in messages[1:]] == [r["uuid"] for r in messages[:-1]], "one chain"
    assert all(
        r["sessionId"] == session
        and r["cwd"] == str(workspace)
        and r["gitBranch"] == "main"
        and r["version"] == CLAUDE_CODE_VERSION
        and r["timestamp"].endswith("Z")
        for r in messages
    )
    assert all("usage" in r["message"] for r in messages if r["type"] == "assistant")
    assert records[-1] == {"type": "custom-title", "customTitle": "what do the notes say?", "sessionId": session}
    assert not any(
        b.get("type") == "thinking" for r in messages if r["type"] == "assistant" for b in r["message"]["content"]
    )

    code, out, _ = await _export(capsys, sid, "--format", "claude")
    assert code == 0 and f"claude --resume {session}" in out, "a re-export replaces the same file"

    with FakeAnthropic(str(workspace)) as server:
        run = _resume(cli, workspace, session, server, home, config, "what was the word?")
        assert run.returncode == 0, run.stdout + run.stderr
        sent = server.main_requests()[-1]["body"]["messages"]
    said = [" ".join(_texts(m)) for m in sent]
    joined = "\n".join(said)
    for text in (
        "what do the notes say?",
        "Reading the notes.",
        "the secret word is pelican",
        "The notes name a pelican.",
        "and again?",
        "Still a pelican.",
        "what was the word?",
    ):
        assert text in joined, f"{text!r} was not sent: {said}"
    calls = [
        b
        for m in sent
        if m["role"] == "assistant" and isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_use"
    ]
    results = [
        b
        for m in sent
        if m["role"] == "user" and isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    assert [(c["name"], c["id"], c["input"]) for c in calls] == [("file_read", "call_1", {"path": "notes.txt"})]
    assert [r["tool_use_id"] for r in results] == ["call_1"]

    # Claude Code has written to the file since: it is left alone, --force writes a new session
    before = path.read_bytes()
    code, _, err = await _export(capsys, sid, "--format", "claude")
    assert code == 1 and "Claude Code has written to" in err and "--force" in err
    assert path.read_bytes() == before
    code, out, _ = await _export(capsys, sid, "--format", "claude", "--force")
    assert code == 0 and "left as Claude Code wrote it" in out
    fresh = out.split("claude --resume ")[1].split()[0]
    assert fresh != session and (path.parent / f"{fresh}.jsonl").is_file() and path.read_bytes() == before


async def test_a_workspace_path_over_200_characters(tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    cli = claude_cli()
    config, home = tmp_path / "claude-config", tmp_path / "cli-home"
    home.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    workspace = tmp_path / ("a" * 120) / ("b.c" * 40)
    workspace.mkdir(parents=True)
    assert len(project_slug(str(workspace))) > 200
    agent = make_agent(workspace, [ScriptTurn(text="long way down")])
    await drive(agent, "hello from deep down")
    code, out, err = await _export(capsys, agent.session_id, "--format", "claude")
    assert code == 0, err
    session = claude_uuid(agent.session_id)
    with FakeAnthropic(str(workspace)) as server:
        run = _resume(cli, workspace, session, server, home, config, "still there?")
        assert run.returncode == 0, run.stdout + run.stderr
        joined = json.dumps(server.main_requests()[-1]["body"]["messages"])
    assert "hello from deep down" in joined and "long way down" in joined, (
        "Claude Code found the file by its hashed slug"
    )


async def test_bad_ids(capsys) -> None:  # type: ignore[no-untyped-def]
    code, _, err = await _export(capsys, "not-a-uuid-or-session", "--format", "claude")
    assert code == 1 and "no session" in err


async def test_slash_export_claude(workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from monkey.session.session import Session
    from tests.support.agent import ListSink

    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-config"))
    agent = make_agent(workspace, [ScriptTurn(text="an answer")])
    session = Session(agent, switcher=None, show=ListSink(), tell=lambda text, level: None)  # type: ignore[arg-type]
    await session.open()
    try:
        assert (await session.command("/export"))[0].level == "warning"
        assert "no turn" in (await session.command("/export claude"))[0].text
        await session.send("a question")
        (reply,) = await session.command("/export claude")
    finally:
        await session.end()
    path = project_dir(str(workspace)) / f"{claude_uuid(agent.session_id)}.jsonl"
    assert f"claude --resume {claude_uuid(agent.session_id)}" in reply.text and path.is_file()
    sent = [json.loads(line)["message"]["content"] for line in path.read_text().splitlines()[:2]]
    assert sent[0] == "a question" and sent[1][0]["text"] == "an answer"
