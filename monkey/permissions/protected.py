"""The protected set: what no mode, rule or grant may change without a person.

``.git/`` and ``.monkey/`` inside the workspace, monkey's own home (its config, sessions and
checkpoints), the person's home folder, and anything outside the workspace are written only
after a person approved that exact call. File tools already refuse ``.git/``, ``.monkey/``
and paths outside the workspace outright (:mod:`monkey.tools.workspace`); this module finds
the rest: a file tool's path that resolves into monkey's home, and shell commands that name a
protected path or change a repository's ``.git/`` without naming it (``git commit``).

What a command writes without naming it cannot be seen from its words: the sandbox
(:mod:`monkey.tools.sandbox`, when it is on) keeps ``.git/``, ``.monkey/`` and everything
outside the workspace read-only for every command that runs without a person's approval.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from monkey.permissions.read_only import is_read_only
from monkey.tools.workspace import is_protected_name

__all__ = ["protected_file", "protected_command"]

_HARMLESS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "-"})


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def protected_file(canonical: str, roots: Iterable[Path]) -> str | None:
    """Why a file tool's canonical path (from :func:`~monkey.tools.workspace.rule_paths`) needs a person.

    ``roots``: monkey's home and any other folder the person's config protects.
    """
    if not canonical.startswith("/"):
        return None
    path = Path(canonical)
    for root in roots:
        if _inside(path, root):
            return f"{canonical} is inside monkey's own folder {root}"
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


def protected_command(argv: list[str], workspace: Path, roots: Iterable[Path]) -> str | None:
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
        else:
            continue
        if str(path) in _HARMLESS:
            continue
        path = Path(os.path.normpath(path))
        for root in roots:
            if _inside(path, root) or _inside(root, path):
                return f"it names {word}, monkey's own folder"
        if _inside(path, workspace):
            continue
        if word.startswith("~"):
            return f"it names {word}, in your home folder"
    return None
