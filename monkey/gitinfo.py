"""What a workspace's own git repository says, read from its files (no git process, no hooks)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["current_branch", "short_path"]


def _git_dir(start: Path) -> Path | None:
    """The git directory of the repository holding ``start`` (a ``.git`` file points elsewhere)."""
    for folder in (start, *start.parents):
        dot_git = folder / ".git"
        if dot_git.is_dir():
            return dot_git
        if dot_git.is_file():  # a linked worktree or a submodule: "gitdir: PATH"
            try:
                first = dot_git.read_text(encoding="utf-8", errors="replace").splitlines()[0]
            except (OSError, IndexError):
                return None
            if first.startswith("gitdir:"):
                target = Path(first.partition(":")[2].strip())
                return target if target.is_absolute() else (folder / target)
            return None
    return None


def current_branch(workspace: Path) -> str | None:
    """The checked-out branch of the repository holding ``workspace``.

    Read from ``HEAD`` itself, so no git hook or config of the user's runs. A detached
    HEAD gives the first 7 digits of its commit; no repository (or an unreadable one) gives None.
    """
    git_dir = _git_dir(workspace)
    if git_dir is None:
        return None
    try:
        head = (git_dir / "HEAD").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    if head.startswith("ref:"):
        ref = head.partition(":")[2].strip()
        return ref.removeprefix("refs/heads/") or None
    return f"detached {head[:7]}" if head else None


def short_path(path: Path, home: Path | None = None) -> str:
    """``path`` with the home folder written as ``~``."""
    try:
        home = home if home is not None else Path.home()
    except RuntimeError:  # no home folder can be determined
        return str(path)
    try:
        rest = path.relative_to(home)
    except ValueError:
        return str(path)
    return "~" if str(rest) == "." else f"~/{rest}"
