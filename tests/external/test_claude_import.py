"""``monkey sessions import claude`` of a session the REAL Claude Code CLI wrote against the fake
Anthropic server, continued by monkey's Anthropic backend against the same server (every turn
sent); importing again updates it; the source file is never changed; bad files are told."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from monkey.session.claude_export import project_dir
from monkey.store import SessionStore
from tests.support.cli import invoke_async, main_in_thread
from tests.support.fakes.anthropic_server import FakeAnthropic
from tests.support.external import claude_cli

pytestmark = pytest.mark.external


def _claude(cli: str, workspace: Path, server: FakeAnthropic, home: Path, config: Path, *args: str) -> dict:  # type: ignore[type-arg]
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(config),
        "ANTHROPIC_API_KEY": "sk-ant-fake",
        "ANTHROPIC_BASE_URL": server.url,
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
    }
    run = subprocess.run(
        [cli, *args, "--output-format", "json"], cwd=workspace, env=env, capture_output=True, text=True, timeout=150
    )
    assert run.returncode == 0, run.stdout + run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])


def _digest(path: Path) -> tuple[str, int]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


async def test_import_a_real_claude_code_session_and_go_on(
    workspace: Path, tmp_path: Path, monkey_home: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    cli = claude_cli()
    config, home = tmp_path / "claude-config", tmp_path / "cli-home"
    home.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    with FakeAnthropic(str(workspace)) as server:
        first = _claude(
            cli, workspace, server, home, config, "-p", "please create hello.txt", "--allowedTools", "Write"
        )
        session = first["session_id"]
        _claude(cli, workspace, server, home, config, "--resume", session, "-p", "say something else")
        path = project_dir(str(workspace)) / f"{session}.jsonl"
        before = _digest(path)

        code, out, err = await main_in_thread(capsys, "sessions", "import", "claude", session)
        assert code == 0, err
        sid = out.split(" as session ")[1].split()[0]
        assert "(2 turns)" in out and _digest(path) == before, "the source is read, never written"
        async with await SessionStore.open() as store:
            restored = await store.load(sid)
            info = await store.get(sid)
        assert info is not None and info.workspace == str(workspace) and info.state == "imported"
        calls = [c for m in restored.messages for c in m.tool_calls]
        assert [(c.name, c.arguments) for c in calls] == [
            ("file_write", {"path": "hello.txt", "content": "hi there\n"})
        ]
        assert [m.content for m in restored.messages if m.role == "user"] == [
            "please create hello.txt",
            "say something else",
        ]

        code, out, _ = await main_in_thread(capsys, "sessions", "show", sid)
        assert f"from claude code {session}  {path}" in out
        code, out, _ = await main_in_thread(capsys, "sessions", "import", "claude", str(path))
        assert code == 0 and out.startswith("updated") and f"as session {sid}" in out, "idempotent"
        async with await SessionStore.open() as store:
            assert len(await store.list_sessions(str(workspace))) == 1

        (monkey_home / "config.toml").write_text(f'[anthropic]\nbase_url = "{server.url}"\n')
        server.requests.clear()
        run = await invoke_async(
            [
                "agent",
                "--backend",
                "anthropic",
                "--resume",
                sid,
                "--task",
                "and now?",
                "--cwd",
                str(workspace),
                "--output-format",
                "stream-json",
            ],
            home=monkey_home,
            ANTHROPIC_API_KEY="sk-ant-fake",
        )
        assert run.returncode == 0, run.stderr
        sent = server.main_requests()[-1]["body"]["messages"]
    said = json.dumps(sent)
    for text in (
        "please create hello.txt",
        "I'll do it.",
        "toolu_fake1",
        "File created successfully",
        "Done: hello.txt is written.",
        "say something else",
        "and now?",
    ):
        assert text in said, f"{text!r} was not sent"
    assert [m["role"] for m in sent][:2] == ["user", "assistant"]

    code, _, err = await main_in_thread(capsys, "sessions", "import", "claude", session)
    assert code == 1 and "has gone on in monkey since" in err


async def test_bad_claude_files(tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-config"))
    ws = tmp_path / "ws"
    ws.mkdir()
    folder = project_dir(str(ws))
    folder.mkdir(parents=True)
    sid = "11111111-2222-3333-4444-555555555555"
    rec = {"sessionId": sid, "cwd": str(ws), "isSidechain": False}
    lines = [
        {**rec, "type": "user", "uuid": "u1", "parentUuid": None, "message": {"role": "user", "content": "hi"}},
        {
            **rec,
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "message": {
                "id": "m1",
                "role": "assistant",
                "model": "claude-x",
                "content": [{"type": "tool_use", "id": "t1", "name": "FrobnicateTool", "input": {"x": 1}}],
            },
        },
        {
            **rec,
            "type": "user",
            "uuid": "u2",
            "parentUuid": "a1",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "frobbed"}],
            },
        },
        {**rec, "type": "brand-new-record", "uuid": "x1", "parentUuid": "u2"},
        {"type": "custom-title", "customTitle": "frob things", "sessionId": sid},
    ]
    path = folder / f"{sid}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines) + '{"type": "assistant", "uuid": "a2", "mess')
    code, out, err = await main_in_thread(capsys, "sessions", "import", "claude", "frob things")
    assert code == 0, err
    assert "last line was cut short" in out and "brand-new-record" in out
    new = out.split(" as session ")[1].split()[0]
    async with await SessionStore.open() as store:
        restored = await store.load(new)
    assert [(c.name, c.arguments) for m in restored.messages for c in m.tool_calls] == [("FrobnicateTool", {"x": 1})]
    assert restored.messages[-1].content == "frobbed", "a foreign call kept with its result"

    code, _, err = await main_in_thread(capsys, "sessions", "import", "claude", "not-a-uuid-nor-title")
    assert code == 1 and "is not a session file, a Claude Code session id or a title" in err
    code, _, err = await main_in_thread(capsys, "sessions", "import", "claude", "99999999-2222-3333-4444-555555555555")
    assert code == 1 and "no Claude Code session" in err


async def test_a_file_that_changes_while_it_is_read(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    # /proc/self/status is made afresh at each read and never has the size stat gives it: as a
    # session file Claude Code keeps writing, what was read never matches the file's size and time
    moving = tmp_path / "moving.jsonl"
    moving.symlink_to("/proc/self/status")
    code, _, err = await main_in_thread(capsys, "sessions", "import", "claude", str(moving))
    assert code == 1 and "kept changing while it was read" in err
