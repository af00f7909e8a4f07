"""Whether a repository's own configuration makes git run the repository's code.

A git command the read-only table vouches for (``git status``, ``git diff``, ``git log -p``...)
only reads, unless the repository tells git to run a program of its choosing: a filter
(``filter.*.clean`` / ``smudge`` / ``process``), a diff driver (``diff.*.textconv``,
``diff.*.command``, ``diff.external``), a signature program (``gpg.program``), an fsmonitor hook,
a pager, an ssh command, a credential helper, ``uploadpack`` / ``receivepack``, a protocol it
allows, or a ``post-index-change`` hook (``git status`` may refresh the index). Such a
repository's git commands are not read-only: a person is asked. Monkey's own git commands never
read a workspace's repository (:mod:`monkey.gitinfo` reads files, the checkpoints' shadow
repository runs git with its own config and no global or system one).

The configuration is the repository's own: ``config`` (of the common directory for a linked
worktree), ``config.worktree``, every file they include (``include.path``, ``includeIf.*.path``,
followed whatever the condition), and the configs of its submodules (``modules/*/config``, and the
``.git`` of each path ``.gitmodules`` names: git status looks into them; a repository embedded as a
bare gitlink that ``.gitmodules`` does not name is beyond this check). The user's own global and system configuration
is theirs, not the
repository's, and is trusted. Read from the files, never by running git; cached by the files'
size and time, so a decision costs a few ``stat`` calls.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

__all__ = ["git_line_runs_code", "runs_repository_code"]

_RUNS_A_PROGRAM = re.compile(
    r"^(?:filter\..+\.(?:clean|smudge|process)|diff\..+\.(?:textconv|command)|diff\.external"
    r"|gpg\.(?:.+\.)?program|core\.(?:pager|sshcommand|gitproxy|askpass|editor|alternaterefscommand)"
    r"|pager\..+|credential\.(?:.+\.)?helper|remote\..+\.(?:uploadpack|receivepack|vcs)|protocol\..+"
    r"|uploadpack\..+|sequence\.editor)$"
)
"""Settings that name a program git runs (keys lower-cased; a subsection keeps its case but any matches)."""
_FALSE = frozenset({"false", "no", "off", "0", ""})
_BOOLEAN = _FALSE | {"true", "yes", "on", "1"}
_MAX_FILES = 64
"""Config files read at most for one repository (includes and submodules); past that: not read-only."""

Signature = tuple[tuple[str, int, int], ...]
_cache: dict[Path, tuple[Signature, str | None]] = {}


def _stat(path: str) -> tuple[str, int, int]:
    try:
        st = os.stat(path)
    except OSError:
        return (path, -1, -1)
    return (path, st.st_mtime_ns, st.st_size)


def _same(signature: Signature) -> bool:
    for path, mtime, size in signature:
        try:
            st = os.stat(path)
        except OSError:
            if mtime != -1:
                return False
            continue
        if st.st_mtime_ns != mtime or st.st_size != size:
            return False
    return True


def _git_dirs(start: Path) -> tuple[Path, Path, Path] | None:
    """(work tree root, git dir, common dir) of the repository holding ``start``, or None."""
    for folder in (start, *start.parents):
        dot_git = folder / ".git"
        if dot_git.is_dir():
            return folder, dot_git, dot_git
        if dot_git.is_file():  # a linked worktree or a submodule: "gitdir: PATH"
            try:
                first = dot_git.read_text(encoding="utf-8", errors="replace").splitlines()[0]
            except (OSError, IndexError):
                return folder, dot_git, dot_git
            git_dir = Path(first.partition("gitdir:")[2].strip())
            git_dir = git_dir if git_dir.is_absolute() else folder / git_dir
            common = git_dir
            try:
                common = git_dir / (git_dir / "commondir").read_text(encoding="utf-8").strip()
            except OSError:
                pass
            return folder, git_dir, common
    return None


def _entries(text: str) -> list[tuple[str, str]]:
    """(dotted lower-case name, value) of each setting in a git config file's text."""
    out: list[tuple[str, str]] = []
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            head = line[1 : line.find("]")] if "]" in line else line[1:]
            name, _, sub = head.partition('"')
            section = name.strip().lower() + ("." + sub.rstrip('"').strip() if sub else "")
            rest = line[line.find("]") + 1 :].strip() if "]" in line else ""
            if not rest:
                continue
            line = rest  # [section] key = value on one line
        key, eq, value = line.partition("=")
        value = value.strip().strip('"') if eq else "true"
        out.append((f"{section}.{key.strip().lower()}", value))
    return out


