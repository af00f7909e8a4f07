"""The protected set: what no mode, rule or grant may change without a person.

One rule: **what monkey reads as configuration or runs as code is written only after a person
approved that exact call** (every mode, ``auto`` too; no grant or rule covers it). That is:

- ``.git/``, ``.monkey/``, ``.claude/`` and ``.agents/`` folders and ``.mcp.json`` anywhere in the
  workspace (settings, skills, agent definitions, plugin manifests, project MCP servers), and the
  instruction files (``AGENTS.md``, ``CLAUDE.md``, ``GEMINI.md`` and the ``[instructions] files``
  names) anywhere in the tree;
- every script inside the workspace a configured command names (a hook, ``[workflow] verify``,
  an MCP server's command, an external agent's executable): :func:`named_scripts`; and the files
  the instruction files import (``@docs/style.md``);
- monkey's own home (its config, sessions and checkpoints) and the person's other skill folders;
- when the workspace holds the person's home or ``/``: the home's dotfiles (``.bashrc``,
  ``.ssh/``, ``.gitconfig``, ``.config/``, ``.local/bin`` ...) and the system's folders;
- anything outside the workspace (the file tools refuse it outright, :mod:`monkey.tools.workspace`).

:class:`Guarded` holds what a session protects; :meth:`Guarded.file` judges a file tool's path,
:func:`protected_command` the paths a shell command names (a ``git`` that may write ``.git/``
without naming it too). What a command writes without naming it cannot be seen from its words:
the sandbox (:mod:`monkey.tools.sandbox`, when it is on) keeps :meth:`Guarded.sandbox_paths`
read-only for every command that runs without a person's approval, also those that do not
exist yet (so a command cannot create ``.monkey/``).
"""

from __future__ import annotations

import functools
import os
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from monkey.permissions.read_only import is_read_only
from monkey.tools.workspace import is_protected_name

__all__ = [
    "CONFIG_DIRS",
    "CONFIG_FILES",
    "Guarded",
    "HOME_DOTFILES",
    "SYSTEM_DIRS",
    "named_scripts",
    "protected_command",
    "protected_file",
]

_HARMLESS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "-"})

CONFIG_DIRS = frozenset({".git", ".monkey", ".claude", ".agents"})
"""Folders, anywhere in the workspace, whose files monkey (or another agent) reads as configuration."""
CONFIG_FILES = frozenset({".mcp.json", "AGENTS.md", "CLAUDE.md", "GEMINI.md"})
"""Files, anywhere in the workspace, read as configuration or as the person's instructions (compared
whatever their case)."""
HOME_DOTFILES = (
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".profile",
    ".zshrc",
    ".zprofile",
    ".zshenv",
    ".ssh",
    ".gitconfig",
    ".config",
    ".local",
)
"""Dotfiles of a home inside the workspace kept read-only in the sandbox even before they exist
(every existing dot entry of that home is kept read-only too)."""
SYSTEM_DIRS = frozenset("bin boot etc lib lib32 lib64 libx32 nix opt root run sbin snap srv usr var".split())
"""The top folders of ``/`` that stay protected when the workspace is ``/``."""


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _name(part: str) -> str:
    """One path component as the protected set compares it (case and trailing dots and spaces ignored)."""
    return part.rstrip(". ").lower() if part not in {".", ".."} else part


@dataclass(frozen=True)
class Guarded:
    """What a session protects besides monkey's home: config or code monkey runs (see the module)."""

    names: frozenset[str] = CONFIG_FILES
    """File names protected anywhere in the workspace (compared whatever their case)."""
    scripts: frozenset[Path] = frozenset()
    """Scripts inside the workspace that configured commands run, and the files instructions import
    (absolute, resolved)."""
    home: Path | None = None
    """The person's home, when the workspace holds it: its dotfiles stay protected."""
    system: bool = False
    """The workspace is ``/``: the system's folders stay protected."""

    @functools.cached_property
    def lowered(self) -> frozenset[str]:
        """:attr:`names` as compared."""
        return frozenset(_name(n) for n in self.names)

    def relative_why(self, parts: Iterable[str]) -> str | None:
        """Why a path, given as its components below the workspace, is config or code monkey runs."""
        parts = [p for p in parts if p not in {"", "."}]
        for part in parts:
            low = _name(part)
            if low in CONFIG_DIRS:
                return f"{'/'.join(parts)} is in {part.rstrip('. ')}/, which monkey reads as configuration"
        if parts and _name(parts[-1]) in self.lowered:
            return f"{'/'.join(parts)} is a file monkey reads as configuration or instructions"
        return None

    def why(self, path: Path, workspace: Path) -> str | None:
        """Why an absolute, normalised ``path`` is config or code monkey runs (None: it is not)."""
        if _inside(path, workspace):
            rel = path.parts[len(workspace.parts) :]
            why = self.relative_why(rel)
            if why is not None:
                return why
        if self.scripts and path in self.scripts:
            return (
                f"{path} is a file monkey runs or reads as instructions (a hook, verify, another "
                "configured command or an instruction file names it)"
            )
        if self.home is not None and path != self.home and _inside(path, self.home):
            first = path.parts[len(self.home.parts)]
            if first.startswith("."):
                return f"{path} is in your home folder's {first}"
        if self.system and len(path.parts) > 1 and path.parts[1] in SYSTEM_DIRS:
            return f"{path} is a system path"
        return None

    def sandbox_paths(self, workspace: Path) -> list[Path]:
        """What the sandbox keeps read-only in ``workspace`` besides ``.git/``, existing or not: the
        config folders and files at its top, the configured scripts, a home's dotfiles and the
        system's folders (below the top, the engine judges the paths a command names)."""
        wanted = {_name(n): n for n in [*sorted(CONFIG_DIRS - {".git"}), *sorted(self.names)]}
        try:
            for entry in sorted(os.listdir(workspace)):  # as they are spelt here (.Claude, agents.md)
                if _name(entry) in wanted:
                    wanted[_name(entry)] = entry
        except OSError:
            pass
        found = [workspace / name for name in wanted.values()]
        found += sorted(p for p in self.scripts if _inside(p, workspace))
        if self.home is not None and _inside(self.home, workspace):
            try:
                dots = sorted(e for e in os.listdir(self.home) if e.startswith(".") and e not in {".", ".."})
            except OSError:
                dots = []
            found += [self.home / name for name in dict.fromkeys([*dots, *HOME_DOTFILES])]
        if self.system and workspace == Path("/"):
            found += [Path("/") / name for name in sorted(SYSTEM_DIRS) if os.path.isdir(Path("/") / name)]
        return list(dict.fromkeys(found))


