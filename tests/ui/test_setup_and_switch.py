"""The app draws before its agent exists, and ``/model`` / ``/backend`` switch mid-session."""

from __future__ import annotations

import sys
from pathlib import Path

import pexpect
import pytest

from monkey.ui.widgets.event_pane import EventPane
from tests.support.cli import invoke, invoke_async, monkey_env, write_script
from tests.support.app import notice_text, settle, type_and_send
from tests.support.pty import PTY_TIMEOUT

SIZE = (120, 36)


async def send(pilot, app, text: str) -> None:  # type: ignore[no-untyped-def]
    await type_and_send(pilot, app, text)
    await settle(pilot, app)


async def test_the_agent_is_built_after_the_first_frame(app_for) -> None:
    app = app_for([{"text": "hello"}])
    drawn_without_agent = []
    async with app.run_test(size=SIZE) as pilot:
        # on_mount has run and the status bar shows the backend; the agent comes just after.
        drawn_without_agent.append(app._agent is None and app.status.backend == "scripted")
        await send(pilot, app, "hi")
        assert app.agent.turns == 1 and app.agent.checkpoints is not None
    assert drawn_without_agent == [True]


async def test_the_collector_is_held_until_the_first_frame(app_for) -> None:
    """``monkey agent`` holds the garbage collector while it starts; the app lets it run again
    (less often) once its first frame is drawn, before it builds the agent."""
    import gc

    from monkey.ui.memory import THRESHOLDS, hold_collector

    app = app_for([{"text": "hello"}])
    hold_collector()
    try:
        async with app.run_test(size=SIZE) as pilot:
            held_at_mount = not gc.isenabled() and app._agent is None
            await send(pilot, app, "hi")
            assert gc.isenabled() and gc.get_threshold() == THRESHOLDS
        assert held_at_mount
    finally:
        gc.enable()


async def test_what_building_the_agent_found_is_shown_in_the_app(app_for, workspace: Path, monkey_home: Path) -> None:
    """The sandbox's line and the instruction files left out come from Setup.build, after the first
    frame: the transcript shows them, as the line front end prints them."""
    (monkey_home / "config.toml").write_text('[shell]\nsandbox = "off"\n')
    (workspace / "AGENTS.md").write_text("be brief\n")
    app = app_for([{"text": "hello"}])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, app, "hi")
        shown = notice_text(app)
        assert 'the sandbox is off (shell.sandbox = "off" in your config)' in shown
        assert "this folder is not trusted, so monkey did not use: AGENTS.md" in shown
        assert shown.count("the sandbox is off") == 1
    said_after = "\n".join(app.prepare_notices)  # the command line repeats them on stderr once the app has closed
    assert "the sandbox is off" in said_after and "did not use: AGENTS.md" in said_after


async def test_model_and_backend_switch_in_the_app(app_for, monkey_home: Path, workspace: Path) -> None:
    app = app_for([{"text": "first answer"}])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, app, "one?")
        await send(pilot, app, "/backend")
        assert "* scripted" in notice_text(app) and "ANTHROPIC_API_KEY" in notice_text(app)

        await send(pilot, app, "/model bigger")
        assert app.agent.backend.model == "bigger" and app.status.model == "bigger"
        assert "now using scripted · bigger" in notice_text(app)
        pane = app.query_one(EventPane)
        assert any(event.type == "backend_changed" for _, event in pane.events)

        await send(pilot, app, "/backend nope")
        assert "unknown backend 'nope'" in notice_text(app)
        assert app.agent.backend.model == "bigger"

        await send(pilot, app, "two?")  # the new backend answers, with the conversation so far
        assert [m.content for m in app.agent.messages][-2:] == ["two?", "first answer"]
        session_id = app.agent.session_id
        await app.action_quit()
    exported = await invoke_async(["sessions", "export", session_id], home=monkey_home)
    [changed] = [line for line in exported.stdout.splitlines() if '"backend_changed"' in line]
    assert '"to_model":"bigger"' in changed


