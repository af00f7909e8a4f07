"""``@path`` mentions in a person's message: the files' contents go to the model with it.

A mention is ``@`` at the start of the message or after a space, followed by a path inside
the workspace. The path goes through the tools' workspace guard (symlinks resolved, the
workspace never left, ``.git`` and ``.monkey`` refused); a file is attached up to
:data:`MAX_FILE_BYTES`, an image (PNG, JPEG, GIF, WebP: :mod:`monkey.images`) as an image, also one
outside the workspace named by its full path (a screenshot the person pasted); a mention that names
no file is left as typed. Completion offers
the entries of one directory at a time, as git sees them (``.gitignore`` honoured).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from monkey.event_base import ToolImage
from monkey.tools.base import ToolError
from monkey.tools.gitignore import IgnoreRules
from monkey.tools.workspace import is_protected_name, relative, resolve_path

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_TOTAL_BYTES",
    "MAX_IMAGES",
    "Expanded",
    "expand_mentions",
    "mention_completions",
    "find_mentions",
]

MAX_FILE_BYTES = 100_000
"""The most bytes of one mentioned file sent to the model."""
MAX_TOTAL_BYTES = 300_000
"""The most bytes of all the files mentioned in one message."""
_MENTION = re.compile(r"(?:(?<=\s)|^)@(\S+)")
_TRAILING = ",.;:!?)]}'\""
"""Punctuation that may follow a mention in prose (``see @a.py.``) rather than belong to it."""


MAX_IMAGES = 20
"""The most images attached to one message."""


@dataclass
class Expanded:
    """A message with its mentions expanded."""

    prompt: str
    """What goes to the model: the message as typed, then each attached file."""
    attached: list[str] = field(default_factory=list)
    """The workspace-relative paths attached, in order."""
    notes: list[str] = field(default_factory=list)
    """One line per mention to tell the person (attached, cut, refused, left as typed)."""
    images: list[ToolImage] = field(default_factory=list)
    """The images attached (``@shot.png``): sent as images to a backend that takes them."""


def find_mentions(text: str) -> list[str]:
    """The paths mentioned in ``text``, as typed (trailing punctuation kept), in order."""
    return [m.group(1) for m in _MENTION.finditer(text)]


def _candidates(token: str) -> list[str]:
    """The token, then the token less trailing punctuation, one character at a time."""
    out = [token]
    while token and token[-1] in _TRAILING:
        token = token[:-1]
        if token:
            out.append(token)
    return out


def _read(path: Path, budget: int) -> tuple[str, str]:
    """The file's text (at most ``budget`` bytes) and a note when it was cut; ToolError for binary."""
    size = path.stat().st_size
    with path.open("rb") as f:
        data = f.read(max(0, budget))
    if b"\x00" in data[:8192]:
        raise ToolError("it is a binary file")
    cut = f" (the first {len(data):,} of {size:,} bytes)" if size > len(data) else ""
    return data.decode("utf-8", errors="replace"), cut


def _is_image(path: Path) -> bool:
    """An image by its name or by its first bytes (a PNG named ``shot`` is one too)."""
    from monkey.images import IMAGE_SUFFIXES, info_of

    try:
        return path.is_file() and (path.suffix.lower() in IMAGE_SUFFIXES or info_of(path) is not None)
    except OSError:
        return False


def _attach_image(result: Expanded, token: str, rel: str, path: Path) -> None:
    """Attach the image at ``path`` to ``result``, or say why not."""
    from monkey.images import ImageError, describe, load

    if len(result.images) >= MAX_IMAGES:
        result.notes.append(f"@{token} not attached: one message takes at most {MAX_IMAGES} images")
        return
    try:
        image, info = load(path)
    except ImageError as exc:
        result.notes.append(f"@{token} not attached: {exc}")
        return
    except OSError as exc:
        result.notes.append(f"@{token} not attached: {exc.strerror or exc}")
        return
    if image in result.images:
        return
    result.attached.append(rel)
    result.images.append(image)
    result.notes.append(f"attached {rel} ({describe(info)})")


