"""The sandbox ``shell_execute`` children run in, so the promises hold where rules cannot see.

A rule or ``--no-approval`` decides *whether* a command runs; what the program then does is
out of the parser's sight (a ``Makefile``, a ``conftest.py``, a test that writes
``.git/hooks``). The sandbox bounds it, on Linux:

- **bubblewrap** (``bwrap``), when it works here: the root filesystem read-only, the
  workspace writable but its ``.git`` and ``.monkey`` (and monkey's home, were it inside, and
  what the permission engine protects: :attr:`Sandbox.keep`) read-only again, those not there
  yet held by an empty read-only placeholder for the command's run (so it cannot create them;
  bubblewrap 0.8 has no overlay and a mount needs a host entry to sit on: recorded with the
  children's record before it is made, so were monkey killed its guardian, or the next monkey,
  removes it, :func:`monkey.children.hold_placeholder`),
  a private temporary folder (``TMPDIR``, an empty tmpfs on ``/var/tmp``;
  ``/tmp`` is read-only like the rest), a fresh ``/dev`` and ``/proc`` in a PID
  namespace of its own (monkey's ``/proc/<pid>/environ`` is not even there), no network
  unless ``shell.sandbox_network``, no capabilities (as root too), a session of its own, and
  death with monkey.
- **Landlock**, where bubblewrap cannot run (no user namespaces): writes only inside the
  workspace (never into ``.git``/``.monkey``/monkey's home, and not new entries directly
  in the workspace root, which Landlock cannot grant without granting ``.git`` too), a
  private temporary folder (``TMPDIR``) and ``/dev``; no signals to processes outside; no
  network unless allowed: a network namespace of its own where the kernel lets monkey make one
  (as root, with ``CAP_SYS_ADMIN``), else only TCP is cut (Landlock handles nothing else: UDP,
  DNS included, stays open, and the probe's notice says so). Reads stay open, so monkey's own
  ``/proc`` entries are closed only by ``PR_SET_DUMPABLE`` (which root's children pass) and
  by the credentials blanked in its environment block (:func:`monkey.process.hide_secrets`).

:func:`probe` finds which one works (once per process) for ``shell.sandbox`` = ``auto``,
``bubblewrap``, ``landlock`` or ``off``; without one, the permission engine makes every
shell command ask a person. :func:`monkey.tools.sandbox_notes.explain` turns a denial in a
command's output into a note for the model.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from monkey import children
from monkey.config import SANDBOX_MODES

__all__ = ["MODES", "Probe", "PendingProbe", "Prepared", "Sandbox", "probe"]

MODES = SANDBOX_MODES
"""The values of ``shell.sandbox``."""
PROTECTED = (".git", ".monkey")
"""Folders of the workspace a sandboxed command may read but never write."""
_PROBE_TIMEOUT = 10.0
PRIVATE_TMP = "/var/tmp" if os.path.isdir("/var/tmp") else "/tmp"
"""Where bubblewrap mounts the private temporary folder (``TMPDIR``): an empty tmpfs, gone when
the command ends. ``/tmp`` itself stays visible, read-only, so scripts and tools kept there run."""


@dataclass
class Prepared:
    """How to start one sandboxed command."""

    argv: list[str]
    env: dict[str, str]
    preexec_fn: Callable[[], None] | None = None
    """Run in the child before exec (Landlock restricts itself there)."""
    cleanup: Callable[[], None] = lambda: None
    """Call once the command has ended (or could not start)."""


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _bwrap_base(executable: str, network: bool) -> list[str]:
    """The bubblewrap arguments every command gets, before the workspace's binds."""
    args = [
        executable,
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--tmpfs",
        PRIVATE_TMP,
        "--unshare-pid",
        "--unshare-ipc",
        "--die-with-parent",
        "--new-session",
    ]
    if not network:
        args.append("--unshare-net")
    if os.geteuid() == 0:  # bwrap run by root keeps every capability unless told otherwise
        args += ["--cap-drop", "ALL"]
    return args


