"""Diagnostics after edits, through the real loop (the scripted backend, the session as the command
line builds it) with a real ``ruff server``: what an edit newly broke is in the result the next model
call is sent; what was there before is not repeated; a server that hangs, crashes or is missing is
skipped with a note and the edit is done; a project's server in a folder nobody trusted is not run;
the server's process is gone once the session ends."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from monkey import children
from monkey.messages import Message
from monkey.permissions.requests import HeadlessApprover
from monkey.session.session import Session
from monkey.session.setup import SessionRequest, build_agent
from tests.support.cli import monkey_env, write_script
from tests.support.mcp import NPM_BIN
from tests.support.procs import pids_running
from tests.support.script import call_turn

needs_ruff = pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff (the dev and lsp extras) is not installed")

GENEROUS = 60
"""The bound the tests with a real server give it: what they check never depends on load."""


def _session(workspace: Path, tmp_path: Path, turns: list[dict[str, Any]], shown: list[Any]) -> Session:
    script = write_script(tmp_path / "script.json", [*turns, {"text": "done"}])
    setup = build_agent(
        SessionRequest(workspace=workspace, backend="scripted", script=str(script), no_approval=True),
        HeadlessApprover(),
    )
    return setup.session(show=shown.append, tell=lambda text, level: None)


def _tool_messages(session: Session) -> list[Message]:
    """The tool results the scripted model was sent, in order (each request sends the whole conversation)."""
    last = session.agent.backend.requests[-1]  # type: ignore[attr-defined]
    return [m for m in last.messages if m.role == "tool"]


async def _run(session: Session, prompt: str = "go") -> None:
    await session.open()
    try:
        await session.send(prompt)
    finally:
        await session.close()


def _config(home: Path, text: str) -> None:
    (home / "config.toml").write_text(text)


@pytest.mark.external
@needs_ruff
async def test_new_problems_reach_the_next_model_call_and_old_ones_are_not_repeated(
    workspace: Path, tmp_path: Path, monkey_home: Path
) -> None:
    _config(monkey_home, f"[lsp.python]\ntimeout = {GENEROUS}\n")
    (workspace / "app.py").write_text("import os\n\nprint(1)\n")  # os unused already: not this edit's doing
    shown: list[Any] = []
    session = _session(
        workspace,
        tmp_path,
        [
            call_turn("file_edit", path="app.py", old_string="print(1)\n", new_string="import sys\nprint(missing)\n"),
            call_turn("file_write", path="broken.py", content="def f(:\n    return 1\n"),
            call_turn("file_edit", path="app.py", old_string="print(missing)", new_string="print(os, sys)"),
        ],
        shown,
    )
    pids: list[tuple[int, int | None]] = []

    def seen(event: Any) -> None:  # the server's process while it runs, to look for it after the end
        shown.append(event)
        conn = (
            session.agent.options.diagnostics.running.get("python")  # type: ignore[union-attr]
            if session.agent.options.diagnostics is not None
            else None
        )
        if conn is not None and conn.proc is not None and not pids:
            pids.append((conn.proc.pid, children.start_time(conn.proc.pid)))

    session.show = seen  # type: ignore[method-assign]
    await _run(session)
    edit, write, fix = _tool_messages(session)
    assert "app.py:3:8: warning: `sys` imported but unused" in edit.content and "[F401]" in edit.content
    assert "app.py:4:7: error: Undefined name `missing` [F821]" in edit.content
    assert "`os` imported but unused" not in edit.content, "a problem from before the edit is not repeated"
    assert (workspace / "app.py").read_text() == "import os\n\nimport sys\nprint(os, sys)\n"
    assert "broken.py:1:" in write.content and ": error: " in write.content  # the syntax error
    assert "New problems" not in fix.content and "diagnostics" not in fix.content, "a fix reports nothing"
    reported = [e for e in shown if e.type == "diagnostics_reported"]
    assert [(e.path, e.server, e.note) for e in reported] == [("app.py", "python", ""), ("broken.py", "python", "")]
    assert {d.code for d in reported[0].diagnostics} >= {"F401", "F821"}
    assert pids, "the server ran"
    assert not children.alive(*pids[0]), "the language server is stopped with the session"


JSON_SERVER = NPM_BIN / "vscode-json-language-server"


@pytest.mark.external
@pytest.mark.skipif(not JSON_SERVER.exists(), reason="npm install --prefix tests/npm installs the JSON language server")
async def test_a_second_language_json_from_npm(workspace: Path, tmp_path: Path, monkey_home: Path) -> None:
    _config(
        monkey_home,
        f"[lsp.json]\ncommand = ['{JSON_SERVER}', '--stdio']\nextensions = ['.json']\ntimeout = {GENEROUS}\n",
    )
    (workspace / "data.json").write_text('{"a": 1}\n')
    session = _session(
        workspace,
        tmp_path,
        [
            call_turn("file_edit", path="data.json", old_string='"a": 1', new_string='"a": 1,, "b" 2'),
            call_turn("file_edit", path="data.json", old_string='"a": 1,, "b" 2', new_string='"a": 1, "b": 2'),
        ],
        [],
    )
    await _run(session)
    broke, fixed = _tool_messages(session)
    assert "data.json:1:9: error: Property expected" in broke.content
    assert "data.json:1:15: error: Colon expected" in broke.content
    assert "New problems" not in fixed.content
    assert (workspace / "data.json").read_text() == '{"a": 1, "b": 2}\n'


PUSHING = """
from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

