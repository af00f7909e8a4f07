"""The message box: multi-line, Enter sends, history, completion of /commands and @paths."""

from __future__ import annotations

from pathlib import Path

from textual import events
from textual.binding import Binding
from textual.message import Message
from textual.widgets import TextArea

HISTORY_LIMIT = 1000
"""Entries kept in the history file."""


def is_secret(text: str) -> bool:
    """Whether a line holds a secret (``/login KEY``), so it is kept in no history."""
    return text.split(maxsplit=1)[0] == "/login" and len(text.split()) > 1


def mention_at(line: str) -> str | None:
    """The ``@path`` being typed at the end of ``line`` (what follows the ``@``), or None."""
    word = line.rpartition(" ")[2].rpartition("\t")[2]
    return word[1:] if word.startswith("@") else None


def complete(text: str) -> list[str]:
    """The slash commands that ``text`` (a ``/`` prefix with no space) could become."""
    if not text.startswith("/") or " " in text or "\n" in text:
        return []
    from monkey.session.commands import COMMANDS  # imported at the first "/", not before the first frame

    return [c for c in COMMANDS if c.startswith(text)]


def pasted_image(text: str, workspace: Path | None) -> str | None:
    """The ``@path`` mention a pasted image path becomes (a terminal pastes a file dropped on it as its
    path, perhaps quoted or with escaped spaces), or None when ``text`` is not the path of an image file."""
    from monkey.images import IMAGE_SUFFIXES

    raw = text.strip()
    if not raw or "\n" in raw or len(raw) > 4096:
        return None
    if raw[0] == raw[-1] and raw[0] in "'\"" and len(raw) > 1:
        raw = raw[1:-1]
    raw = raw.replace("\\ ", " ").removeprefix("file://")
    path = Path(raw).expanduser()
    if path.suffix.lower() not in IMAGE_SUFFIXES or " " in raw:
        return None  # a mention ends at a space: such a path is pasted as text
    try:
        if not path.is_file():
            return None
        if workspace is not None and path.is_absolute():
            return "@" + path.resolve().relative_to(workspace.resolve()).as_posix()
    except ValueError:  # outside the workspace: by its full path
        return "@" + str(path.resolve())
    except OSError:
        return None
    return "@" + str(path)