@dataclass(frozen=True)
class Sandbox:
    """A working sandbox and its settings; :meth:`prepare` wraps one command in it."""

    kind: Literal["bubblewrap", "landlock"]
    network: bool = False
    """Whether commands may use the network."""
    home: Path | None = None
    """monkey's home: never writable (it matters when it lies inside the workspace)."""
    executable: str = "bwrap"
    net_namespace: bool = False
    """Landlock: each command gets a network namespace of its own (no network at all, UDP included)
    when ``network`` is off; False where the kernel refuses one (then only TCP is cut)."""
    keep: Callable[[Path], list[Path]] | None = field(default=None, compare=False)
    """More paths of a workspace to keep read-only, existing or not (the permission engine's
    :meth:`~monkey.permissions.protected.Guarded.sandbox_paths`: config or code monkey runs)."""

    def _candidates(self, workspace: Path) -> list[Path]:
        candidates = [workspace / name for name in PROTECTED]
        if self.home is not None:
            candidates.append(self.home)
        return candidates + (self.keep(workspace) if self.keep is not None else [])

    def protected(self, workspace: Path) -> list[Path]:
        """The existing paths inside ``workspace`` kept read-only (symlinks resolved)."""
        found: list[Path] = []
        for path in self._candidates(workspace):
            if not os.path.lexists(path) or str(path) in _PLACEHOLDERS:
                continue
            real = Path(os.path.realpath(path))
            if _inside(real, workspace) and real != workspace and real.exists() and real not in found:
                found.append(real)
        return found

    def missing(self, workspace: Path) -> list[Path]:
        """The paths to keep that are not there yet (each the first missing folder on its way), or
        are only another running command's placeholder: a command must not create them."""
        found: list[Path] = []
        for path in self.keep(workspace) if self.keep is not None else []:
            if os.path.islink(path) and not os.path.exists(path):  # a dangling link: keep where it points
                path = Path(os.path.realpath(path))
            if not _inside(path, workspace) or path == workspace:
                continue
            while not os.path.lexists(path.parent) and path.parent != workspace:
                path = path.parent
            if (not os.path.lexists(path) or str(path) in _PLACEHOLDERS) and path not in found:
                found.append(path)
        return found

    def prepare(self, argv: list[str], workspace: Path, env: Mapping[str, str]) -> Prepared:
        """The command ``argv``, run in ``workspace`` with ``env``, inside the sandbox."""
        if self.kind == "bubblewrap":
            return self._bubblewrap(argv, workspace, env)
        return self._landlock(argv, workspace, env)

    def _bubblewrap(self, argv: list[str], workspace: Path, env: Mapping[str, str]) -> Prepared:
        ws = str(workspace)
        args = _bwrap_base(self.executable, self.network)
        args += ["--bind", ws, ws]
        for path in self.protected(workspace):
            args += ["--ro-bind", str(path), str(path)]
        missing = self.missing(workspace)
        empty = tempfile.mkdtemp(prefix="monkey-keep-") if missing else ""
        if missing:
            (Path(empty) / "file").touch(mode=0o444)
            (Path(empty) / "dir").mkdir(mode=0o555)
        for path in missing:
            source = "file" if path.suffix else "dir"  # AGENTS.md, .mcp.json, run.sh; .monkey, .claude, scripts
            args += ["--ro-bind", str(Path(empty) / source), str(path)]
        if workspace == Path("/"):  # the workspace's bind covered them
            args += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", PRIVATE_TMP]
        args += ["--chdir", ws, "--", *argv]
        taken = _take(missing)  # recorded before bwrap makes them, so a kill -9 of monkey leaves none

        def cleanup() -> None:
            _give_back(taken)
            if empty:
                os.chmod(Path(empty) / "dir", 0o755)
                shutil.rmtree(empty, ignore_errors=True)

        return Prepared(args, {**env, "TMPDIR": PRIVATE_TMP}, cleanup=cleanup)

    def _landlock(self, argv: list[str], workspace: Path, env: Mapping[str, str]) -> Prepared:
        tmp = tempfile.mkdtemp(prefix="monkey-sandbox-")
        try:
            kept = self.protected(workspace) + self.missing(workspace)  # Landlock grants no new entry beside them
            ruleset = _landlock_ruleset(workspace, kept, Path(tmp), self.network)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

        def cleanup() -> None:
            ruleset.close()
            shutil.rmtree(tmp, ignore_errors=True)

        restrict = ruleset.restrict
        if self.net_namespace and not self.network:

            def restrict() -> None:
                _unshare_net()  # no network at all, not only TCP (raises: the command does not run)
                ruleset.restrict()

        return Prepared(list(argv), {**env, "TMPDIR": tmp}, preexec_fn=restrict, cleanup=cleanup)


_CLONE_NEWNET = 0x40000000