@pytest.mark.pty
@pytest.mark.parametrize(
    ("setup", "says"),
    [
        ({"config": '[approvals]\ndeny = ["shell_execute(git status"]\n'}, "shell_execute(git status"),
        ({"config": "[agent]\nmax_iterations = 'many'\n"}, "max_iterations"),
        ({"flags": ["--backend", "nope"]}, "unknown backend 'nope'"),
    ],
)
def test_usage_errors_exit_2_before_the_app_draws(
    workspace: Path, monkey_home: Path, tmp_path: Path, setup: dict, says: str
) -> None:  # type: ignore[type-arg]
    if "config" in setup:
        (workspace / ".monkey").mkdir(exist_ok=True)
        (workspace / ".monkey" / "config.toml").write_text(setup["config"])
    script = write_script(tmp_path / "s.json", [{"text": "hello"}])
    flags = setup.get("flags", ["--backend", "scripted"])
    child = pexpect.spawn(
        sys.executable,
        ["-m", "monkey", "agent", *flags, "--script", str(script), "--cwd", str(workspace)],
        env=monkey_env(monkey_home, TERM="xterm-256color"),
        timeout=PTY_TIMEOUT,
        dimensions=(36, 120),
    )
    child.expect(pexpect.EOF)
    child.close()
    out = child.before.decode(errors="replace")
    assert child.exitstatus == 2, out
    assert says in out
    assert "\x1b[?1049h" not in out, "the app switched to the alternate screen before failing"


async def test_a_switch_before_the_first_turn_opens_the_session(app_for, monkey_home: Path) -> None:
    app = app_for([{"text": "hello"}])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, app, "/model early")
        assert "no longer saved" not in notice_text(app)
        session_id = app.agent.session_id
        await app.action_quit()
    exported = await invoke_async(["sessions", "export", session_id], home=monkey_home)
    kinds = [line.split('"type":"')[1].split('"')[0] for line in exported.stdout.splitlines()]
    assert kinds == ["session_started", "backend_changed", "session_ended"]


async def test_the_app_collects_garbage_rarely(app_for) -> None:
    import gc

    from monkey.ui.memory import THRESHOLDS

    app = app_for([{"text": "hello"}])
    async with app.run_test(size=SIZE):
        assert gc.get_threshold() == THRESHOLDS


async def test_the_top_says_what_is_not_on_screen_and_where_to_read_it(app_for) -> None:
    from monkey.ui.widgets.transcript import MAX_BLOCKS

    app = app_for([{"text": "hello"}])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, app, "hi")
        transcript = app.transcript
        transcript.load_history([(f"question {i}", f"answer {i}") for i in range(MAX_BLOCKS)])
        for i in range(MAX_BLOCKS):
            transcript.add_notice(f"note {i}")
        await pilot.pause()
        first = transcript.children[0]
        said = str(first.render())
        assert said.startswith(f"… {MAX_BLOCKS - (MAX_BLOCKS // 2 - 1)} earlier turns and ")
        assert f"monkey sessions export {app.agent.session_id} --format markdown" in said
        assert len(transcript.children) == MAX_BLOCKS + 1  # the blocks, and that line
        assert str(transcript.children[-1].render()) == f"note {MAX_BLOCKS - 1}"


@pytest.mark.pty
@pytest.mark.parametrize("flags", [["--continue"], ["--resume", "nosuchsession"]])
def test_a_session_that_is_not_there_fails_before_the_app_draws(
    workspace: Path, monkey_home: Path, tmp_path: Path, flags: list[str]
) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "hello"}])
    child = pexpect.spawn(
        sys.executable,
        ["-m", "monkey", "agent", "--backend", "scripted", "--script", str(script), "--cwd", str(workspace), *flags],
        env=monkey_env(monkey_home, TERM="xterm-256color"),
        timeout=PTY_TIMEOUT,
        dimensions=(36, 120),
    )
    child.expect(pexpect.EOF)
    child.close()
    out = child.before.decode(errors="replace")
    assert child.exitstatus == 1, out
    assert ("no session to continue in" if flags == ["--continue"] else "nosuchsession") in out
    assert "\x1b[?1049h" not in out, "the app switched to the alternate screen before failing"
    assert invoke(["sessions", "list", "--all", "--json"], home=monkey_home).stdout.strip() == "[]"


@pytest.mark.pty
def test_continue_in_the_app_opens_the_latest_session(workspace: Path, monkey_home: Path, tmp_path: Path) -> None:
    first = invoke(
        [
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(write_script(tmp_path / "a.json", [{"text": "first answer"}])),
            "--cwd",
            str(workspace),
            "--task",
            "first question",
            "--output-format",
            "stream-json",
        ],
        home=monkey_home,
    )
    session_id = first.of_type("session_started")[0]["session_id"]
    script = write_script(tmp_path / "s.json", [{"text": "hello"}])
    child = pexpect.spawn(
        sys.executable,
        [
            "-m",
            "monkey",
            "agent",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--cwd",
            str(workspace),
            "--continue",
        ],
        env=monkey_env(monkey_home, TERM="xterm-256color"),
        timeout=PTY_TIMEOUT,
        dimensions=(36, 120),
    )
    child.expect(f"resumed session {session_id}")
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    child.close()
