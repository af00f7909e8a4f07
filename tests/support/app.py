"""The real Textual app on a scripted backend, and driving it with Pilot.

The waits (settle, until, wait_for_screen) give up after a minute: a loaded machine may take
seconds where a quiet one takes milliseconds; a passing test never waits them out.

Textual is imported when an app is built, not when this module is (collection stays quick)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from monkey.ui.app import MonkeyApp
    from monkey.ui.screens.approval import ApprovalScreen

SIZE = (120, 36)
"""The terminal size the app tests run the app at."""

SHELL_TWICE = [  # python3 is no read-only command (those never ask), so these wait for a person
    {"text": "", "tool_calls": [{"name": "shell_execute", "arguments": {"command": "python3 -c \"print('one')\""}}]},
    {"text": "", "tool_calls": [{"name": "shell_execute", "arguments": {"command": "python3 -c \"print('two')\""}}]},
    {"text": "Both ran."},
]
"""A script of two shell calls that each wait for a person's approval."""


def make_app(workspace: Path, script: Path, turns: list[dict[str, Any]], *flags: str, **kw: Any) -> MonkeyApp:
    """The real app, built the way ``monkey agent`` builds it, on a scripted backend."""
    from monkey.cli import build_parser
    from monkey.commands.flags import session_request
    from monkey.session.setup import resolve_setup
    from monkey.ui.app import MonkeyApp
    from monkey.ui.approver import TuiApprover

    script.write_text(json.dumps({"turns": turns, "agents": kw.pop("agents", {})}))
    args = build_parser().parse_args(
        ["agent", "--backend", "scripted", "--script", str(script), "--cwd", str(workspace), *flags]
    )
    setup = resolve_setup(session_request(args), TuiApprover())
    kw.setdefault("clock", lambda: 0.0)
    kw.setdefault("approval_guard", 0.0)  # the guard's own tests set it
    app_class = kw.pop("app_class", MonkeyApp)  # a subclass that does what a person does at a given moment
    return app_class(setup, notices=setup.notices, **kw)


async def settle(pilot, app: MonkeyApp, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    """Wait until no turn runs and the screen has caught up."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    await pilot.pause(0.05)
    while app.working or app.queue:
        if loop.time() > end:
            raise AssertionError("the turn did not finish")
        await pilot.pause(0.05)
    await pilot.pause(0.1)


async def until(pilot, condition, what: str, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    """Let the app run until ``condition()`` holds (a screen catching up), or fail saying ``what``."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not condition():
        if loop.time() > end:
            raise AssertionError(f"never happened: {what}")
        await pilot.pause(0.05)


async def type_and_send(pilot, app, text: str) -> None:  # type: ignore[no-untyped-def]
    """Type ``text`` into the message box and press Enter."""
    from monkey.ui.widgets.prompt_input import PromptInput

    prompt = app.query_one(PromptInput)
    prompt.focus()
    prompt.insert(text)
    await pilot.press("enter")


async def wait_for_screen(pilot, app, kind: type, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    """Let the app run until its screen is a ``kind`` (a dialog opening), or fail saying what it is."""
    for _ in range(int(timeout / 0.05)):
        if isinstance(app.screen, kind):
            return
        await pilot.pause(0.05)
    raise AssertionError(f"{kind.__name__} never showed; the screen is {type(app.screen).__name__}")


def notices(app) -> list[str]:  # type: ignore[no-untyped-def]
    """The notices of the transcript, each as it is rendered."""
    return [str(w.render()) for w in app.transcript.query(".notice")]


def notice_text(app) -> str:  # type: ignore[no-untyped-def]
    """The notices of the transcript as one text, a line each."""
    return "\n".join(notices(app))


async def approval_turn(app: MonkeyApp, keys: tuple[str, ...], prompt: str) -> ApprovalScreen:
    """Send ``prompt``, press ``keys`` on the approval dialog it brings up, and wait until the turn
    is over (an external agent's turn: up to 90 s each); the dialog."""
    from monkey.ui.screens.approval import ApprovalScreen

    async with app.run_test(size=(120, 40)) as pilot:
        await type_and_send(pilot, app, prompt)
        await until(pilot, lambda: isinstance(app.screen, ApprovalScreen), "the approval dialog", 90.0)
        screen = app.screen
        assert isinstance(screen, ApprovalScreen)
        await pilot.press(*keys)
        await until(pilot, lambda: not app.working and not app.queue, "the turn's end", 90.0)
        await pilot.pause(0.1)
    return screen
