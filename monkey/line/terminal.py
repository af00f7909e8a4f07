"""The person's terminal, for questions asked in line mode (inline approvals, trust, MCP servers).

Questions never go to standard output: with ``monkey agent --task ... > out.txt`` the
answer belongs in the file and the question on the screen. :meth:`Terminal.open` finds
the terminal itself (``/dev/tty``), or standard error when that is one; when the person
cannot type (standard input is not a terminal) there is nobody to ask and it returns None.
:func:`terminal_questions` gives the session layer the questions asked before a session starts.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import IO, TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from monkey.mcp_client.config import ServerConfig
    from monkey.session.setup import Questions

__all__ = ["Terminal", "clipboard_sequence", "terminal_questions", "ask_to_trust", "ask_server"]


class Terminal:
    """Where a question is asked and answered: an input and an output on the same terminal."""

    def __init__(self, input: TextIO, output: TextIO, *, owned: bool = False) -> None:
        self.input = input
        """What the answer is read from (a terminal)."""
        self.output = output
        """Where the question is written (a terminal, never a redirected stdout)."""
        self._owned = owned
        self.color = "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"
        """Whether the question uses colours."""

    @classmethod
    def open(cls) -> Terminal | None:
        """The controlling terminal, or stdin with stderr; None when nobody can answer."""
        if not _isatty(sys.stdin):
            return None
        try:
            fd = os.open("/dev/tty", os.O_RDWR | getattr(os, "O_NOCTTY", 0))
        except OSError:
            fd = -1
        if fd >= 0:
            output = open(fd, "w", encoding="utf-8", errors="replace")  # noqa: SIM115 - closed by close()
            input = open(fd, encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
            return cls(input, output, owned=True)
        if _isatty(sys.stderr):
            return cls(sys.stdin, sys.stderr)
        return None

    def style(self, text: str, code: str) -> str:
        """``text`` in SGR colour ``code`` when colours are on."""
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text

    def write(self, text: str) -> None:
        """Write and flush."""
        self.output.write(text)
        self.output.flush()

    def discard_typed_ahead(self) -> None:
        """Drop keys typed before the question was shown: they were not meant as its answer."""
        try:
            import termios

            termios.tcflush(self.input.fileno(), termios.TCIFLUSH)
        except (ImportError, OSError, ValueError):
            pass

    def close(self) -> None:
        """Close ``/dev/tty`` if this opened it."""
        if self._owned:
            self._owned = False
            self.output.close()


def _isatty(stream: IO[str] | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (ValueError, OSError):
        return False


def clipboard_sequence(text: str) -> str:
    """The OSC 52 sequence that asks the terminal to put ``text`` on the clipboard.

    Most terminals honour it (also over ssh and in tmux with ``set-clipboard on``); the few
    that do not ignore it.
    """
    import base64

    return f"\x1b]52;c;{base64.b64encode(text.encode('utf-8')).decode('ascii')}\a"


def terminal_questions() -> Questions:
    """The questions asked before a session starts, on the terminal; none when nobody can answer."""
    from monkey.session.setup import Questions

    probe = Terminal.open()
    if probe is None:  # headless: the folder stays untrusted, unapproved project servers do not start
        return Questions()
    probe.close()
    return Questions(trust=ask_to_trust, mcp_server=ask_server)


def ask_to_trust(workspace: Path, keys: list[str]) -> bool:
    """Ask on the terminal whether to trust ``workspace``'s ``.monkey/`` (never without one); True if trusted now."""
    from monkey.config import monkey_home
    from monkey.safe_text import escape_controls
    from monkey.trust import trust, trust_root

    terminal = Terminal.open()
    if terminal is None:  # headless: nobody to ask, the folder stays untrusted
        return False
    try:
        terminal.discard_typed_ahead()
        shown = escape_controls(str(workspace), keep_newlines=False)
        root = trust_root(workspace)
        whose = (
            ""
            if root == workspace.resolve()
            else f" (a git worktree: its repository {escape_controls(str(root), keep_newlines=False)})"
        )
        terminal.write(
            f"monkey: {shown}/.monkey/config.toml sets {escape_controls(', '.join(keys), keep_newlines=False)}.\n"
            "Trusted, a folder's .monkey/ may choose the backend, the model, limits and approvals.\n"
            f"Trust {shown}{whose}? [y/N] "
        )
        answer = terminal.input.readline().strip().lower()
        if answer not in ("y", "yes"):
            terminal.write("monkey: not trusted; its deny rules and [ui] apply, the rest is ignored\n")
            return False
        try:
            trust(workspace, monkey_home())
        except OSError as exc:
            terminal.write(f"monkey: cannot remember the trust: {exc.strerror or exc}\n")
            return False
        return True
    finally:
        terminal.close()


def ask_server(server: ServerConfig) -> bool:
    """Ask on the terminal whether a project-defined MCP server may start (False: nobody to ask)."""
    from monkey.safe_text import escape_controls

    terminal = Terminal.open()
    if terminal is None:
        return False
    try:
        terminal.discard_typed_ahead()
        terminal.write(
            f"monkey: {escape_controls(server.source, keep_newlines=False)} defines the MCP server "
            f"{escape_controls(server.name, keep_newlines=False)}:\n"
            f"  {escape_controls(server.describe(), keep_newlines=False)}\n"
            "It runs as you, outside the sandbox. Start it (asked again if its definition changes)? [y/N] "
        )
        return terminal.input.readline().strip().lower() in ("y", "yes")
    finally:
        terminal.close()
