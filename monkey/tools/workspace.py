"""The workspace guard: every path a tool touches must stay inside the workspace.

A path given by the model is resolved against the workspace root with symlinks followed,
and refused when the result leaves the workspace. Containment is decided on path
components, so ``/w/proj-evil`` is not inside ``/w/proj``. The ``.git`` and ``.monkey``
directories are protected: no tool reads or writes below them, whatever the case of the
name (case-insensitive file systems would otherwise let ``.GIT/config`` through).
"""

from __future__ import annotations

import os
from pathlib import Path, PurePath

from monkey.tools.errors import ToolError

__all__ = ["PROTECTED_NAMES", "is_protected_name", "resolve_path", "relative", "rule_paths"]

PROTECTED_NAMES = frozenset({".git", ".monkey"})
"""Directory names no tool may read or write below (compared case-insensitively)."""


def is_protected_name(name: str) -> bool:
    """Whether one path component names a protected directory.

    Trailing dots and spaces are ignored too, as Windows file systems ignore them.

    Args:
        name: A single path component.

    Returns:
        True for ``.git``, ``.GIT``, ``.monkey`` and the like.
    """
    if name in {".", ".."}:
        return False
    return name.rstrip(". ").lower() in PROTECTED_NAMES


def _protected_part(parts: tuple[str, ...]) -> str | None:
    for part in parts:
        if is_protected_name(part):
            return part
    return None


def _inside(path: PurePath, root: PurePath) -> PurePath | None:
    """The part of ``path`` below ``root``, or None when ``path`` is not inside it."""
    try:
        return path.relative_to(root)
    except ValueError:
        return None


def resolve_path(workspace: Path, path: str, *, for_write: bool, follow_final: bool = True) -> Path:
    """Resolve a path given by the model and make sure it may be used.

    Args:
        workspace: The workspace root (resolved here again, so any form works).
        path: The path as the model gave it, relative to the workspace or absolute.
        for_write: Whether the caller will change the path; the workspace root itself
            cannot be written.
        follow_final: Whether a symlink in the last component is followed. Pass False to
            address a symlink itself (deleting it), in which case only its parent is
            resolved.

    Returns:
        The absolute, resolved path inside the workspace.

    Raises:
        ToolError: The path is empty, contains a NUL byte, leaves the workspace, or lies
            in a protected directory.
    """
    if not isinstance(path, str) or not path.strip():
        raise ToolError("path is empty; give a path relative to the workspace root")
    if "\x00" in path:
        raise ToolError("path contains a NUL byte")
    root = workspace.resolve()
    given = PurePath(path)
    lexical = Path(os.path.normpath(given if given.is_absolute() else root / given))

    # The lexical form first, as written and normalised: ".git/config" is refused even when
    # .git does not exist yet, and so is anything spelt through .git (".git/../x").
    rel_parts: tuple[str, ...] = ()
    for base in (root, Path(os.path.normpath(workspace.absolute()))):
        below = _inside(lexical, base)
        if below is not None:
            rel_parts = below.parts
            break
    if not given.is_absolute():
        rel_parts = rel_parts + tuple(p for p in given.parts if p not in {".", ".."})
    hit = _protected_part(rel_parts)
    if hit is not None:
        raise ToolError(f"{path} is protected: monkey never reads or changes {hit}/ directories")

    try:
        if follow_final or lexical == root:
            resolved = lexical.resolve(strict=False)
        else:
            resolved = lexical.parent.resolve(strict=False) / lexical.name
    except (RuntimeError, OSError) as exc:  # a symlink loop, or an unreadable directory
        raise ToolError(f"{path} cannot be resolved: {exc}") from None
    below = _inside(resolved, root)
    if below is None:
        where = "" if resolved == lexical else f" (it resolves to {resolved})"
        raise ToolError(f"{path} is outside the workspace {root}{where}; only paths inside it can be used")
    hit = _protected_part(below.parts)
    if hit is not None:
        raise ToolError(
            f"{path} is protected: it resolves to {relative(root, resolved)}, "
            f"and monkey never reads or changes {hit}/ directories"
        )
    if for_write and resolved == root:
        raise ToolError("the workspace root itself cannot be written; name a file inside it")
    return resolved


def relative(workspace: Path, path: Path) -> str:
    """A path as it is shown in messages: relative to the workspace, in posix form.

    Args:
        workspace: The workspace root.
        path: An absolute path (normally one returned by :func:`resolve_path`).

    Returns:
        ``"."`` for the root, ``"src/app.py"`` for paths inside, the absolute path
        otherwise.
    """
    root = workspace.resolve()
    below = _inside(path, root)
    if below is None:
        below = _inside(path, workspace)
    if below is None:
        return path.as_posix()
    return below.as_posix() or "."


def rule_paths(workspace: Path, path: str) -> tuple[str, str]:
    """What a permission rule is matched against for ``path`` as the model wrote it.

    Returns ``(canonical, lexical)``: the path with symlinks followed and ``..`` removed, and
    the path as written with only ``.`` and ``..`` removed; each relative to the workspace in
    posix form (``"."`` for the root), or absolute when it lies outside the workspace.
    Never raises: a path that cannot be resolved is matched as written.
    """
    root = workspace.resolve()
    given = PurePath(path.replace("\x00", ""))
    lexical = Path(os.path.normpath(given if given.is_absolute() else root / given))
    try:
        resolved = lexical.resolve(strict=False)
    except (RuntimeError, OSError, ValueError):  # a symlink loop, an unreadable directory
        resolved = lexical
    return relative(root, resolved), relative(root, lexical)
