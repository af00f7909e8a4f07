"""Reading and writing one workspace path exactly: bytes, mode, symlinks, absence.

A *state* is what a path holds: ``None`` (nothing there) or a :class:`FileState` with the
file's bytes (or a symlink's target) and its ``st_mode``. Writes are atomic (a temporary
file in the same folder, then a rename), so a crash leaves either the old or the new state.
"""

from __future__ import annotations

import os
import re
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from monkey.checkpoints.shadow import blob_sha, git_mode
from monkey.tools.base import ToolError
from monkey.tools.workspace import resolve_path

__all__ = [
    "FileState",
    "PathError",
    "read_state",
    "write_state",
    "missing_dirs",
    "safe_target",
    "same",
    "remove_temp_files",
    "remove_empty_tree",
    "TEMP_SUFFIXES",
]

TEMP_SUFFIXES = (".monkey-tmp", ".monkey-undo")
"""The temporary files of atomic writes: the file tools' and the undo's (``.NAME.XXXXXXXX.SUFFIX``)."""


class PathError(Exception):
    """A path that cannot be read or restored safely."""


@dataclass(frozen=True)
class FileState:
    """What a path holds: its bytes (a symlink's target for links) and its mode."""

    mode: int
    data: bytes

    @property
    def sha(self) -> str:
        """The git blob id of the content."""
        return blob_sha(self.data)

    @property
    def is_link(self) -> bool:
        """Whether the path is a symlink."""
        return stat.S_ISLNK(self.mode)


def safe_target(root: Path, rel: str) -> Path:
    """The absolute path of ``rel``, refused when it leaves the workspace or is protected."""
    try:
        return resolve_path(root, rel, for_write=True, follow_final=False)
    except ToolError as exc:
        raise PathError(str(exc)) from None


def read_state(root: Path, rel: str) -> FileState | None:
    """The state of a workspace path (raises PathError for folders and special files)."""
    target = safe_target(root, rel)
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return None
    except OSError as exc:
        raise PathError(f"cannot read {rel}: {exc.strerror or exc}") from None
    try:
        if stat.S_ISLNK(st.st_mode):
            return FileState(st.st_mode, os.fsencode(os.readlink(target)))
        if stat.S_ISREG(st.st_mode):
            with open(target, "rb") as fh:
                return FileState(st.st_mode, fh.read())
    except OSError as exc:
        raise PathError(f"cannot read {rel}: {exc.strerror or exc}") from None
    kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file"
    raise PathError(f"{rel} is {kind}")


def same(state: FileState | None, sha: str | None, mode: int, exact_mode: bool) -> bool:
    """Whether a path's state is the recorded (sha, mode)."""
    if state is None or sha is None:
        return state is None and sha is None
    if state.sha != sha:
        return False
    if exact_mode:
        return stat.S_IFMT(state.mode) == stat.S_IFMT(mode) and stat.S_IMODE(state.mode) == stat.S_IMODE(mode)
    return git_mode(state.mode) == git_mode(mode)


def missing_dirs(root: Path, rel: str) -> list[str]:
    """The folders above ``rel`` that do not exist yet, outermost first."""
    parts = rel.split("/")[:-1]
    out: list[str] = []
    for i in range(1, len(parts) + 1):
        sub = "/".join(parts[:i])
        if out or not os.path.lexists(root / sub):
            out.append(sub)
    return out


def write_state(
    root: Path,
    rel: str,
    state: FileState | None,
    *,
    exact_mode: bool = True,
    created_dirs: list[str] | None = None,
    die_before_rename: bool = False,
) -> None:
    """Make ``rel`` hold ``state`` (None: remove it, then the folders it created if empty).

    ``die_before_rename`` is fault injection for tests: the process is killed with the
    temporary copy written and not yet renamed (or before a removal).
    """
    if die_before_rename and state is None:
        _die()
    target = safe_target(root, rel)
    if state is None:
        try:
            os.unlink(target)
        except FileNotFoundError:
            pass
        for sub in reversed(created_dirs or []):
            try:
                os.rmdir(safe_target(root, sub))
            except (OSError, PathError):
                break  # not empty (or gone): someone else's files live there
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name[:100]}.{secrets.token_hex(4)}.monkey-undo")
    try:
        if state.is_link:
            os.symlink(os.fsdecode(state.data), tmp)
        else:
            perm = stat.S_IMODE(state.mode)
            if not exact_mode:
                perm = _git_perm(target, state.mode)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(state.data)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, perm)
        if die_before_rename:
            _die()
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _git_perm(target: Path, mode: int) -> int:
    """Permission bits for a mode known only as git's 100644/100755: keep the file's own."""
    try:
        st = os.lstat(target)
        base = stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else 0o644
    except OSError:
        base = 0o644
    if mode & 0o111:
        return base | ((base & 0o444) >> 2)
    return base & ~0o111


def remove_temp_files(root: Path, rel: str) -> list[str]:
    """Remove the temporary files a killed write of ``rel`` left beside it; returns their paths.

    Only names of the exact shape monkey writes (``.NAME.<8 hex>.monkey-tmp|monkey-undo``)
    in the path's own folder are removed.
    """
    folder, _, name = rel.rpartition("/")
    shape = re.compile(
        r"\." + re.escape(name[:100]) + r"\.[0-9a-f]{8}(" + "|".join(re.escape(s) for s in TEMP_SUFFIXES) + r")"
    )
    try:
        parent = safe_target(root, folder) if folder else root
        names = os.listdir(parent)
    except (OSError, PathError):
        return []
    removed: list[str] = []
    for other in names:
        if shape.fullmatch(other):
            try:
                os.unlink(parent / other)
            except OSError:
                continue
            removed.append(f"{folder}/{other}" if folder else other)
    return removed


def _die() -> None:
    import signal

    os.kill(os.getpid(), signal.SIGKILL)


def remove_empty_tree(root: Path, rel: str) -> bool:
    """Remove the folder ``rel`` and the empty folders in it, deepest first; never a file.

    Returns whether ``rel`` is gone (False: something else lives there now, and stays).
    """
    try:
        top = safe_target(root, rel.rstrip("/"))
    except PathError:
        return False
    if not os.path.isdir(top) or os.path.islink(top):
        return not os.path.lexists(top)
    for folder, dirs, _ in os.walk(top, topdown=False):
        for name in dirs:
            try:
                os.rmdir(os.path.join(folder, name))
            except OSError:
                pass
    try:
        os.rmdir(top)
    except OSError:
        return False
    return True
