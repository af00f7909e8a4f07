"""Starting a session one way (:mod:`monkey.session.setup`) and ending it one way (``Session.close``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from monkey.backends.scripted import Script, ScriptedBackend, ScriptTurn
from monkey.config import monkey_home
from monkey.permissions.requests import HeadlessApprover
from monkey.session.setup import Questions, SessionRequest, SetupError, build_agent, resolve_setup
from monkey.trust import trust
from tests.support.cli import write_script


def _request(workspace: Path, script: Path, **kw: object) -> SessionRequest:
    return SessionRequest(workspace=workspace, backend="scripted", script=str(script), **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"continue_": True, "resume": "abc"}, "contradict"),
        ({"mode": "bogus"}, "unknown mode"),
        ({"mode": "plan", "no_approval": True}, "contradicts --mode plan"),
        ({"budget_scope": "forever"}, "session or run"),
        ({"mcp_config": "/nonexistent/mcp.json"}, "no such file"),
        ({"compact_at": 1.5}, "between 0 and 1"),
    ],
)
def test_a_bad_request_is_a_setup_error(workspace: Path, tmp_path: Path, changes: dict, said: str) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "x"}])
    with pytest.raises(SetupError, match=said):
        resolve_setup(_request(workspace, script, **changes), HeadlessApprover())


def test_a_missing_workspace_is_a_setup_error(tmp_path: Path) -> None:
    with pytest.raises(SetupError, match="is not a directory"):
        resolve_setup(_request(tmp_path / "nope", tmp_path / "s.json"), None)


def test_the_trust_question_is_asked_only_when_someone_can_answer(workspace: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "x"}])
    (workspace / ".monkey").mkdir()
    (workspace / ".monkey" / "config.toml").write_text("[agent]\nmax_iterations = 3\n")
    asked: list[list[str]] = []

    def refuse(folder: Path, keys: list[str]) -> bool:
        asked.append(keys)
        return False

    def accept(folder: Path, keys: list[str]) -> bool:
        trust(folder, monkey_home())
        return True

    assert resolve_setup(_request(workspace, script), None).max_iterations == 20  # nobody asked: untrusted
    assert resolve_setup(_request(workspace, script), None, Questions(trust=refuse)).max_iterations == 20
    assert asked and any("max_iterations" in key for key in asked[0])
    assert resolve_setup(_request(workspace, script), None, Questions(trust=accept)).max_iterations == 3
    assert resolve_setup(_request(workspace, script, max_iterations=7), None).max_iterations == 7  # the request wins


class _Closing(ScriptedBackend):
    closed = 0

    async def aclose(self) -> None:
        self.closed += 1


async def test_close_ends_the_session_and_closes_the_backend_once(workspace: Path, tmp_path: Path) -> None:
    from monkey.store import SessionStore

    script = write_script(tmp_path / "s.json", [{"text": "hello"}])
    setup = build_agent(_request(workspace, script, no_approval=True), HeadlessApprover())
    backend = _Closing(Script(turns=[ScriptTurn(text="hello")]))
    assert setup.agent is not None
    setup.agent.backend = backend
    shown: list[str] = []
    session = setup.session(show=lambda event: shown.append(event.type), tell=lambda text, level: None)
    await session.open()
    await session.send("hi")
    await session.close()
    await session.close()
    assert backend.closed == 1 and session.handle is None
    assert shown[0] == "session_started" and shown[-1] == "session_ended"
    async with await SessionStore.open() as store:
        info = await store.get(setup.agent.session_id)
    assert info is not None and info.status == "completed"


async def test_a_renderer_that_cannot_show_more_stops_the_turn(workspace: Path, tmp_path: Path) -> None:
    """``show`` returning False (stdout's reader went away) cancels the turn; what was stored is kept."""
    turns = [
        {"text": "", "tool_calls": [{"name": "shell_execute", "arguments": {"command": "sleep 30"}}]},
        {"text": "done"},
    ]
    script = write_script(tmp_path / "s.json", turns)
    setup = build_agent(_request(workspace, script, no_approval=True), HeadlessApprover())
    ended: list[str] = []

    def show(event) -> bool:  # type: ignore[no-untyped-def]
        if event.type == "turn_completed":
            ended.append(event.reason)
        return event.type != "tool_started"

    session = setup.session(show=show, tell=lambda text, level: None)
    await session.open()
    await session.send("go")
    await session.close()
    assert ended == ["cancelled"]


@pytest.mark.parametrize("where", ["home", "project"])
def test_a_config_file_that_is_not_utf8_is_a_setup_error(
    workspace: Path, tmp_path: Path, monkey_home: Path, where: str
) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "x"}])
    folder = monkey_home if where == "home" else workspace / ".monkey"
    folder.mkdir(exist_ok=True)
    (folder / "config.toml").write_bytes(b'[agent]\nmodel = "caf\xe9"\n')  # Latin-1, not UTF-8
    with pytest.raises(SetupError, match=f"cannot read {folder / 'config.toml'}: 'utf-8' codec can't decode"):
        resolve_setup(_request(workspace, script), None)


