"""The app calls the person back: a bell and the terminal's title when an approval waits or a long turn ends."""

from __future__ import annotations

from pathlib import Path

from monkey.config import UIConfig
from monkey.ui.attention import POP_TITLE, PUSH_TITLE, title_sequence
from monkey.ui.screens.approval import ApprovalScreen
from tests.support.app import SIZE, settle, type_and_send, wait_for_screen

EDIT = [
    {
        "text": "",
        "tool_calls": [
            {"name": "file_edit", "arguments": {"path": "README.md", "old_string": "# proj", "new_string": "# project"}}
        ],
    },
    {"text": "Renamed."},
]


def titles(sent: list[str]) -> list[str]:
    return [s[len("\x1b]2;") : -1] for s in sent if s.startswith("\x1b]2;")]


async def test_an_approval_rings_and_says_so_in_the_title_until_answered(app_for, workspace: Path) -> None:
    sent: list[str] = []
    app = app_for(EDIT, ui=UIConfig(long_turn=3600), terminal_write=sent.append)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "rename the project")
        await wait_for_screen(pilot, app, ApprovalScreen)
        assert sent[0] == PUSH_TITLE  # the terminal's own title is kept, to be given back
        assert titles(sent)[-1] == "monkey · approval needed · proj" and sent.count("\a") == 1
        await pilot.press("y")
        await settle(pilot, app)
        assert titles(sent) == [
            "monkey · working · proj",
            "monkey · approval needed · proj",
            "monkey · working · proj",
            "monkey · proj",
        ]
        assert sent.count("\a") == 1  # a short turn ends quietly
        await app.action_quit()
    assert sent[-1] == POP_TITLE


async def test_a_long_turn_rings_when_it_ends_and_the_title_clears_when_the_person_types(app_for) -> None:
    sent: list[str] = []
    app = app_for([{"text": "Finished."}], ui=UIConfig(long_turn=0), terminal_write=sent.append)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "work for a long time")
        await settle(pilot, app)
        assert sent.count("\a") == 1 and titles(sent)[-1] == "monkey · done · proj"
        await pilot.press("x")
        await pilot.pause(0.1)
        assert titles(sent)[-1] == "monkey · proj"


async def test_ui_settings_turn_both_off(app_for, monkey_home: Path) -> None:
    (monkey_home / "config.toml").write_text("[ui]\nbell = false\ntitle = false\n")
    sent: list[str] = []
    app = app_for(EDIT, terminal_write=sent.append)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "rename the project")
        await wait_for_screen(pilot, app, ApprovalScreen)
        await pilot.press("y")
        await settle(pilot, app)
        await app.action_quit()
    assert sent == []


def test_a_hostile_folder_name_cannot_end_the_title_sequence() -> None:
    sequence = title_sequence("monkey · proj\x07\x1b]52;c;ZXZpbA==\x07")
    assert sequence.count("\x07") == 1 and sequence.count("\x1b") == 1 and sequence.endswith("\x07")


async def test_an_approval_and_a_long_turn_notify_the_terminal_and_a_webhook(app_for, monkey_home: Path) -> None:
    """OSC 9 on the terminal and an ntfy-style POST to a real server on 127.0.0.1: the question in one
    line (the tool and its path, never the content), the session, and nothing of a secret."""
    import http.server
    import threading

    got: list[tuple[dict[str, str], bytes]] = []

    class Hook(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            got.append(
                ({k.lower(): v for k, v in self.headers.items()}, self.rfile.read(int(self.headers["Content-Length"])))
            )
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        (monkey_home / "config.toml").write_text(
            f'[ui]\nlong_turn = 0\n[notify]\nterminal = "osc9"\nurl = "http://127.0.0.1:{server.server_address[1]}/t"\n'
            '[notify.headers]\nAuthorization = "Bearer tk"\n'
        )
        sent: list[str] = []
        app = app_for(EDIT, terminal_write=sent.append)
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, app, "rename the project")
            await wait_for_screen(pilot, app, ApprovalScreen)
            await pilot.press("y")
            await settle(pilot, app)
            app.attention.notifier.wait()
            await app.action_quit()
    finally:
        server.shutdown()
        server.server_close()
    osc = [s for s in sent if s.startswith("\x1b]9;")]
    assert osc[0] == "\x1b]9;monkey · approval needed · proj: file_edit: README.md\a"
    assert osc[1].startswith("\x1b]9;monkey · done · proj: the turn took ")
    from email.header import decode_header, make_header

    title = [str(make_header(decode_header(h["title"]))) for h, _ in got]  # RFC 2047, as ntfy reads it
    assert (title[0], got[0][1].decode()) == ("monkey · approval needed · proj", "file_edit: README.md")
    assert title[1] == "monkey · done · proj" and all(h["authorization"] == "Bearer tk" for h, _ in got)
