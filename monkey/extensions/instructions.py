"""Project instructions: the ``AGENTS.md`` files (or ``CLAUDE.md``, ``GEMINI.md``) the model follows.

:func:`load_instructions` reads, outermost first, one file per folder (the first of
``names`` that exists there): the user's own in the monkey home, then each folder from the
repository root down to the workspace. A project's files count only in a trusted folder
(:mod:`monkey.trust`): a repository is someone else's text, and these files speak to the
model with the person's authority.

A line may import another file with ``@path`` (relative to the file, or ``~/`` for the
person's home): it must resolve inside the repository or the monkey home, imports nest
at most :data:`MAX_DEPTH` deep, a file already read is not read again (a cycle says so),
and ``@`` inside code fences or inline code is text. The whole is capped at ``max_bytes``;
what did not fit is named in a notice.

A folder below the workspace may have its own file: :meth:`Instructions.below` gives it
the first time the agent touches a path under that folder.

The project's memory, ``.monkey/memory.md`` in the workspace (a trusted folder's only), comes
last: notes that persist across sessions, which the person keeps with ``/memory add`` and
``/memory remove`` (:meth:`Instructions.remember`, :meth:`Instructions.forget`).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "DEFAULT_NAMES",
    "DEFAULT_MAX_BYTES",
    "MAX_DEPTH",
    "MEMORY_FILE",
    "InstructionFile",
    "Instructions",
    "load_instructions",
    "repository_root",
    "changes_since",
]

DEFAULT_NAMES = ("AGENTS.md", "CLAUDE.md", "GEMINI.md")
"""The file names looked for in each folder, in order of preference."""
DEFAULT_MAX_BYTES = 32 * 1024
MEMORY_FILE = Path(".monkey") / "memory.md"
"""The project's memory, relative to the workspace."""
MAX_DEPTH = 5
"""How deep ``@path`` imports nest."""

_IMPORT = re.compile(r"(?:^|(?<=\s))@((?:~/|\.{0,2}/)?[\w.\-/]+)")
_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_SPAN = re.compile(r"`[^`]*`")


@dataclass
class InstructionFile:
    """One file read into the instructions."""

    path: Path
    shown: str
    """How it is named to people and the model (relative to the repository, or ``~monkey/...``)."""
    sha256: str
    size: int
    imported_by: str = ""


