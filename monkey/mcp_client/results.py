"""An MCP tool's result as the model gets it.

Structured content when the server gave it, else the text of the content blocks (embedded
text resources included). An image block (PNG, JPEG, GIF or WebP, at most
:data:`MAX_IMAGE_BYTES`) is carried along as a :class:`~monkey.events.ToolImage` and named in
the text where it stood; a backend that takes images in tool results passes it on (the
Anthropic API), the others say they did not (:func:`monkey.backends.convert.images_note`).
Audio, another image type, a larger image or a binary resource becomes a short note. Output
longer than the cap is cut; the whole of it is saved under the monkey home and the model is
told where. A result that does not fit the protocol is a clear error, never a crash.

A message far longer than the cap is cut as it arrives (:func:`cut_long_strings`, called by the
stdio transport before the SDK reads it): each string longer than the cap is saved whole and
only its start kept, so a 30 MB result never becomes several copies of itself in memory.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from monkey.events import ToolImage

__all__ = [
    "render_result",
    "cap_output",
    "cut_long_strings",
    "cuts_of",
    "DEFAULT_LIMIT",
    "IMAGE_TYPES",
    "MAX_IMAGE_BYTES",
    "Rendered",
    "CUT_KEY",
]

CUT_KEY = "monkey/cut"
"""The key in a result's ``_meta`` under which the transport lists the strings it cut."""

DEFAULT_LIMIT = 100_000
"""Characters of one MCP result given to the model (``[mcp] result_limit``)."""


IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""Image types passed on to a backend (those the Anthropic API takes)."""
MAX_IMAGE_BYTES = 5 * 1024 * 1024
"""The largest image passed on (the Anthropic API's limit per image)."""


class Rendered(NamedTuple):
    """An MCP result as the model gets it."""

    text: str
    is_error: bool
    images: list[ToolImage]


def _size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data)


def _image(block: Any, images: list[ToolImage]) -> str:
    """An image block kept for the backend (and named in the text), or why it is not."""
    mime = str(getattr(block, "mime_type", "") or "?")
    data = str(block.data)
    try:
        size = len(base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        return f"[image {mime}: not passed on, its data is not valid base64]"
    if mime not in IMAGE_TYPES:
        return f"[image {mime}, {size} bytes: not passed on, only PNG, JPEG, GIF and WebP are]"
    if size > MAX_IMAGE_BYTES:
        return f"[image {mime}, {size} bytes: not passed on, larger than {MAX_IMAGE_BYTES} bytes]"
    images.append(ToolImage(media_type=mime, data=data))
    return f"[image {len(images)}: {mime}, {size} bytes]"


def _block(block: Any, images: list[ToolImage]) -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(block.text)
    if kind == "image":
        return _image(block, images)
    if kind == "audio":
        return (
            f"[audio {getattr(block, 'mime_type', '?')}, {_size(str(block.data))} bytes: not passed on, "
            "no backend takes audio in tool results]"
        )
    if kind == "resource":
        res = block.resource
        text = getattr(res, "text", None)
        if isinstance(text, str):
            return f"[resource {res.uri}]\n{text}"
        mime = getattr(res, "mime_type", None) or "binary"
        return f"[resource {res.uri} ({mime}, {_size(str(getattr(res, 'blob', '')))} bytes): not shown]"
    if kind == "resource_link":
        return (
            f"[resource link {block.uri}"
            + (f": {block.description}" if getattr(block, "description", None) else "")
            + "]"
        )
    return f"[a {kind or 'content'} block monkey does not show]"


def render_result(result: Any) -> Rendered:
    """The text of a ``CallToolResult``, whether the server said it is an error, and its images."""
    images: list[ToolImage] = []
    structured = getattr(result, "structured_content", None)
    if structured is not None and not result.is_error:
        text = json.dumps(structured, ensure_ascii=False, indent=2, default=str)
        notes = [_image(b, images) for b in result.content or [] if getattr(b, "type", "") == "image"]
        text = "\n".join([text, *notes])
    else:
        text = "\n".join(_block(b, images) for b in result.content or [])
    return Rendered(text, bool(result.is_error), images)


def _save(text: str, save_to: Path) -> str:
    try:
        save_to.parent.mkdir(parents=True, exist_ok=True)
        save_to.write_text(text, encoding="utf-8")
        return f"the whole output is saved in {save_to}"
    except OSError as exc:
        return f"the whole output could not be saved ({exc.strerror or exc})"


def cut_long_strings(message: Any, limit: int, save_to: Callable[[], Path]) -> None:
    """Cut, in place, each string of a JSON-RPC response's ``result`` longer than ``limit``
    (images' data, which are passed on or refused whole, excepted): the whole string saved to a
    new ``save_to()`` file, listed with its length in ``result._meta["monkey/cut"]``."""
    result = message.get("result") if isinstance(message, dict) else None
    if not isinstance(result, dict):
        return
    cuts: list[dict[str, Any]] = []

    def walk(node: Any) -> Any:
        if isinstance(node, str) and len(node) > limit:
            path = save_to()
            cuts.append({"chars": len(node), "saved": _save(node, path)})
            return node[:limit]
        if isinstance(node, dict):
            if node.get("type") in ("image", "audio") or "blob" in node:
                return node
            for key, value in node.items():
                node[key] = walk(value)
        elif isinstance(node, list):
            for i, value in enumerate(node):
                node[i] = walk(value)
        return node

    for key in ("content", "structuredContent"):
        if key in result:
            result[key] = walk(result[key])
    if cuts:
        meta = result.get("_meta")
        meta = meta if isinstance(meta, dict) else {}
        result["_meta"] = {**meta, CUT_KEY: cuts}


def cuts_of(result: Any) -> list[dict[str, Any]]:
    """What the transport cut of ``result`` (a ``CallToolResult``), by :func:`cut_long_strings`."""
    meta = getattr(result, "meta", None)
    cuts = meta.get(CUT_KEY) if isinstance(meta, dict) else None
    return [c for c in cuts if isinstance(c, dict)] if isinstance(cuts, list) else []


def cap_output(text: str, limit: int, save_to: Path, cuts: list[dict[str, Any]] | None = None) -> str:
    """``text`` if it is at most ``limit`` characters, else its start and where the whole of it is
    (``cuts``: strings the transport already cut, each saved whole)."""
    if cuts:
        said = "; ".join(f"{int(c.get('chars', 0)):,} characters, {c.get('saved', '')}" for c in cuts)
        return f"{text[:limit]}\n[output cut at {limit:,} characters ({said})]"
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[output cut at {limit:,} of {len(text):,} characters; {_save(text, save_to)}]"