class PromptInput(TextArea):
    """Where the person types. Posts :class:`Submitted`; Enter sends, Shift+Enter/Ctrl+J breaks the line."""

    DEFAULT_CSS = """
    PromptInput { height: auto; min-height: 3; max-height: 10; border: round $primary; }
    PromptInput:focus { border: round $accent; }
    """

    BINDINGS = [
        Binding("ctrl+j,shift+enter", "newline", "New line", show=False),
        Binding("tab", "complete", "Complete", show=False),
    ]

    class Submitted(Message):
        """The person sent ``text``."""

        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text
            """What was typed, stripped."""

    class Hints(Message):
        """Matching slash commands changed (empty: none)."""

        def __init__(self, matches: list[str]) -> None:
            super().__init__()
            self.matches = matches
            """The commands the text could become."""

    class Quit(Message):
        """Ctrl-D on an empty box."""

    def __init__(self, history_path: Path | None = None, workspace: Path | None = None, **kwargs: object) -> None:
        super().__init__(
            soft_wrap=True,
            show_line_numbers=False,
            tab_behavior="focus",
            placeholder="Type a task · /command · @file · !shell · Ctrl+E events",
            **kwargs,  # type: ignore[arg-type]
        )
        self.workspace = workspace
        """Where ``@path`` completion looks (None: no path completion)."""
        self.history_path = history_path
        """Where the history is kept (per workspace), or None for none."""
        self.sent: list[str] = self._load()
        """Sent messages, oldest first."""
        self._index: int | None = None
        self._draft = ""

    def _load(self) -> list[str]:
        if self.history_path is None:
            return []
        try:
            raw = self.history_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return []
        # one entry per line, newlines inside an entry escaped as \n (and backslashes as \\)
        return [line.replace("\\n", "\n").replace("\\\\", "\\") for line in raw.splitlines() if line][-HISTORY_LIMIT:]

    def _save(self, text: str) -> None:
        if self.history_path is None:
            return
        try:
            self.history_path.parent.mkdir(parents=True, exist_ok=True)
            with self.history_path.open("a", encoding="utf-8") as f:
                f.write(text.replace("\\", "\\\\").replace("\n", "\\n") + "\n")
        except OSError:
            pass

    async def _on_key(self, event: events.Key) -> None:
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            self.send()
            return
        if event.key == "ctrl+d" and not self.text:
            event.stop()
            event.prevent_default()
            self.post_message(self.Quit())
            return
        if event.key == "up" and self.cursor_location[0] == 0 and self.sent:
            event.stop()
            event.prevent_default()
            self._browse(-1)
            return
        if event.key == "down" and self._index is not None and self.cursor_location[0] == self.document.line_count - 1:
            event.stop()
            event.prevent_default()
            self._browse(1)
            return
        await super()._on_key(event)

    def _browse(self, step: int) -> None:
        if self._index is None:
            self._draft = self.text
            self._index = len(self.sent)
        self._index = max(0, min(len(self.sent), self._index + step))
        self.load_text(self.sent[self._index] if self._index < len(self.sent) else self._draft)
        self.move_cursor(self.document.end)
        if self._index == len(self.sent):
            self._index = None

    def send(self) -> None:
        """Send the text (if any) and remember it."""
        text = self.text.strip()
        if not text:  # the app may have messages queued for the person to send
            self.post_message(self.Submitted(""))
            return
        if (not self.sent or self.sent[-1] != text) and not is_secret(text):
            self.sent.append(text)
            self._save(text)
        self._index = None
        self.clear()
        self.post_message(self.Submitted(text))

    def action_newline(self) -> None:
        """Insert a line break."""
        self.insert("\n")

    def _mention(self) -> tuple[int, int, str] | None:
        """Row, column of the ``@`` and the path typed after it, when the cursor ends an ``@path``."""
        if self.workspace is None:
            return None
        row, col = self.cursor_location
        before = self.document.get_line(row)[:col]
        prefix = mention_at(before)
        return None if prefix is None else (row, col - len(prefix) - 1, prefix)

    def _paths(self) -> list[str]:
        """The ``@path`` completions for the mention at the cursor (none when there is no mention)."""
        from monkey.session.mentions import mention_completions

        found = self._mention()
        if found is None or self.workspace is None:
            return []
        return ["@" + p for p in mention_completions(self.workspace, found[2])]

    def action_complete(self) -> None:
        """Complete a slash command or an ``@path`` to the longest common prefix of its matches;
        anywhere else, move the focus on (to the transcript, to scroll it with the keys)."""
        import os

        found = self._mention()
        if found is not None:
            paths = self._paths()
            if not paths:
                return
            row, start, _ = found
            new = paths[0] + ("" if paths[0].endswith("/") else " ") if len(paths) == 1 else os.path.commonprefix(paths)
            self.replace(new, (row, start), self.cursor_location)
            self.move_cursor((row, start + len(new)))
            return
        if not self.text.startswith("/"):
            self.screen.focus_next()  # nothing to complete: Tab moves on, as elsewhere (Shift+Tab is the mode)
            return
        matches = complete(self.text)
        if not matches:
            return
        new = matches[0] + " " if len(matches) == 1 else os.path.commonprefix(matches)
        self.load_text(new)
        self.move_cursor(self.document.end)

    async def _on_paste(self, event: events.Paste) -> None:
        """A pasted image path becomes its ``@`` mention (sent as the image); other text is pasted as is."""
        mention = pasted_image(event.text, self.workspace)
        if mention is None or self.read_only:
            return  # TextArea's own handler pastes it (Textual calls each class's in turn)
        event.prevent_default()
        before = self.document.get_text_range((self.cursor_location[0], 0), self.cursor_location)
        self.insert(("" if not before or before.endswith(" ") else " ") + mention + " ")

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        event.stop()
        self.post_message(self.Hints(complete(self.text) or self._paths()[:12]))