def _why(files: list[Path], modules: list[Path], root: Path, git_dir: Path) -> tuple[str | None, list[Path]]:
    """Why the repository runs its own code (None: it does not), and every file that was looked at
    (``files``: its own config files; ``modules``: its submodules' configs)."""
    seen: list[Path] = []
    files = [*files, *modules]
    queue = list(files)
    hooks = git_dir / "hooks"
    while queue:
        path = queue.pop(0)
        if path in seen:
            continue
        seen.append(path)
        if len(seen) > _MAX_FILES:
            return "its configuration includes more files than monkey reads", seen
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for name, value in _entries(text):
            if _RUNS_A_PROGRAM.match(name):
                return f"its configuration ({path.name}) sets {name}, a program git runs", seen
            if name == "core.fsmonitor" and value.lower() not in _BOOLEAN:
                return f"its configuration ({path.name}) sets core.fsmonitor, a program git runs", seen
            if name == "core.hookspath" and path not in modules:
                hooks = Path(os.path.expanduser(value))
                hooks = hooks if hooks.is_absolute() else root / hooks
            if name == "include.path" or (name.startswith("includeif.") and name.endswith(".path")):
                target = Path(os.path.expanduser(value))
                queue.append(target if target.is_absolute() else path.parent / target)
    for hook in [hooks / "post-index-change", *(m.parent / "hooks" / "post-index-change" for m in modules)]:
        seen.append(hook)
        if hook.exists():
            return "a post-index-change hook runs when git refreshes the index", seen
    return None, seen


def _modules(common: Path, root: Path) -> list[Path]:
    """The config files of the submodules' repositories (``modules/NAME/config``, nested too, and the
    ``.git`` folders of the paths ``.gitmodules`` names, a submodule of the old layout)."""
    found: list[Path] = []
    try:
        listed = _entries((root / ".gitmodules").read_text(encoding="utf-8", errors="replace"))
    except OSError:
        listed = []
    for name, value in listed:
        if name.startswith("submodule.") and name.endswith(".path") and (root / value / ".git").is_dir():
            found.append(root / value / ".git" / "config")
    modules = common / "modules"
    if not modules.is_dir():
        return found
    for folder, dirs, names in os.walk(modules):
        if "config" in names and "HEAD" in names:
            found.append(Path(folder) / "config")
            dirs[:] = [d for d in dirs if d == "modules"]
        if len(found) > _MAX_FILES:
            break
    return found


def runs_repository_code(folder: Path) -> str | None:
    """Why git run in ``folder`` may run the code of the repository holding it (None: it may not)."""
    cached = _cache.get(folder)
    if cached is not None and _same(cached[0]):  # the signature holds every .git from here to the root
        return cached[1]
    found = _git_dirs(folder)
    if found is None:  # no repository: remembered until a .git appears on the way up
        _cache[folder] = (tuple(_stat(str(f / ".git")) for f in (folder, *folder.parents)), None)
        return None
    root, git_dir, common = found
    if not git_dir.is_dir():
        why: str | None = "its .git names no repository monkey can read"
        looked: list[Path] = [git_dir]
    else:
        why, looked = _why([common / "config", git_dir / "config.worktree"], _modules(common, root), root, git_dir)
        looked += [common / "modules", root / ".gitmodules"]
    between = [f / ".git" for f in (folder, *folder.parents) if f != root and root in f.parents]
    signature = tuple(_stat(str(p)) for p in [root / ".git", *between, *looked])
    if len(_cache) > 256:
        _cache.clear()
    _cache[folder] = (signature, why)
    return why


def _folders(commands: Sequence[Sequence[str]], base: Path) -> list[Path] | None:
    """The folders a line's git commands may run in: ``base`` and wherever its ``cd`` commands lead
    (each alone and one after another); None when one leads somewhere only known at run time."""
    folders = [base]
    here = base
    for argv in commands:
        if argv and argv[0] in ("cd", "pushd"):
            target = argv[1] if len(argv) > 1 else "~"
            if target == "~" or target.startswith("~/"):
                target = os.path.expanduser(target)  # the command's HOME is monkey's
            if "\0" in target or target.startswith(("~", "-")):
                return None
            here = Path(os.path.normpath(here / target))
            folders += [here, Path(os.path.normpath(base / target))]
    return list(dict.fromkeys(folders))


def git_line_runs_code(commands: Sequence[Sequence[str]], base: Path) -> str | None:
    """Why a git command of a shell line (its simple commands, wrappers taken off) may run the code of
    the repository it runs in (None: none may), looking from ``base`` and the folders the line
    ``cd``s into, with each command's ``-C`` folders."""
    gits = [argv for argv in commands if argv and argv[0] == "git"]
    if not gits:
        return None
    folders = _folders(commands, base)
    if folders is None:
        return "the line changes to a folder only known at run time"
    for argv in gits:
        places = folders
        i = 1
        while i + 1 < len(argv) and argv[i] == "-C":
            if "\0" in argv[i + 1] or argv[i + 1].startswith("~"):
                return "git -C names a folder only known at run time"
            places = [Path(os.path.normpath(p / argv[i + 1])) for p in places]
            i += 2
        for place in places:
            why = runs_repository_code(place)
            if why is not None:
                return f"git may run the repository's own code: {why}"
    return None