def test_the_sandbox_is_probed_meanwhile_and_build_says_what_it_found(
    workspace: Path, tmp_path: Path, monkey_home: Path
) -> None:
    """resolve_setup begins the probe (the app draws meanwhile); build waits for it, applies it to the
    policy, and returns its line with the rest of what building found (an untrusted AGENTS.md here)."""
    script = write_script(tmp_path / "s.json", [{"text": "x"}])
    (monkey_home / "config.toml").write_text('[shell]\nsandbox = "off"\n')
    (workspace / "AGENTS.md").write_text("be brief\n")
    setup = resolve_setup(_request(workspace, script), HeadlessApprover())
    assert setup.probing is not None and not any("sandbox" in n for n in setup.notices)
    agent, found = setup.build()
    assert setup.probing is None and setup.sandbox is None and setup.policy.sandboxed is False
    assert agent.policy is setup.policy
    assert found[0].startswith('the sandbox is off (shell.sandbox = "off" in your config)')
    assert found[1].startswith("this folder is not trusted, so monkey did not use: AGENTS.md")
    assert setup.notices[-len(found) :] == found
    again = build_agent(_request(workspace, script), HeadlessApprover())  # both at once: the same lines, once each
    assert [n for n in again.notices if "sandbox" in n or "AGENTS.md" in n] == found


def test_the_permission_engine_is_made_on_first_use_when_the_config_gives_no_rules(
    workspace: Path, tmp_path: Path
) -> None:
    """The app draws before it imports the engine: without rules to read there is nothing to check early."""
    script = write_script(tmp_path / "s.json", [{"text": "x"}])
    setup = resolve_setup(_request(workspace, script, mode="plan"), HeadlessApprover())
    assert setup.made_policy is None and setup.mode == "plan"  # the status bar's mode, known without it
    policy = setup.policy
    assert setup.made_policy is policy and setup.policy is policy  # made once
    assert policy.mode == "plan" and policy.mode_pinned
    assert policy.guarded.names and policy.protected_roots == (monkey_home().resolve(),)
    setup.build()
    assert setup.agent is not None and setup.agent.policy is policy
    assert resolve_setup(_request(workspace, script), None).mode == "default"


def test_a_bad_rule_is_still_a_setup_error_before_anything_is_drawn(
    workspace: Path, tmp_path: Path, monkey_home: Path
) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "x"}])
    (monkey_home / "config.toml").write_text('[approvals]\nallow = ["not a rule("]\n')
    with pytest.raises(SetupError, match="not a rule"):
        resolve_setup(_request(workspace, script), HeadlessApprover())
    (monkey_home / "config.toml").write_text('[approvals]\nallow = ["shell_execute(git status)"]\n')
    setup = resolve_setup(_request(workspace, script), HeadlessApprover())
    assert setup.made_policy is not None and setup.made_policy.allow  # read with the config's rules


def test_the_app_path_imports_no_permission_engine_before_its_first_frame(workspace: Path, tmp_path: Path) -> None:
    """What ``monkey agent`` does before the app's first frame (resolve the setup, make the app) leaves
    the permission engine unimported; a fresh interpreter is the only place to see that."""
    import subprocess
    import sys

    script = write_script(tmp_path / "s.json", [{"text": "x"}])
    code = (
        "import sys\n"
        "from monkey.cli import build_parser\n"
        "from monkey.commands.agent import _approver\n"
        "from monkey.commands.flags import session_request\n"
        "from monkey.session.setup import resolve_setup\n"
        "from monkey.ui.app import MonkeyApp\n"
        f"args = build_parser().parse_args(['agent', '--backend', 'scripted', '--script', {str(script)!r},"
        f" '--cwd', {str(workspace)!r}])\n"
        "request = session_request(args)\n"
        "setup = resolve_setup(request, _approver(True, request))\n"
        "app = MonkeyApp(setup, notices=setup.notices)\n"
        "print(sorted(m for m in sys.modules if m.startswith('monkey.permissions.')))\n"
        "print(app._mode)\n"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root, timeout=120
    )
    assert out.stdout.splitlines() == ["[]", "default"], out.stderr
