"""``monkey sessions import codex`` of a rollout the REAL Codex CLI (``codex exec``) wrote against
the fake Responses API, continued by ``--resume`` on another backend (scripted) with every turn."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from monkey.backends.scripted import ScriptTurn
from monkey.store import SessionStore
from tests.support.fakes.openai_responses import FakeResponses, codex_config
from tests.support.external import codex_cli
from tests.support.agent import drive, make_agent
from tests.support.cli import main_in_thread

pytestmark = pytest.mark.external


async def test_import_a_real_codex_rollout_and_go_on(
    workspace: Path, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    cli = codex_cli()
    codex_home = tmp_path / "cli-home" / ".codex"
    codex_home.mkdir(parents=True)
    tmp = codex_home.parent / "tmp"  # see test_codex_recorded._configure: Codex's sandbox helper
    tmp.mkdir()
    with FakeResponses() as server:
        (codex_home / "config.toml").write_text(codex_config(server.url, model="gpt-5.5"))
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(codex_home.parent),
            "CODEX_HOME": str(codex_home),
            "FAKE_OPENAI_KEY": "sk-fake",
            "TMPDIR": str(tmp),
        }
        run = subprocess.run(
            [cli, "exec", "--skip-git-repo-check", "-s", "workspace-write", "please create hello.txt"],
            cwd=workspace,
            env=env,
            capture_output=True,
            text=True,
            timeout=150,
        )
        assert run.returncode == 0, run.stdout + run.stderr
    (rollout,) = sorted((codex_home / "sessions").glob("**/rollout-*.jsonl"))
    codex_id = rollout.stem[-36:]
    before = hashlib.sha256(rollout.read_bytes()).hexdigest(), rollout.stat().st_mtime_ns
    monkeypatch.setenv("CODEX_HOME", str(codex_home))

    code, out, err = await main_in_thread(capsys, "sessions", "import", "codex", codex_id)
    assert code == 0, err
    sid = out.split(" as session ")[1].split()[0]
    assert "reasoning item(s) left out" in out
    assert (hashlib.sha256(rollout.read_bytes()).hexdigest(), rollout.stat().st_mtime_ns) == before, "read only"
    code, out, _ = await main_in_thread(capsys, "sessions", "import", "codex", str(rollout))
    assert code == 0 and out.startswith("updated") and f"as session {sid}" in out, "idempotent"
    async with await SessionStore.open() as store:
        info = await store.get(sid)
        assert info is not None and info.workspace == str(workspace) and info.title == "please create hello.txt"
        assert len(await store.list_sessions(str(workspace))) == 1

    going = make_agent(workspace, [ScriptTurn(text="on another backend")])
    await drive(going, "and now?", resume=sid)
    sent = going.backend.requests[0].messages
    assert [m.role for m in sent] == ["user", "assistant", "tool", "assistant", "user"]
    (call,) = sent[1].tool_calls
    assert call.name == "shell_execute" and "hello.txt" in call.arguments["command"]
    assert "wrote hello.txt" in sent[2].content and sent[2].tool_call_id == call.id
    assert sent[3].content == "Done: hello.txt is written." and sent[4].content == "and now?"

    code, _, err = await main_in_thread(capsys, "sessions", "import", "codex", "not-an-id")
    assert code == 1 and "is not a rollout file nor a Codex session id" in err