server = LanguageServer("pushing", "1")  # no diagnosticProvider: it publishes, as many servers do


def publish(ls, uri, version, text):
    found = [lsp.Diagnostic(range=lsp.Range(start=lsp.Position(line=n, character=0), end=lsp.Position(line=n, character=4)),
                            message="TODO left in", severity=lsp.DiagnosticSeverity.Warning, code="todo")
             for n, line in enumerate(text.splitlines()) if "TODO" in line]
    ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, version=version, diagnostics=found))


@server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
def opened(ls, params):
    publish(ls, params.text_document.uri, params.text_document.version, params.text_document.text)


@server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
def changed(ls, params):
    publish(ls, params.text_document.uri, params.text_document.version, params.content_changes[-1].text)


server.start_io()
"""


@pytest.mark.subprocess
async def test_a_server_that_publishes_its_diagnostics(workspace: Path, tmp_path: Path, monkey_home: Path) -> None:
    """A server built with pygls's server side that pushes ``publishDiagnostics``: the one for the new text counts,
    and a second TODO is new even though one was there before (counted, not only compared)."""
    command = _script_server(tmp_path, "pushing", PUSHING)
    _config(monkey_home, f"[lsp.notes]\ncommand = {_toml_list(command)}\nextensions = ['.txt']\ntimeout = {GENEROUS}\n")
    (workspace / "notes.txt").write_text("TODO: one\n")
    session = _session(
        workspace, tmp_path, [call_turn("file_write", path="notes.txt", content="TODO: one\nTODO: two\n")], []
    )
    await _run(session)
    (result,) = _tool_messages(session)
    assert result.content.endswith(
        "New problems the notes language server reports after this change:\nnotes.txt:2:1: warning: TODO left in [todo]"
    )
    assert result.content.count("TODO left in") == 1


def _script_server(tmp_path: Path, name: str, body: str) -> list[str]:
    path = tmp_path / f"{name}.py"
    path.write_text(body)
    return [sys.executable, str(path)]


def _toml_list(items: list[str]) -> str:
    return "[" + ", ".join(f"'{item}'" for item in items) + "]"


@pytest.mark.subprocess
async def test_a_server_that_never_answers_is_skipped_with_a_note_and_the_edit_is_done(
    workspace: Path, tmp_path: Path, monkey_home: Path
) -> None:
    command = _script_server(tmp_path, "hang", "import sys\nsys.stdin.buffer.read()\n")  # reads, never answers
    _config(monkey_home, f"[lsp.notes]\ncommand = {_toml_list(command)}\nextensions = ['.txt']\ntimeout = 0.5\n")
    shown: list[Any] = []
    session = _session(
        workspace,
        tmp_path,
        [
            call_turn("file_write", path="a.txt", content="one\n"),
            call_turn("file_write", path="b.txt", content="two\n"),
        ],
        shown,
    )
    await _run(session)
    first, second = _tool_messages(session)
    assert first.content.startswith("created a.txt")
    assert "did not answer within 0.5 s; skipped for this session" in first.content
    assert not first.is_error
    assert "diagnostics" not in second.content, "a server that hung is not asked again this session"
    assert (workspace / "a.txt").read_text() == "one\n" and (workspace / "b.txt").read_text() == "two\n"
    notes = [e.note for e in shown if e.type == "diagnostics_reported"]
    assert len(notes) == 1 and "notes language server" in notes[0]
    assert pids_running(command[1]) == [], "the hung server is stopped"


@pytest.mark.subprocess
async def test_a_server_that_crashes_is_skipped_with_a_note(workspace: Path, tmp_path: Path, monkey_home: Path) -> None:
    command = _script_server(tmp_path, "crash", "import sys\nsys.stdin.buffer.read(20)\nsys.exit(3)\n")
    _config(monkey_home, f"[lsp.notes]\ncommand = {_toml_list(command)}\nextensions = ['.txt']\ntimeout = {GENEROUS}\n")
    session = _session(workspace, tmp_path, [call_turn("file_write", path="a.txt", content="one\n")], [])
    await _run(session)
    (result,) = _tool_messages(session)
    assert "exited" in result.content and "skipped for this session" in result.content
    assert (workspace / "a.txt").read_text() == "one\n"


@pytest.mark.subprocess
async def test_a_configured_program_that_is_missing_is_said(workspace: Path, tmp_path: Path, monkey_home: Path) -> None:
    _config(monkey_home, "[lsp.notes]\ncommand = ['no-such-language-server-here']\nextensions = ['.txt']\n")
    session = _session(workspace, tmp_path, [call_turn("file_write", path="a.txt", content="one\n")], [])
    await _run(session)
    (result,) = _tool_messages(session)
    assert "[diagnostics: cannot start the notes language server (no-such-language-server-here)" in result.content
    assert (workspace / "a.txt").read_text() == "one\n"


def test_a_built_in_whose_program_is_missing_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from monkey.lsp.servers import servers

    monkeypatch.delenv("MONKEY_LSP_BUILTINS")  # the test root turns the built-ins off
    assert [s.name for s in servers({})] == (["python"] if shutil.which("ruff") else [])
    monkeypatch.setenv("MONKEY_LSP_BUILTINS", "off")
    assert servers({}) == [] and [s.name for s in servers({"python": {"timeout": 5}})] == ["python"]
    monkeypatch.delenv("MONKEY_LSP_BUILTINS")
    monkeypatch.setenv("PATH", str(tmp_path))  # no ruff here
    assert servers({}) == []
    assert [s.name for s in servers({"python": {"command": ["ruff", "server"]}})] == ["python"], "configured: tried"
    assert servers({"python": {"enabled": False}}) == []


def test_a_bad_table_is_refused(workspace: Path) -> None:
    from monkey.lsp.servers import LspError, servers

    for table, said in (
        ({"command": "ruff server"}, "command must be a non-empty list"),
        ({"command": ["x"], "extensions": []}, "extensions must be"),
        ({"command": ["x"], "extensions": [".x"], "timeout": 0}, "timeout must be"),
        ({"command": ["x"], "extensions": [".x"], "comand": ["y"]}, "unknown key 'comand'"),
    ):
        with pytest.raises(LspError, match=said):
            servers({"mine": table})


@pytest.mark.subprocess
@pytest.mark.parametrize("trusted", [False, True])
async def test_a_projects_server_runs_only_in_a_trusted_folder(
    workspace: Path, tmp_path: Path, monkey_home: Path, trusted: bool
) -> None:
    ran = tmp_path / "ran"
    command = _script_server(tmp_path, "marker", f"open({str(ran)!r}, 'w').close()\n")
    (workspace / ".monkey").mkdir()
    (workspace / ".monkey" / "config.toml").write_text(
        f"[lsp.notes]\ncommand = {_toml_list(command)}\nextensions = ['.txt']\ntimeout = {GENEROUS}\n"
    )
    if trusted:
        _config(monkey_home, "[approvals]\ntrust_project = true\n")
    session = _session(workspace, tmp_path, [call_turn("file_write", path="a.txt", content="one\n")], [])
    await _run(session)
    (result,) = _tool_messages(session)
    assert ran.exists() is trusted, "the project's program runs only where the person trusts the folder"
    from monkey.config import load_config

    assert ("lsp.notes" in load_config(workspace).untrusted) is not trusted  # named among what the folder holds
    assert ("diagnostics" in result.content) is trusted  # trusted: it ran and exited at once, which is said


@pytest.mark.subprocess
def test_version_and_a_session_without_a_server_do_not_import_pygls(
    workspace: Path, tmp_path: Path, monkey_home: Path
) -> None:
    script = write_script(tmp_path / "s.json", [call_turn("file_write", path="a.txt", content="x"), {"text": "ok"}])
    code = (
        "import sys, asyncio\n"
        "from monkey.cli import main\n"
        "try:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
        "assert 'pygls' not in sys.modules and 'lsprotocol' not in sys.modules\n"
        "from monkey.permissions.requests import HeadlessApprover\n"
        "from monkey.session.setup import SessionRequest, build_agent\n"
        f"setup = build_agent(SessionRequest(workspace=__import__('pathlib').Path({str(workspace)!r}), backend='scripted',"
        f" script={str(script)!r},"
        " no_approval=True), HeadlessApprover())\n"
        "session = setup.session(show=lambda e: None, tell=lambda t, l: None)\n"
        "async def go():\n    await session.open()\n    await session.send('go')\n    await session.close()\n"
        "asyncio.run(go())\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pygls', 'lsprotocol')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        env=monkey_env(monkey_home, MONKEY_LSP_BUILTINS="off"),
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"
    assert (workspace / "a.txt").read_text() == "x"


@pytest.mark.subprocess
def test_the_server_dies_with_monkey_even_by_kill_9(workspace: Path, tmp_path: Path, monkey_home: Path) -> None:
    """monkey runs as a real process: its language server (started by the first edit) is gone once monkey is
    killed with SIGKILL, with no chance to close anything (the parent-death signal, the guardian)."""
    command = _script_server(tmp_path, "pushing", PUSHING)
    _config(monkey_home, f"[lsp.notes]\ncommand = {_toml_list(command)}\nextensions = ['.txt']\ntimeout = {GENEROUS}\n")
    script = write_script(
        tmp_path / "script.json",
        [call_turn("file_write", path="a.txt", content="TODO\n"), {"text": "never said", "delay": 3600}],
    )  # waits until killed
    monkey = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "monkey",
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--task",
            "go",
            "--cwd",
            str(workspace),
            "--no-approval",
            "--output-format",
            "stream-json",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=monkey_env(monkey_home),
    )
    try:
        assert monkey.stdout is not None
        for line in monkey.stdout:  # until the write's result (its diagnostics asked) is out
            if b'"tool_result"' in line:
                assert b"TODO left in" in line
                break
        running = pids_running(command[1])
        assert running, "the server runs, kept for the next edit"
        monkey.kill()
        monkey.wait()
        end = time.monotonic() + 60
        while pids_running(command[1]):
            assert time.monotonic() < end, "the language server outlived a kill -9 of monkey"
            time.sleep(0.05)
    finally:
        if monkey.poll() is None:
            monkey.kill()
            monkey.wait()
        for pid in pids_running(command[1]):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.subprocess
async def test_a_built_in_that_hangs_is_skipped_without_telling_the_model(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nobody configured the built-in ``ruff server``: when it fails, the front ends get the note (the event),
    the model's result stays as it would be without it."""
    monkeypatch.delenv("MONKEY_LSP_BUILTINS")  # the test root turns the built-ins off
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "ruff"  # a `ruff` that reads its input and never answers
    fake.write_text(f"#!{sys.executable}\nimport sys\nsys.stdin.buffer.read()\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    shown: list[Any] = []
    session = _session(workspace, tmp_path, [call_turn("file_write", path="a.py", content="import os\n")], shown)
    await _run(session)
    (result,) = _tool_messages(session)
    assert result.content == "created a.py (1 line, 10 bytes)"
    (event,) = [e for e in shown if e.type == "diagnostics_reported"]
    assert event.server == "python" and "did not answer within 2 s" in event.note
    assert pids_running(str(fake)) == []


@pytest.mark.subprocess
def test_the_built_in_is_not_used_without_the_client_library(tmp_path: Path) -> None:
    """``pip install monkey[local]`` alone, ruff on PATH: no built-in server (it would need pygls)."""
    code = (
        "import sys\n"
        f"sys.path = [{str(Path(__file__).resolve().parents[2])!r}] + [p for p in sys.path if 'site-packages' not in p]\n"
        "from monkey.lsp.servers import servers\n"
        "print(servers({}))\n"
    )
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    env.pop("MONKEY_LSP_BUILTINS", None)
    (tmp_path / "ruff").write_text("#!/bin/sh\n")
    (tmp_path / "ruff").chmod(0o755)
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
