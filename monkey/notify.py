"""Notifications off the terminal: when an approval waits or a long turn ends.

Three ways, each chosen in ``[notify]``:

- the terminal's own notification (OSC 9, which iTerm2, WezTerm, Ghostty, kitty and Windows
  Terminal show; OSC 777, which foot and urxvt show), on by default where the terminal is known
  to show one (``terminal = "auto"``), written through the front end's terminal;
- ``notify-send`` (a desktop notification), by default only where no terminal notification is
  known and a display is there (``desktop = "auto"``);
- a webhook (``url``: an ntfy topic, or any endpoint taking JSON), off unless set in your own
  config (a project cannot choose where your notifications go).

What is sent is the question in one line (the tool and its command line or path; never a file's
content or a diff) with anything that looks like a secret replaced (``[redacted]``), the session and the
workspace's folder name. A notification never blocks or breaks a session: the desktop and
webhook ones go out on a thread, time out after a few seconds, and failures are logged.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal
from urllib.parse import quote

from monkey.safe_text import escape_controls

log = logging.getLogger(__name__).warning

__all__ = ["Notice", "Notifier", "question_line", "terminal_kind", "terminal_sequence"]

WEBHOOK_TIMEOUT = 5.0
MAX_BODY = 300
"""Characters of a notification's body (the question's line is cut there)."""

_OSC9 = ("iTerm.app", "WezTerm", "ghostty", "vscode")


@dataclass(frozen=True)
class Notice:
    """One notification: what happened, in a title and one line."""

    kind: Literal["approval", "turn_done"]
    title: str
    body: str
    session: str = ""
    workspace: str = ""
    """The workspace folder's name (never its path)."""
    link: str = ""
    """Where to answer it (the web monitor's page), when there is one."""


def terminal_kind(env: Mapping[str, str]) -> str:
    """The notification sequence this terminal shows (``osc9``, ``osc777``), or ``""`` when unknown.

    Inside tmux or screen the sequence would reach the multiplexer, not the terminal: none."""
    if env.get("TMUX") or env.get("STY"):
        return ""
    term = env.get("TERM", "")
    if (
        env.get("TERM_PROGRAM", "") in _OSC9
        or env.get("KITTY_WINDOW_ID")
        or env.get("WT_SESSION")
        or (env.get("WEZTERM_PANE") or term == "xterm-kitty" or term == "xterm-ghostty")
    ):
        return "osc9"
    if term.startswith(("foot", "rxvt-unicode")):
        return "osc777"
    return ""


def _clean(text: str) -> str:
    """One printable line: controls escaped (they would end or forge a sequence), ``;`` kept."""
    return "".join(ch for ch in escape_controls(text, keep_newlines=False) if ch.isprintable())


def _header(text: str) -> str:
    """A header value: ASCII as it is, otherwise RFC 2047's encoded word (ntfy decodes it)."""
    import base64

    text = _clean(text)
    if text.isascii():
        return text
    return f"=?UTF-8?B?{base64.b64encode(text.encode('utf-8')).decode('ascii')}?="


def terminal_sequence(kind: str, notice: Notice) -> str:
    """The escape sequence showing ``notice`` on a terminal of ``kind`` (``""`` for none)."""
    if kind == "osc9":
        return f"\x1b]9;{_clean(f'{notice.title}: {notice.body}')}\a"
    if kind == "osc777":
        return f"\x1b]777;notify;{_clean(notice.title).replace(';', ',')};{_clean(notice.body)}\a"
    return ""


def question_line(tool: str, arguments: Mapping[str, Any]) -> str:
    """The question in one line: the tool and what it names (a command line, a path, a URL), never
    a file's content; anything that looks like a credential is replaced."""
    from monkey.process import redact, secret_values

    named = next((str(arguments[k]) for k in ("command", "path", "url", "agent") if arguments.get(k)), "")
    line = _clean(redact(f"{tool}: {named}" if named else tool, secret_values()))
    return line if len(line) <= MAX_BODY else line[: MAX_BODY - 1] + "…"


