"""Walk a workspace the way git sees it: ``.gitignore`` files honoured, ``.git`` skipped.

Rules come from ``.git/info/exclude`` (lowest priority; in a linked worktree, its repository's),
the root ``.gitignore`` and every
nested ``.gitignore``, each anchored at its own directory. As in git, a deeper file
overrides a shallower one, the last matching line of a file wins, ``!pattern`` re-includes,
and nothing below an ignored directory is looked at (so it cannot be re-included).
``.git`` and ``.monkey`` are always skipped. Only regular files are yielded (no FIFOs,
sockets or devices, which could block a reader); directory symlinks are never followed, and
a file symlink is only yielded when it points to a regular file inside the workspace.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from monkey.tools.workspace import is_protected_name

if TYPE_CHECKING:  # pathspec loads when a search first reads an ignore file, not at startup
    from pathspec import GitIgnoreSpec

__all__ = ["IgnoreRules", "walk"]


def _load_spec(path: Path) -> GitIgnoreSpec | None:
    """The rules of one ignore file, or None when it is missing or has none."""
    from pathspec import GitIgnoreSpec

    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except (OSError, ValueError):
        return None
    lines = text.removeprefix("\ufeff").splitlines()
    try:
        spec = GitIgnoreSpec.from_lines(lines)
    except Exception:  # noqa: BLE001 - one bad line must not hide the others
        good = []
        for line in lines:
            try:
                GitIgnoreSpec.from_lines([line])
            except Exception:  # noqa: BLE001
                continue
            good.append(line)
        spec = GitIgnoreSpec.from_lines(good)
    return spec if len(spec) else None


class IgnoreRules:
    """The ignore rules of one workspace, loaded lazily directory by directory.

    Args:
        workspace: The workspace root.
    """

    def __init__(self, workspace: Path) -> None:
        self.root = workspace.resolve()
        """The resolved workspace root."""
        self._layers: dict[str, list[tuple[str, GitIgnoreSpec]]] = {}

    def _exclude_file(self) -> Path:
        """``.git/info/exclude``; in a linked worktree (``.git`` a file), the repository's, as git reads it."""
        if (self.root / ".git").is_file():
            from monkey.worktrees import main_checkout

            found = main_checkout(self.root)
            if found is not None and found[1] == self.root:
                return found[0] / ".git" / "info" / "exclude"
        return self.root / ".git" / "info" / "exclude"

    def _layers_for(self, rel_dir: str) -> list[tuple[str, GitIgnoreSpec]]:
        """Rules that apply inside ``rel_dir`` ("" for the root), shallowest first."""
        cached = self._layers.get(rel_dir)
        if cached is not None:
            return cached
        if rel_dir == "":
            layers = []
            for source in (self._exclude_file(), self.root / ".gitignore"):
                spec = _load_spec(source)
                if spec is not None:
                    layers.append(("", spec))
        else:
            parent = rel_dir.rpartition("/")[0]
            layers = list(self._layers_for(parent))
            spec = _load_spec(self.root / rel_dir / ".gitignore")
            if spec is not None:
                layers.append((rel_dir + "/", spec))
        self._layers[rel_dir] = layers
        return layers

    def ignored(self, rel: str, *, is_dir: bool) -> bool:
        """Whether a workspace-relative posix path is ignored.

        Only the path's own rules are checked; callers that walk from the root never
        reach paths below an ignored directory.

        Args:
            rel: The path relative to the workspace root, posix form, no trailing slash.
            is_dir: Whether the path is a directory (``dir/`` patterns match only those).

        Returns:
            True when the deepest rule that matches says the path is ignored.
        """
        if any(is_protected_name(part) for part in rel.split("/")):
            return True
        parent = rel.rpartition("/")[0]
        for base, spec in reversed(self._layers_for(parent)):
            below = rel[len(base) :] + ("/" if is_dir else "")
            result = spec.check_file(below)
            if result.include is not None:
                return bool(result.include)
        return False

    def ignored_anywhere(self, rel: str, *, is_dir: bool) -> bool:
        """Whether the path or one of its parent directories is ignored."""
        parts = rel.split("/")
        for i in range(1, len(parts)):
            if self.ignored("/".join(parts[:i]), is_dir=True):
                return True
        return self.ignored(rel, is_dir=is_dir)


def _symlink_target_ok(root: Path, entry: os.DirEntry[str]) -> bool:
    """Whether a file symlink points to a regular file inside the workspace, unprotected."""
    try:
        target = Path(entry.path).resolve(strict=True)
        below = target.relative_to(root)
    except (OSError, ValueError, RuntimeError):
        return False
    return target.is_file() and not any(is_protected_name(p) for p in below.parts)


def walk(
    workspace: Path,
    start: str = "",
    *,
    dirs: bool = False,
    rules: IgnoreRules | None = None,
) -> Iterator[str]:
    """Yield workspace-relative paths below ``start`` that git would not ignore.

    A directory's entries come in name order, then its subdirectories are walked in
    name order, so the order is deterministic. Unreadable directories are skipped.

    Args:
        workspace: The workspace root.
        start: A workspace-relative posix directory to walk ("" or "." for the root).
            It is walked even when it is itself ignored; its entries follow the rules.
        dirs: Whether directories are yielded too (with no trailing slash).
        rules: Rules to reuse; made from ``workspace`` when not given.

    Yields:
        Posix paths relative to the workspace root.
    """
    rules = rules or IgnoreRules(workspace)
    root = rules.root
    start = "" if start in {"", "."} else start.strip("/")
    stack = [start]
    while stack:
        rel_dir = stack.pop()
        try:
            with os.scandir(root / rel_dir if rel_dir else root) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        subdirs = []
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            if is_protected_name(entry.name):
                continue
            try:
                is_link = entry.is_symlink()
                is_dir = entry.is_dir(follow_symlinks=False)
                is_file = entry.is_file(follow_symlinks=False)
            except OSError:
                continue
            if is_link:
                if rules.ignored(rel, is_dir=False) or not _symlink_target_ok(root, entry):
                    continue
                yield rel
            elif is_dir:
                if rules.ignored(rel, is_dir=True):
                    continue
                if dirs:
                    yield rel
                subdirs.append(rel)
            elif is_file and not rules.ignored(rel, is_dir=False):
                yield rel
        # Push in reverse so that the first subdirectory is walked first.
        stack.extend(reversed(subdirs))
