"""An MCP tool's result as the model gets it.

Structured content when the server gave it, else the text of the content blocks (embedded
text resources included; an image, audio or binary resource becomes a short note, as no
backend takes media in a tool result yet). Output longer than the cap is cut; the whole of it
is saved under the monkey home and the model is told where. A result that does not fit the
protocol is a clear error, never a crash.
"""

from __future__ import annotations

import base64
import binascii
import json
from pathlib import Path
from typing import Any

__all__ = ["render_result", "cap_output", "DEFAULT_LIMIT"]

DEFAULT_LIMIT = 100_000
"""Characters of one MCP result given to the model (``[mcp] result_limit``)."""


def _size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data)


def _block(block: Any) -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        return f"[{kind} {getattr(block, 'mime_type', '?')}, {_size(str(block.data))} bytes: not shown, this backend takes no {kind} in tool results]"
    if kind == "resource":
        res = block.resource
        text = getattr(res, "text", None)
        if isinstance(text, str):
            return f"[resource {res.uri}]\n{text}"
        return f"[resource {res.uri} ({getattr(res, 'mime_type', None) or 'binary'}, {_size(str(getattr(res, 'blob', '')))} bytes): not shown]"
    if kind == "resource_link":
        return f"[resource link {block.uri}" + (f": {block.description}" if getattr(block, "description", None) else "") + "]"
    return f"[a {kind or 'content'} block monkey does not show]"


def render_result(result: Any) -> tuple[str, bool]:
    """The text of a ``CallToolResult`` and whether the server said it is an error."""
    structured = getattr(result, "structured_content", None)
    if structured is not None and not result.is_error:
        text = json.dumps(structured, ensure_ascii=False, indent=2, default=str)
    else:
        text = "\n".join(_block(b) for b in result.content or [])
    return text, bool(result.is_error)


def cap_output(text: str, limit: int, save_to: Path) -> str:
    """``text`` if it is at most ``limit`` characters, else its start and where the whole of it is."""
    if len(text) <= limit:
        return text
    try:
        save_to.parent.mkdir(parents=True, exist_ok=True)
        save_to.write_text(text, encoding="utf-8")
        where = f"the whole output is saved in {save_to}"
    except OSError as exc:
        where = f"the whole output could not be saved ({exc.strerror or exc})"
    return f"{text[:limit]}\n[output cut at {limit:,} of {len(text):,} characters; {where}]"
