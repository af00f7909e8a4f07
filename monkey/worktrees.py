"""Git worktrees for sessions: ``monkey agent --worktree NAME``, ``/worktree``, ``monkey worktrees``.

A session in a worktree works on a checkout of its own, on a new branch ``monkey/NAME``
made from the repository's ``HEAD``, so sessions running at the same time never touch each
other's files nor the person's checkout. The worktrees live in the main checkout, at
``<repo>/.monkey/worktrees/NAME`` (the way Claude Code keeps ``.claude/worktrees/NAME``):

- the folder is inside the repository, so the repository's trust is the worktree's
  (:mod:`monkey.trust` also follows any linked worktree back to its repository);
- ``.monkey/`` is in the protected set, so a session in the main checkout cannot change a
  worktree's files without a person's approval of that exact call;
- ``/.monkey/worktrees/`` goes into the repository's ``.git/info/exclude`` (no tracked file
  changes), so ``git status`` in the main checkout does not list them;
- the monkey home is protected as a whole, so a worktree there could not be edited at all.

Everything that changes the repository runs the real ``git worktree add/list/remove``
(the person's own git and config, as if they typed it). What only reads (which worktree a
folder belongs to, for trust and for the session list) reads git's files and starts no
process. The branch is never deleted: it is left for the person to merge.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "WorktreeError",
    "Worktree",
    "Repository",
    "BRANCH_PREFIX",
    "FOLDER",
    "check_name",
    "repository",
    "create",
    "list_worktrees",
    "checkout_root",
    "same_folder",
    "find",
    "remove",
    "delete_branch",
    "changes",
    "main_checkout",
    "hold",
    "Hold",
    "in_use",
    "describe",
]

BRANCH_PREFIX = "monkey/"
"""A worktree NAME's branch is ``monkey/NAME``."""
FOLDER = Path(".monkey") / "worktrees"
"""Where the worktrees live, below the main checkout."""
_EXCLUDE = "/.monkey/worktrees/"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_LOCATING = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
)


class WorktreeError(Exception):
    """A worktree that cannot be made, found or removed; the message says why."""


@dataclass(frozen=True)
class Repository:
    """The repository a folder belongs to."""

    root: Path
    """The main checkout (where ``.git`` is a folder)."""
    head: str
    """The commit ``HEAD`` names."""
    branch: str
    """The checked-out branch ('' when ``HEAD`` is detached)."""


@dataclass(frozen=True)
class Worktree:
    """One of monkey's worktrees."""

    name: str
    path: Path
    branch: str
    head: str = ""
    """Its current commit."""
    locked: str | None = None
    """Why the person locked it (``git worktree lock``; '' without a reason), None when not locked."""

    def to_dict(self) -> dict[str, str | None]:
        return {
            "name": self.name,
            "path": str(self.path),
            "branch": self.branch,
            "head": self.head,
            "locked": self.locked,
        }


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _LOCATING}
    env["GIT_TERMINAL_PROMPT"] = "0"
    return env


def _git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run the person's git in ``cwd`` (their config and hooks apply, as if they typed it)."""
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, env=_env(), capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120
        )
    except FileNotFoundError:
        raise WorktreeError("git is not installed (worktrees need the git program on PATH)") from None
    except subprocess.TimeoutExpired:
        raise WorktreeError(f"git {args[0]} took longer than two minutes in {cwd}") from None
    if check and done.returncode != 0:
        why = (done.stderr.strip() or done.stdout.strip()).splitlines()
        raise WorktreeError(f"git {' '.join(args[:2])} failed: {why[-1] if why else f'exit {done.returncode}'}")
    return done


def check_name(name: str) -> str:
    """``name`` when it can name a worktree folder and a branch; raises :class:`WorktreeError` saying why not."""
    if not name:
        raise WorktreeError("a worktree needs a name")
    if name.startswith("-"):
        raise WorktreeError(f"worktree name {name!r} starts with '-' (it would read as an option)")
    if "/" in name or "\\" in name or ".." in name:
        raise WorktreeError(
            f"worktree name {name!r} has '/', '\\' or '..': a name is one folder, inside .monkey/worktrees/"
        )
    if not _NAME.match(name) or name.endswith((".", ".lock")):
        raise WorktreeError(
            f"worktree name {name!r}: use letters, digits, '.', '_' and '-' (at most 64, "
            "starting with a letter or digit, not ending in '.' or '.lock')"
        )
    return name


def repository(start: Path) -> Repository:
    """The repository ``start`` belongs to; raises :class:`WorktreeError` when it has none a worktree can come from."""
    if not start.is_dir():
        raise WorktreeError(f"{start} is not a folder")
    probe = _git(start, "rev-parse", "--is-bare-repository", "--git-common-dir", check=False)
    if probe.returncode != 0:
        raise WorktreeError(f"{start} is not in a git repository (a worktree is a second checkout of one)")
    bare, common = probe.stdout.splitlines()[:2]
    if bare.strip() == "true":
        raise WorktreeError(f"{start} is a bare repository: it has no checkout to make a worktree beside")
    common_dir = (start / common.strip()).resolve()
    root = common_dir.parent
    if common_dir.name != ".git" or not (root / ".git").is_dir():
        raise WorktreeError(
            f"the repository of {start} keeps its git folder at {common_dir}, which monkey's "
            "worktrees do not support (they live in the main checkout)"
        )
    head = _git(start, "rev-parse", "--verify", "-q", "HEAD^{commit}", check=False)
    if head.returncode != 0:
        raise WorktreeError(
            f"the repository {root} has no commit yet: a worktree starts from HEAD, so commit once first"
        )
    branch = _git(start, "symbolic-ref", "-q", "--short", "HEAD", check=False).stdout.strip()
    return Repository(root=root, head=head.stdout.strip(), branch=branch)