@dataclass
class Instructions:
    """What the model is told to follow, and where it came from."""

    files: list[InstructionFile] = field(default_factory=list)
    sections: list[tuple[str, str]] = field(default_factory=list)
    """``(shown name, text)`` in the order they are given to the model."""
    notices: list[str] = field(default_factory=list)
    not_read: list[str] = field(default_factory=list)
    """The project's instruction files left unread because the folder is not trusted (relative to
    the repository root); the session says so with everything else an untrusted folder leaves out."""
    root: Path | None = None
    home: Path | None = None
    names: tuple[str, ...] = DEFAULT_NAMES
    max_bytes: int = DEFAULT_MAX_BYTES
    trusted: bool = False
    seen_folders: set[Path] = field(default_factory=set)
    memory_path: Path | None = None
    """The project's memory file (None: not in a trusted folder, so none is read or written)."""
    _seen: set[Path] = field(default_factory=set)
    _used: int = 0

    def prompt(self) -> str:
        """The system prompt's section for these instructions (empty when there are none)."""
        if not self.sections:
            return ""
        parts = [
            "# Instructions from the user and the project",
            "Follow these instructions; a file nearer the workspace wins over one farther out.",
        ]
        parts += [f"## {shown}\n\n{text.strip()}" for shown, text in self.sections]
        return "\n\n".join(parts)

    # -- the project's memory -------------------------------------------------------------

    def memory_entries(self) -> list[str]:
        """The project memory's lines that say something, in order."""
        if self.memory_path is None:
            return []
        try:
            text = self.memory_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return []
        return [line for line in text.splitlines() if line.strip() and not line.startswith("#")]

    def remember(self, note: str) -> str:
        """Add ``note`` as a line of the project's memory; the line that says so."""
        if self.memory_path is None:
            raise OSError("this folder is not trusted, so it has no project memory")
        note = " ".join(note.split())
        entries = [*self.memory_entries(), f"- {note}"]
        self._write_memory(entries)
        return f"remembered in {self._memory_shown()}: {note}"

    def forget(self, number: int) -> str:
        """Remove the ``number``-th line (from 1) of the project's memory."""
        entries = self.memory_entries()
        if not 1 <= number <= len(entries):
            raise IndexError(f"no line {number}: the project memory has {len(entries)}")
        gone = entries.pop(number - 1)
        self._write_memory(entries)
        return f"forgot: {gone.removeprefix('- ')}"

    def _memory_shown(self) -> str:
        return self._shown(self.memory_path) if self.memory_path is not None else str(MEMORY_FILE)

    def _write_memory(self, entries: list[str]) -> None:
        assert self.memory_path is not None
        import os
        import tempfile

        self.memory_path.parent.mkdir(parents=True, exist_ok=True)
        text = "# Project memory: notes monkey keeps across sessions (/memory add, /memory remove)\n\n"
        text += "".join(f"{e}\n" for e in entries)
        fd, tmp = tempfile.mkstemp(dir=self.memory_path.parent, prefix=".memory.")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, self.memory_path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self._read_memory()

    def _read_memory(self) -> None:
        """(Re)read the memory file as the last section."""
        if self.memory_path is None:
            return
        real = self.memory_path.resolve()
        for i in range(len(self.files) - 1, -1, -1):
            if self.files[i].path == real:
                self._used -= min(self.files[i].size, self._used)
                del self.files[i], self.sections[i]
        self._seen.discard(real)
        if self.memory_path.is_file() and self.memory_entries():  # an emptied memory is not sent
            self._read(self.memory_path, depth=0, by="")
            if self.files and self.files[-1].path == real:
                self.sections[-1] = (f"Project memory ({self.files[-1].shown})", self.sections[-1][1])

    def below(self, workspace: Path, rel: str) -> list[tuple[InstructionFile, str]]:
        """Instruction files of the folders between the workspace and ``rel`` not read yet (the
        first time the agent touches a path there), outermost first; each becomes part of the
        instructions."""
        if not self.trusted or self.root is None:
            return []
        found: list[tuple[InstructionFile, str]] = []
        target = (workspace / rel).resolve()
        folder = target if target.is_dir() else target.parent
        base = workspace.resolve()
        if folder == base or base not in folder.parents:
            return []
        chain = [*[p for p in reversed(folder.parents) if base in p.parents], folder]
        for here in chain:
            if here in self.seen_folders:
                continue
            self.seen_folders.add(here)
            before = len(self.files)
            self._folder(here)
            found += [(info, text) for info, (_, text) in zip(self.files[before:], self.sections[before:], strict=True)]
        return found

    # -- reading ------------------------------------------------------------------------

    def _folder(self, folder: Path) -> None:
        for name in self.names:
            path = folder / name
            if path.is_file():
                self._read(path, depth=0, by="")
                return

    def _shown(self, path: Path) -> str:
        if self.root is not None and (path == self.root or self.root in path.parents):
            return str(path.relative_to(self.root))
        if self.home is not None and self.home in path.parents:
            return f"~monkey/{path.relative_to(self.home)}"
        return str(path)

    def _allowed(self, path: Path) -> bool:
        return any(
            base is not None and base in path.parents for base in ((self.root if self.trusted else None), self.home)
        )

    def _read(self, path: Path, *, depth: int, by: str) -> None:
        real = path.resolve()
        shown = self._shown(real)
        if real in self._seen:
            if by:
                self.notices.append(f"{shown}: imported again by {by} (a cycle or a repeat), read once")
            return
        self._seen.add(real)
        try:
            data = real.read_bytes()
        except OSError as exc:
            self.notices.append(f"{shown}: not read ({exc.strerror or exc})")
            return
        text = data.decode("utf-8", "replace")
        room = self.max_bytes - self._used
        if room <= 0:
            self.notices.append(f"{shown}: left out, the instructions are over {self.max_bytes // 1024} KiB")
            return
        if len(data) > room:
            text = data[:room].decode("utf-8", "ignore")
            self.notices.append(
                f"{shown}: cut at {self.max_bytes // 1024} KiB of instructions ({len(data) - room} bytes left out)"
            )
        self._used += min(len(data), room)
        self.files.append(InstructionFile(real, shown, hashlib.sha256(data).hexdigest(), len(data), by))
        self.sections.append((shown if not by else f"{shown} (imported by {by})", text))
        if depth >= MAX_DEPTH:
            if _imports(text):
                self.notices.append(f"{shown}: imports deeper than {MAX_DEPTH} levels are not read")
            return
        for ref in _imports(text):
            target = Path.home() / ref[2:] if ref.startswith("~/") else real.parent / ref
            if not target.exists():
                continue  # a mention, not an import
            resolved = target.resolve()
            if not self._allowed(resolved):
                self.notices.append(f"{shown}: @{ref} is outside the repository and the monkey home, not read")
                continue
            if resolved.is_file():
                self._read(resolved, depth=depth + 1, by=shown)


def _imports(text: str) -> list[str]:
    """The ``@path`` references of ``text`` outside code fences and inline code."""
    refs: list[str] = []
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        refs += [m.group(1).rstrip(".,;:)") for m in _IMPORT.finditer(_CODE_SPAN.sub(" ", line))]
    return refs


def repository_root(workspace: Path) -> Path:
    """The nearest folder at or above ``workspace`` holding ``.git`` (the workspace if none)."""
    here = workspace.resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return here


def load_instructions(
    workspace: Path,
    *,
    home: Path,
    trusted: bool,
    names: tuple[str, ...] = DEFAULT_NAMES,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Instructions:
    """The instructions for a session in ``workspace``: the user's own file in ``home``, then
    (in a trusted folder) one file per folder from the repository root down to the workspace."""
    base = workspace.resolve()
    root = repository_root(base)
    found = Instructions(
        root=root, home=home.resolve() if home.exists() else home, names=names, max_bytes=max_bytes, trusted=trusted
    )
    found._folder(found.home or home)
    folders = [root, *[p for p in reversed(base.parents) if root in p.parents]]
    if base != root:
        folders.append(base)
    if not trusted:
        found.not_read = list(
            dict.fromkeys(str((f / n).relative_to(root)) for f in folders for n in names if (f / n).is_file())
        )
        return found
    for folder in folders:
        found.seen_folders.add(folder)
        found._folder(folder)
    found.memory_path = base / MEMORY_FILE
    found._read_memory()
    return found


def changes_since(before: dict[str, str], now: list[InstructionFile]) -> list[str]:
    """What changed in the instruction files since a session last ran (``before``: shown path
    to hash, from its last ``session_started``), one line each, for a resumed session."""
    current = {f.shown: f.sha256 for f in now}
    lines = [
        f"{path} changed since this session last ran"
        for path, sha in current.items()
        if path in before and before[path] != sha
    ]
    lines += [f"{path} is new since this session last ran" for path in current if path not in before]
    lines += [f"{path} is no longer read (it was when this session last ran)" for path in before if path not in current]
    return lines
