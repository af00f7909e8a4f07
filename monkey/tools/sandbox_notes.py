"""What the model is told when the sandbox refused a command something (see :mod:`monkey.tools.sandbox`).

A program that hits the sandbox says "Read-only file system", "Permission denied" or a
network error in its own words; without a note the model would retry, or try a cleverer way
round. :func:`explain` reads the failed command's output and says what the sandbox denied and
who can allow it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = ["explain"]

_FS_DENIED = re.compile(r"Read-only file system|Permission denied|EROFS|EACCES", re.I)
_NET_DENIED = re.compile(
    r"Network is unreachable|Temporary failure in name resolution|Could not resolve host|"
    r"Name or service not known|No address associated with hostname|getaddrinfo failed|"
    r"Connection refused|ENETUNREACH|ECONNREFUSED|EAI_AGAIN|nodename nor servname",
    re.I,
)
_PATH = re.compile(r"""(?:^|[\s'"`‘’“(\[=:])((?:/|\.{1,2}/|[\w.-]+/)[^\s'"`‘’“”:,;()\[\]]*|\.git|\.monkey)""")
_SOCKET_WORDS = re.compile(r"connect|socket|https?:|curl|wget", re.I)
_QUOTED_NAME = re.compile(r"""['"‘“]([^'"‘’“”/\s]+)['"’”]""")
"""A bare file name in quotes (``Permission denied: 'new.txt'``)."""
_ASK = (
    "writing there needs a person's approval: a command a person approved is offered to them again, to run "
    "outside the sandbox; or ask the user to run it themselves with !command"
)


def _where(token: str, workspace: Path, home: Path | None) -> str:
    """Which protected place a path named in an error is, or empty."""
    path = Path(os.path.normpath(token if os.path.isabs(token) else workspace / token))
    for name in (".git", ".monkey"):
        top = workspace / name
        if path == top or top in path.parents:
            return f"{name}/ (read-only in the sandbox)"
    if home is not None and (path == home or home in path.parents):
        return f"monkey's home {home} (read-only in the sandbox)"
    if path != workspace and workspace not in path.parents and not str(path).startswith("/dev/"):
        return f"{path} (outside the workspace: only the workspace and $TMPDIR are writable)"
    return ""


def explain(output: str, workspace: Path, *, kind: str, network: bool, home: Path | None = None) -> str:
    """A note for the model when ``output`` shows the ``kind`` sandbox denied something; empty otherwise."""
    places: list[str] = []
    root_entry = False
    fs_denied = False
    bare_denial = False  # a denial naming no path: Landlock refuses a TCP connection with EACCES
    for line in output.splitlines():
        if not _FS_DENIED.search(line):
            continue
        fs_denied = True
        tokens = [m.group(1).rstrip(".") for m in _PATH.finditer(line)]
        tokens += [m.group(1) for m in _QUOTED_NAME.finditer(line)]
        bare_denial = bare_denial or not tokens
        for token in tokens:
            place = _where(token, workspace, home)
            if place and place not in places:
                places.append(place)
            elif not place and kind == "landlock":
                path = Path(os.path.normpath(token if os.path.isabs(token) else workspace / token))
                root_entry = root_entry or (path.parent == workspace and not path.exists())
    notes: list[str] = []
    if places:
        notes.append(f"the sandbox kept this command from writing {', '.join(places)}; {_ASK}")
    elif root_entry:
        notes.append(
            "under the Landlock sandbox a command cannot create new entries directly in the workspace "
            "root (that would open .git/ too): create the file with file_write first, or ask a person"
        )
    elif fs_denied and re.search(r"Read-only file system|EROFS", output):
        notes.append(
            "this command runs in a sandbox: only the workspace (not its .git/ or .monkey/) and a "
            f"private temporary folder ($TMPDIR) are writable; {_ASK}"
        )
    landlock_net = kind == "landlock" and bare_denial and _SOCKET_WORDS.search(output)
    if not network and (_NET_DENIED.search(output) or landlock_net):
        notes.append(
            "this command runs in a sandbox without network access (the user can allow it with "
            "`sandbox_network = true` under [shell] in their own config)"
        )
    return "".join(f"[sandbox: {note}]\n" for note in notes)