def expand_mentions(
    text: str, workspace: Path, *, max_file: int = MAX_FILE_BYTES, max_total: int = MAX_TOTAL_BYTES
) -> Expanded:
    """Attach the files ``text`` mentions; the message itself stays as typed.

    Args:
        text: The message as the person typed it.
        workspace: The workspace root.
        max_file: The most bytes of one file attached.
        max_total: The most bytes of all files attached.

    Returns:
        The prompt for the model, the attached paths and a note per mention.
    """
    result = Expanded(prompt=text)
    blocks: list[str] = []
    left = max_total
    for token in find_mentions(text):
        found: Path | None = None
        refusal = ""
        for candidate in _candidates(token):
            try:
                path = resolve_path(workspace, candidate, for_write=False)
            except ToolError as exc:
                refusal = refusal or str(exc)
                continue
            if path.is_file():
                found = path
                break
            if path.is_dir():
                refusal = refusal or f"{candidate} is a directory; mention a file"
        if found is None and token.startswith(("/", "~/")) and _is_image(Path(token).expanduser()):
            _attach_image(result, token, str(Path(token).expanduser()), Path(token).expanduser())
            continue  # an image outside the workspace the person named by its full path (a screenshot)
        if found is None:
            if refusal:
                result.notes.append(f"@{token} not attached: {refusal}")
            else:
                result.notes.append(f"@{token}: no such file in the workspace; left as typed")
            continue
        rel = relative(workspace, found)
        if rel in result.attached:
            continue
        if _is_image(found):  # sent as an image, not as text
            _attach_image(result, token, rel, found)
            continue
        if left <= 0:
            result.notes.append(f"@{token} not attached: the files mentioned already fill {max_total:,} bytes")
            continue
        try:
            content, cut = _read(found, min(max_file, left))
        except ToolError as exc:
            result.notes.append(f"@{token} not attached: {exc}")
            continue
        except OSError as exc:
            result.notes.append(f"@{token} not attached: {exc.strerror or exc}")
            continue
        left -= len(content.encode("utf-8", errors="replace"))
        result.attached.append(rel)
        lines = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
        result.notes.append(f"attached {rel} ({lines} line{'s' if lines != 1 else ''}){cut}")
        note = f' truncated="{cut.strip(" ()")}"' if cut else ""
        blocks.append(f'<file path="{rel}"{note}>\n{content}{"" if content.endswith(chr(10)) else chr(10)}</file>')
    if blocks:
        result.prompt = text + "\n\nFiles mentioned in this message (@path):\n" + "\n".join(blocks)
    return result


def mention_completions(workspace: Path, prefix: str, *, limit: int = 200) -> list[str]:
    """Workspace paths that ``prefix`` (what follows ``@``) could become, one directory deep.

    Directories end in ``/``; ignored, protected and outside paths are never offered.
    """
    root = workspace.resolve()
    folder, _, start = prefix.rpartition("/")
    if any(is_protected_name(p) for p in folder.split("/") if p) or ".." in folder.split("/"):
        return []
    if prefix.startswith("/"):
        return []
    rules = IgnoreRules(root)
    if folder and rules.ignored_anywhere(folder, is_dir=True):
        return []
    try:
        base = resolve_path(root, folder or ".", for_write=False)
        with os.scandir(base) as it:
            entries = sorted(it, key=lambda e: e.name)
    except (ToolError, OSError):
        return []
    out: list[str] = []
    for entry in entries:
        if not entry.name.startswith(start) or is_protected_name(entry.name):
            continue
        if entry.name.startswith(".") and not start.startswith("."):
            continue  # hidden entries only when asked for
        rel = f"{folder}/{entry.name}" if folder else entry.name
        try:
            is_dir = entry.is_dir()
        except OSError:
            continue
        if rules.ignored(rel, is_dir=is_dir):
            continue
        out.append(rel + "/" if is_dir else rel)
        if len(out) >= limit:
            break
    return out