def _unshare_net() -> None:
    """Move the calling process into a new network namespace (only a loopback, down); raises OSError."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(_CLONE_NEWNET) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))


@functools.cache
def net_namespace_problem() -> str:
    """Why a command cannot get a network namespace of its own here (Landlock's sandbox); empty when it can."""
    if not sys.platform.startswith("linux"):
        return "network namespaces are a Linux feature"
    try:
        done = subprocess.run(
            ["true"], preexec_fn=_unshare_net, stdin=subprocess.DEVNULL, capture_output=True, timeout=_PROBE_TIMEOUT
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"no network namespace ({exc})"
    return "" if done.returncode == 0 else f"no network namespace (exit {done.returncode})"


_PLACEHOLDERS: dict[str, int] = {}
"""Mount points bubblewrap made for paths to keep that were not there, by how many running commands use them."""
_PLACEHOLDERS_LOCK = threading.Lock()


def _take(paths: list[Path]) -> list[Path]:
    """Count the commands using each placeholder; the first records it with the children's record
    before bubblewrap makes it (the guardian, or the next monkey, removes it were monkey killed)."""
    with _PLACEHOLDERS_LOCK:
        for path in paths:
            if str(path) not in _PLACEHOLDERS:
                children.hold_placeholder(path, "file" if path.suffix else "dir")
            _PLACEHOLDERS[str(path)] = _PLACEHOLDERS.get(str(path), 0) + 1
    return paths


def _give_back(paths: list[Path]) -> None:
    """The last command using a placeholder's mount point removes it, if it is still empty."""
    with _PLACEHOLDERS_LOCK:
        for path in paths:
            left = _PLACEHOLDERS.get(str(path), 1) - 1
            if left > 0:
                _PLACEHOLDERS[str(path)] = left
                continue
            _PLACEHOLDERS.pop(str(path), None)
            try:
                if path.is_dir() and not path.is_symlink():
                    path.rmdir()  # fails (and stays) when something outside the sandbox wrote into it
                elif path.is_file() and not path.is_symlink() and path.stat().st_size == 0:
                    path.unlink()
            except OSError:
                pass
            children.drop_placeholder(path)


def _writable(workspace: Path, protected: list[Path]) -> list[Path]:
    """What Landlock may grant of ``workspace``: every entry except the protected ones, split
    around them (a folder that holds a protected path is not granted itself, its other entries are)."""
    if not protected:
        return [workspace]
    granted: list[Path] = []

    def split(folder: Path) -> None:
        try:
            entries = sorted(folder.iterdir())
        except OSError:
            return
        for entry in entries:
            real = Path(os.path.realpath(entry))
            if any(real == p or _inside(real, p) for p in protected):
                continue  # protected, or a symlink into it
            if any(_inside(p, real) for p in protected):
                if real.is_dir() and not entry.is_symlink():
                    split(entry)
                continue
            granted.append(entry)

    split(workspace)
    return granted


def _landlock_ruleset(workspace: Path, protected: list[Path], tmp: Path, network: bool) -> Any:
    """A Landlock ruleset (not yet enforced) that handles writes, and TCP unless ``network``."""
    import landlockpy
    from landlockpy import AccessFS, AccessNet, Scope

    write = (
        AccessFS.WRITE_FILE
        | AccessFS.REMOVE_DIR
        | AccessFS.REMOVE_FILE
        | AccessFS.MAKE_CHAR
        | AccessFS.MAKE_DIR
        | AccessFS.MAKE_REG
        | AccessFS.MAKE_SOCK
        | AccessFS.MAKE_FIFO
        | AccessFS.MAKE_BLOCK
        | AccessFS.MAKE_SYM
        | AccessFS.REFER
        | AccessFS.TRUNCATE
    )
    net = AccessNet.NONE if network else AccessNet.BIND_TCP | AccessNet.CONNECT_TCP
    ruleset = landlockpy.Ruleset(handled_fs=write, handled_net=net, scoped=Scope.SIGNAL | Scope.ABSTRACT_UNIX_SOCKET)
    try:
        for path in [*_writable(workspace, protected), tmp]:
            access = write if path.is_dir() and not path.is_symlink() else AccessFS.WRITE_FILE | AccessFS.TRUNCATE
            try:
                ruleset.allow_path(path, access)
            except OSError:
                continue  # gone since it was listed, or a dangling symlink
        ruleset.allow_path("/dev", AccessFS.WRITE_FILE | AccessFS.TRUNCATE)  # /dev/null, /dev/tty
    except BaseException:
        ruleset.close()
        raise
    return ruleset


@functools.cache
def bubblewrap_problem() -> str:
    """Why bubblewrap cannot sandbox a command here; empty when ``bwrap ... true`` works."""
    if not sys.platform.startswith("linux"):
        return "bubblewrap works on Linux only"
    executable = shutil.which("bwrap")
    if executable is None:
        return "bubblewrap (bwrap) is not installed"
    try:
        done = subprocess.run(
            [*_bwrap_base(executable, False), "--", "true"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_PROBE_TIMEOUT,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap did not run: {exc}"
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip().splitlines()
        return f"bwrap fails here ({why[-1] if why else f'exit {done.returncode}'})"
    return ""


@functools.cache
def landlock_problem() -> str:
    """Why Landlock cannot sandbox a command here; empty when a restricted ``true`` runs."""
    if not sys.platform.startswith("linux"):
        return "Landlock is a Linux feature"
    try:
        import landlockpy
    except ImportError:
        return "the landlockpy package is not installed"
    if landlockpy.abi_version() < 1:
        return "this kernel has no Landlock"
    tmp = Path(tempfile.mkdtemp(prefix="monkey-probe-"))
    try:
        ruleset = _landlock_ruleset(tmp, [], tmp, False)
        try:
            done = subprocess.run(
                ["true"],
                preexec_fn=ruleset.restrict,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=_PROBE_TIMEOUT,
            )
        finally:
            ruleset.close()
    except Exception as exc:  # noqa: BLE001 - any failure means: no Landlock here
        return f"Landlock fails here ({exc})"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return "" if done.returncode == 0 else f"Landlock fails here (exit {done.returncode})"


@dataclass(frozen=True)
class Probe:
    """What :func:`probe` found: the sandbox to use (None: none), and what to tell the person once."""

    sandbox: Sandbox | None
    notice: str = ""
    problems: dict[str, str] = field(default_factory=dict)


_WITHOUT = "shell commands run without a sandbox, so every one needs a person's approval (--no-approval included)"


def probe(mode: str = "auto", *, network: bool = False, home: Path | None = None) -> Probe:
    """The sandbox ``shell.sandbox = mode`` gives here (each kind is probed once per process)."""
    if mode == "off":
        return Probe(None, f'the sandbox is off (shell.sandbox = "off" in your config): {_WITHOUT}')
    tried = ("bubblewrap", "landlock") if mode == "auto" else (mode,)
    problems: dict[str, str] = {}
    for kind in tried:
        problem = bubblewrap_problem() if kind == "bubblewrap" else landlock_problem()
        if not problem:
            executable = (shutil.which("bwrap") or "bwrap") if kind == "bubblewrap" else ""
            netns = kind == "landlock" and not network and not net_namespace_problem()
            sandbox = Sandbox(
                kind,  # type: ignore[arg-type]
                network=network,
                home=home,
                executable=executable,
                net_namespace=netns,
            )
            notice = ""
            if kind == "landlock":
                said = []
                if problems:  # auto fell back to Landlock
                    said.append(
                        f"shell commands run under Landlock ({problems['bubblewrap']}): files are "
                        "protected, but new entries in the workspace root cannot be made by a command"
                    )
                if not network and not netns:
                    said.append(
                        f"Landlock cuts only TCP here ({net_namespace_problem()}): UDP, DNS included, "
                        "stays open to sandboxed commands"
                    )
                notice = "; ".join(said)
            return Probe(sandbox, notice, problems)
        problems[kind] = problem
    why = "; ".join(problems.values())
    return Probe(None, f"no sandbox for shell commands here ({why}): {_WITHOUT}", problems)


class PendingProbe:
    """:func:`probe` run in a thread of its own, begun at once; :meth:`result` waits for it.

    Trying ``bwrap`` takes a while (a process in new namespaces); the session layer begins it
    while it resolves a setup, so the app draws its first frame meanwhile.
    """

    def __init__(self, mode: str = "auto", *, network: bool = False, home: Path | None = None) -> None:
        self._found: Probe | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._run, args=(mode, network, home), name="monkey-sandbox-probe", daemon=True
        )
        self._thread.start()

    def _run(self, mode: str, network: bool, home: Path | None) -> None:
        try:
            self._found = probe(mode, network=network, home=home)
        except BaseException as exc:  # noqa: BLE001 - raised again in the thread that waits
            self._error = exc

    def result(self) -> Probe:
        """What :func:`probe` found (its error, if it raised one)."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._found is not None
        return self._found