class Notifier:
    """Sends :class:`Notice` s the ways ``[notify]`` says; ``write`` is the terminal (None: no terminal)."""

    def __init__(
        self,
        config: Any,
        *,
        write: Callable[[str], None] | None = None,
        env: Mapping[str, str] | None = None,
        monitor: str = "",
    ) -> None:
        env = os.environ if env is None else env
        self.config = config
        self.monitor = monitor.rstrip("/")
        """The web monitor serving this process's sessions (``--web``: ``http://127.0.0.1:PORT``; "": none):
        a notice links to its session's page there (no token: the person's browser holds the cookie)."""
        self.write = write
        wanted = config.terminal
        self.terminal = "" if write is None or wanted == "off" else (terminal_kind(env) if wanted == "auto" else wanted)
        display = bool(env.get("DISPLAY") or env.get("WAYLAND_DISPLAY"))
        program = shutil.which("notify-send", path=env.get("PATH")) if config.desktop != "off" else None
        self.desktop = program if program and (config.desktop == "on" or (not self.terminal and display)) else None
        self.threads: list[threading.Thread] = []
        """The deliveries started (desktop, webhook), kept so a test or a closing front end can wait."""

    @property
    def active(self) -> bool:
        return bool(self.terminal or self.desktop or self.config.url)

    def send(self, notice: Notice) -> None:
        """Show ``notice`` every way configured; never raises, never waits on the network."""
        if notice.kind not in self.config.on:
            return
        if self.monitor and not notice.link:
            page = f"/session?id={quote(notice.session, safe='')}" if notice.session else "/"
            notice = replace(notice, link=self.monitor + page)
        if self.terminal and self.write is not None:
            try:
                self.write(terminal_sequence(self.terminal, notice))
            except OSError as exc:
                log(f"notify: the terminal notification failed: {exc}")
        if self.desktop:
            self._start(self._desktop, notice)
        if self.config.url:
            self._start(self._webhook, notice)

    def _start(self, target: Callable[[Notice], None], notice: Notice) -> None:
        thread = threading.Thread(target=target, args=(notice,), name="monkey-notify", daemon=True)
        self.threads = [t for t in self.threads if t.is_alive()] + [thread]
        thread.start()

    def _desktop(self, notice: Notice) -> None:
        from monkey.process import scrub_env

        assert self.desktop is not None
        try:
            subprocess.run(
                [self.desktop, "--app-name=monkey", _clean(notice.title), _clean(notice.body)],
                env=scrub_env(os.environ),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                timeout=WEBHOOK_TIMEOUT,
                check=True,
                start_new_session=True,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            log(f"notify: notify-send failed: {exc}")

    def _webhook(self, notice: Notice) -> None:
        import httpx2

        headers = {str(k): str(v) for k, v in self.config.headers.items()}
        if self.config.format == "ntfy":
            headers |= {
                "Title": _header(notice.title),
                "Tags": "monkey",
                **({"Click": notice.link} if notice.link else {}),
            }
            request: dict[str, Any] = {"content": notice.body.encode("utf-8")}
        else:
            request = {
                "json": {
                    "kind": notice.kind,
                    "title": notice.title,
                    "body": notice.body,
                    "session": notice.session,
                    "workspace": notice.workspace,
                    "link": notice.link,
                }
            }
        try:
            with httpx2.Client(timeout=WEBHOOK_TIMEOUT, trust_env=False, follow_redirects=False) as client:
                response = client.post(self.config.url, headers=headers, **request)
            if response.status_code >= 400:
                log(f"notify: the webhook answered HTTP {response.status_code}")
        except (httpx2.HTTPError, OSError, ValueError) as exc:
            log(f"notify: the webhook failed: {type(exc).__name__}: {exc}")

    def wait(self, timeout: float = WEBHOOK_TIMEOUT) -> None:
        """Wait for the deliveries under way (a front end closing, a test)."""
        for thread in self.threads:
            thread.join(timeout)