def _exclude(repo: Repository) -> None:
    """``/.monkey/worktrees/`` in the repository's ``info/exclude`` (local to this clone, nothing tracked changes)."""
    path = repo.root / ".git" / "info" / "exclude"
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        text = ""
    if _EXCLUDE in text.splitlines():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        f.write(("" if not text or text.endswith("\n") else "\n") + "# monkey's worktrees\n" + _EXCLUDE + "\n")


def _branch_exists(repo: Repository, branch: str) -> bool:
    return _git(repo.root, "show-ref", "--verify", "-q", f"refs/heads/{branch}", check=False).returncode == 0


def changes(path: Path) -> list[str]:
    """``git status --porcelain`` lines of the checkout at ``path``: changed, staged and untracked files."""
    out = _git(path, "status", "--porcelain", "--untracked-files=all").stdout
    return [line for line in out.splitlines() if line.strip()]


def create(start: Path, name: str | None = None) -> tuple[Worktree, list[str]]:
    """Make worktree ``name`` (one is made up when None) of the repository holding ``start``, on a new
    branch ``monkey/NAME`` from ``HEAD``; the worktree and what to tell the person (a dirty checkout,
    a detached ``HEAD``). Raises :class:`WorktreeError`."""
    repo = repository(start)
    name = check_name(name) if name is not None else f"wt-{secrets.token_hex(3)}"
    _exclude(repo)  # before anything is made in .monkey/worktrees/
    (repo.root / FOLDER).mkdir(parents=True, exist_ok=True)
    fd = os.open(repo.root / FOLDER / ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # two monkeys making worktrees at once: one after the other
        return _create(repo, name, start)
    finally:
        os.close(fd)


def _create(repo: Repository, name: str, start: Path) -> tuple[Worktree, list[str]]:
    branch = BRANCH_PREFIX + name
    path = repo.root / FOLDER / name
    known = {w.name for w in list_worktrees(start)}
    if name in known or path.exists():
        raise WorktreeError(
            f"a worktree named {name} exists already ({path}); pick another name, or monkey worktrees rm {name}"
        )
    if _branch_exists(repo, branch):
        raise WorktreeError(
            f"the branch {branch} exists already; pick another name (monkey never reuses a "
            "branch: it may hold work to merge)"
        )
    if _git(repo.root, "check-ref-format", "--branch", branch, check=False).returncode != 0:
        raise WorktreeError(f"{branch} is not a valid branch name")
    notes: list[str] = []
    if not repo.branch:
        notes.append(f"HEAD is detached at {repo.head[:7]}: the worktree's branch {branch} starts there")
    if changes(repo.root):
        notes.append(
            f"{repo.root} has uncommitted changes; they stay there: the worktree starts from HEAD "
            f"({repo.head[:7]}), without them"
        )
    _git(repo.root, "worktree", "add", "-q", "-b", branch, str(path), repo.head)
    return Worktree(name=name, path=path.resolve(), branch=branch, head=repo.head), notes


def same_folder(worktree: Worktree, start: Path) -> Path:
    """The worktree's folder that ``start`` is in its own checkout (``pkg/`` for ``<repo>/pkg``), or the
    worktree's top when ``HEAD`` has no such folder: where a session started in ``start`` goes on."""
    here = start.resolve()
    top = checkout_root(here)
    folder = worktree.path / here.relative_to(top) if top is not None else worktree.path
    return folder if folder.is_dir() else worktree.path


def list_worktrees(start: Path) -> list[Worktree]:
    """Monkey's worktrees of the repository holding ``start`` (those in ``.monkey/worktrees/``), by name."""
    repo_root = repository(start).root
    base = (repo_root / FOLDER).resolve()
    out = _git(repo_root, "worktree", "list", "--porcelain").stdout
    found: list[Worktree] = []
    for block in out.split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.splitlines():
            key, _, value = line.partition(" ")
            fields[key] = value
        if not fields.get("worktree"):
            continue
        path = Path(fields["worktree"]).resolve()
        if path.parent != base:
            continue
        branch = fields.get("branch", "").removeprefix("refs/heads/")
        found.append(
            Worktree(name=path.name, path=path, branch=branch, head=fields.get("HEAD", ""), locked=fields.get("locked"))
        )
    return sorted(found, key=lambda w: w.name)


def find(start: Path, name: str) -> Worktree:
    """Worktree ``name`` of the repository holding ``start``; raises :class:`WorktreeError` when there is none."""
    check_name(name)
    for worktree in list_worktrees(start):
        if worktree.name == name:
            return worktree
    raise WorktreeError(f"no worktree named {name} (monkey worktrees list shows them)")


def remove(start: Path, name: str, *, home: Path, force: bool = False) -> Worktree:
    """Remove worktree ``name`` (``git worktree remove``); its branch stays. Raises :class:`WorktreeError`
    when a running session uses it, or, without ``force``, when it holds uncommitted or untracked files."""
    worktree = find(start, name)
    with _exclusive(worktree.path, home) as free:
        if not free:
            raise WorktreeError(f"a running monkey session works in {worktree.path}; end it first")
        if worktree.locked is not None:
            why = f" ({worktree.locked})" if worktree.locked else ""
            raise WorktreeError(f"worktree {name} is locked{why}: git worktree unlock {worktree.path} first")
        if worktree.path.is_dir() and not force:
            dirty = changes(worktree.path)
            if dirty:
                shown = ", ".join(line[3:] for line in dirty[:5]) + (" ..." if len(dirty) > 5 else "")
                raise WorktreeError(
                    f"worktree {name} has uncommitted or untracked files ({shown}); commit them "
                    f"on {worktree.branch}, or --force removes them"
                )
        repo_root = repository(start).root
        args = ["worktree", "remove", *(["--force"] if force else []), str(worktree.path)]  # a lock of yours holds
        if not worktree.path.is_dir():  # deleted by hand: git forgets it
            args = ["worktree", "prune"]
        _git(repo_root, *args)
    return worktree


def delete_branch(start: Path, branch: str) -> None:
    """Delete ``branch`` (only for a worktree monkey just made and is taking back)."""
    _git(repository(start).root, "branch", "-D", branch)


# -- which worktree a folder is (files only, no git process) ------------------------------


def checkout_root(path: Path) -> Path | None:
    """The top of the checkout (main or linked worktree) holding ``path``: the nearest folder with a ``.git``."""
    for folder in (path, *path.parents):
        if (folder / ".git").exists():
            return folder
    return None


def main_checkout(path: Path) -> tuple[Path, Path] | None:
    """When ``path`` is in a linked worktree: its main checkout and the worktree's root; else None.

    Read from git's files and checked both ways, so a folder cannot claim a repository it is not a
    worktree of: its ``.git`` file names ``<repo>/.git/worktrees/ID``, and that folder's ``gitdir``
    names this ``.git`` file back (only someone who can write in the repository's ``.git`` can
    make that so).
    """
    here = path.resolve()
    root = checkout_root(here)
    if root is None or not (root / ".git").is_file():
        return None
    try:
        first = (root / ".git").read_text(encoding="utf-8", errors="replace").splitlines()[0]
        if not first.startswith("gitdir:"):
            return None
        admin = (root / first.partition(":")[2].strip()).resolve()
        common = (admin / (admin / "commondir").read_text(encoding="utf-8").strip()).resolve()
        back = Path((admin / "gitdir").read_text(encoding="utf-8").strip())
    except (OSError, IndexError, UnicodeDecodeError):
        return None
    main = common.parent
    if (
        admin.parent != common / "worktrees"
        or common.name != ".git"
        or not (main / ".git").is_dir()
        or (main / ".git").resolve() != common
    ):
        return None
    if not back.is_absolute() or back.resolve() != (root / ".git").resolve():
        return None
    return main, root


def describe(path: Path) -> str:
    """``worktree NAME of REPO`` when ``path`` is one of monkey's worktrees, else ''."""
    found = main_checkout(path)
    if found is None:
        return ""
    main, root = found
    if root.parent != (main / FOLDER).resolve():
        return ""
    return f"worktree {root.name} (branch {BRANCH_PREFIX}{root.name}) of {main}"


# -- in use by a running session ---------------------------------------------------------


def _lock_path(path: Path, home: Path) -> Path:
    digest = hashlib.sha256(os.fsencode(str(path.resolve()))).hexdigest()[:24]
    return home / "worktree-locks" / f"{digest}.lock"


class Hold:
    """A running session's shared hold on its worktree: ``monkey worktrees rm`` refuses while one is held."""

    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __del__(self) -> None:
        self.release()


def hold(workspace: Path, home: Path) -> Hold | None:
    """Hold the worktree ``workspace`` is in while a session works there (None: not a linked worktree,
    or the hold cannot be taken: ``rm`` is removing it)."""
    found = main_checkout(workspace)
    if found is None:
        return None
    path = _lock_path(found[1], home)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return Hold(fd)


class _exclusive:
    """The exclusive lock ``rm`` takes: ``free`` is False when a session holds the worktree."""

    def __init__(self, path: Path, home: Path) -> None:
        self.path = _lock_path(path, home)
        self.fd: int | None = None

    def __enter__(self) -> bool:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise WorktreeError(f"cannot check whether a session uses the worktree: {exc.strerror or exc}") from None
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        return True

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            os.close(self.fd)


def in_use(path: Path, home: Path) -> bool:
    """Whether a running session holds the worktree at ``path``."""
    with _exclusive(path, home) as free:
        return not free
