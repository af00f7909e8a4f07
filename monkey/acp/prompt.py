"""An ACP prompt (content blocks) as the message monkey sends the model.

Text is kept as typed. A ``resource_link`` to a file in the workspace becomes an ``@path``
mention, attached by :func:`monkey.session.mentions.expand_mentions` exactly as when a person
types it (workspace guard, size caps, protected paths refused). An embedded text resource
(the editor's own copy of a file, perhaps unsaved) is attached in the same ``<file>`` form,
cut at the same size. An image block goes with the message as an image (the checks of
:mod:`monkey.images`: format, size, sides). Audio and binary resources are not supported (the
capabilities say so); one that arrives anyway is named in a note and left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from acp.schema import (
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

from monkey.event_base import ToolImage
from monkey.session.mentions import MAX_FILE_BYTES, MAX_IMAGES, expand_mentions

__all__ = ["PromptText", "prompt_text", "workspace_path"]


@dataclass
class PromptText:
    """What the person sent, as typed (``typed``) and as the model gets it (``prompt``)."""

    typed: str
    prompt: str = ""
    notes: list[str] = field(default_factory=list)
    images: list[ToolImage] = field(default_factory=list)
    """The images the message carries (image blocks, then ``@`` mentions of image files)."""


def workspace_path(uri: str, workspace: Path) -> str | None:
    """The workspace-relative path a ``file://`` URI (or a plain path) names, else None."""
    parsed = urlparse(uri)
    if parsed.scheme not in ("", "file"):
        return None
    path = Path(unquote(parsed.path))
    if not path.is_absolute():
        path = workspace / path
    try:
        return path.resolve().relative_to(workspace).as_posix()
    except (ValueError, OSError):
        return None


def prompt_text(blocks: list[Any], workspace: Path) -> PromptText:
    """Join the blocks into one message; attach the files they link or embed."""
    parts: list[str] = []
    embedded: list[str] = []
    notes: list[str] = []
    images: list[ToolImage] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, ResourceContentBlock):
            rel = workspace_path(block.uri, workspace)
            if rel is not None and " " not in rel:
                parts.append(f" @{rel} ")
            else:
                parts.append(f" {block.uri} ")
                notes.append(f"{block.uri} not attached: not a file in the workspace")
        elif isinstance(block, EmbeddedResourceContentBlock) and isinstance(block.resource, TextResourceContents):
            res = block.resource
            name = workspace_path(res.uri, workspace) or res.uri
            data = res.text.encode("utf-8", errors="replace")
            text, cut = res.text, ""
            if len(data) > MAX_FILE_BYTES:
                text = data[:MAX_FILE_BYTES].decode("utf-8", errors="ignore")
                cut = f' truncated="the first {MAX_FILE_BYTES:,} of {len(data):,} bytes"'
            embedded.append(f'<file path="{name}"{cut}>\n{text}{"" if text.endswith(chr(10)) else chr(10)}</file>')
            parts.append(f" {name} ")
        elif isinstance(block, ImageContentBlock):
            _image(block, images, notes)
        else:
            kind = getattr(block, "type", type(block).__name__)
            notes.append(f"a {kind} block was left out: monkey reads text and files only")
    typed = "".join(parts).strip()
    expanded = expand_mentions(typed, workspace)
    prompt = expanded.prompt
    if embedded:
        prompt += "\n\nFiles attached to this message:\n" + "\n".join(embedded)
    images += [i for i in expanded.images if i not in images]
    if len(images) > MAX_IMAGES:
        notes.append(f"{len(images) - MAX_IMAGES} images left out: one message takes at most {MAX_IMAGES}")
    return PromptText(
        typed, prompt, notes + [n for n in expanded.notes if not n.startswith("attached ")], images[:MAX_IMAGES]
    )


def _image(block: ImageContentBlock, images: list[ToolImage], notes: list[str]) -> None:
    """Add the image ``block`` carries to ``images``, or say in ``notes`` why it is left out."""
    import base64
    import binascii

    from monkey.images import ImageError, from_bytes

    try:
        data = base64.b64decode(block.data, validate=True)
        image, _ = from_bytes(data)
    except (binascii.Error, ValueError) as exc:  # ImageError is a ValueError
        why = exc if isinstance(exc, ImageError) else "its data is not base64"
        notes.append(f"an image ({block.mime_type}) was left out: {why}")
        return
    images.append(image)