def named_scripts(commands: Iterable[str], workspace: Path) -> frozenset[Path]:
    """The files inside ``workspace`` that ``commands`` (hooks, verify, MCP servers, executables) name.

    Every word of a command that has a ``/`` or names an existing file of the workspace counts:
    ``./scripts/check.sh``, ``python tools/lint.py``, ``bash -c 'ci/run'`` (a word of the inner line
    too), whether it exists yet or not (a script a command later creates would then run); a folder
    (``pytest tests/unit``) does not.
    """
    root = workspace.resolve()
    found: set[Path] = set()
    for command in commands:
        try:
            words = shlex.split(command)
        except ValueError:
            words = command.split()
        todo = list(words)
        while todo:
            word = todo.pop()
            if " " in word.strip():  # an inner line (sh -c '...')
                try:
                    todo += shlex.split(word)
                except ValueError:
                    todo += word.split()
                continue
            if "=" in word and word.startswith("-"):
                word = word.split("=", 1)[1]
            if not word or word.startswith("-") or "$" in word:
                continue
            if word.startswith("~"):
                word = os.path.expanduser(word)
            if "/" not in word and not (root / word).is_file():
                continue
            path = Path(os.path.normpath(root / word))
            try:
                path = path.resolve()
            except (OSError, RuntimeError):
                pass
            if path != root and _inside(path, root) and not path.is_dir() and not word.endswith("/"):
                found.add(path)  # a folder a command names (pytest tests/) is not a script
    return frozenset(found)


def protected_file(
    canonical: str,
    roots: Iterable[Path],
    guarded: Guarded | None = None,
    workspace: Path | None = None,
    lexical: str = "",
) -> str | None:
    """Why a file tool's path (from :func:`~monkey.tools.workspace.rule_paths`) needs a person.

    ``canonical``: the path with symlinks followed; ``lexical``: as written (both relative to the
    workspace, or absolute). ``roots``: monkey's home and any other folder of the person's;
    ``guarded``: config or code monkey runs (None: only the roots).
    """
    paths = [c for c in (canonical, lexical) if c]
    if workspace is not None:
        paths = [c if c.startswith("/") else str(workspace / c) for c in paths]
    for text in paths:
        if not text.startswith("/"):
            continue
        path = Path(text)
        for root in roots:
            if _inside(path, root):
                return f"{text} is inside monkey's own folder {root}"
        if guarded is not None and workspace is not None:
            why = guarded.why(path, workspace)
            if why is not None:
                return why
    return None


def _named_paths(argv: list[str]) -> Iterable[str]:
    for word in argv[1:]:
        if word.startswith("\0"):
            continue  # only known at run time: the sandbox covers it
        if word.startswith("-") and "=" in word:
            word = word.split("=", 1)[1]
        elif word.startswith("-"):
            continue
        yield word


def protected_command(
    argv: list[str], workspace: Path, roots: Iterable[Path], guarded: Guarded | None = None
) -> str | None:
    """Why one simple command needs a person's approval of the exact call, or None.

    A path outside the workspace named as an argument is not enough (``python /tmp/x.py``
    only reads it); what a command writes outside the workspace is the sandbox's to stop.
    """
    name = argv[0] if argv else ""
    if name == "git" and not is_read_only(argv):  # only the listing and reading forms leave .git/ alone
        return "git may write to the repository's .git/"
    roots = list(roots)
    for word in _named_paths(argv):
        if "/" not in word and not word.startswith("~"):
            if is_protected_name(word):
                return f"it names {word}, inside {word.rstrip('. ')}/"
            if guarded is not None and (_name(word) in CONFIG_DIRS or _name(word) in guarded.lowered):
                return f"it names {word}, which monkey reads as configuration"
            if guarded is None or not guarded.scripts and guarded.home is None:
                continue  # a plain name in the workspace
        parts = word.split("/")
        hit = next((p for p in parts if is_protected_name(p)), None)
        if hit is not None:
            return f"it names {word}, inside {hit.rstrip('. ')}/"
        if word.startswith("~"):
            expanded = os.path.expanduser(word)
            path = Path(expanded) if expanded.startswith("/") else Path(os.path.expanduser("~"))
        elif word.startswith("/"):
            path = Path(word)
        elif guarded is not None:
            path = workspace / word
        else:
            continue
        if str(path) in _HARMLESS:
            continue
        path = Path(os.path.normpath(path))
        for root in roots:
            if _inside(path, root) or _inside(root, path):
                return f"it names {word}, monkey's own folder"
        if guarded is not None:
            why = guarded.why(path, workspace)
            if why is not None:
                return f"it names {word}: {why}"
        if _inside(path, workspace):
            continue
        if word.startswith("~"):
            return f"it names {word}, in your home folder"
    return None
