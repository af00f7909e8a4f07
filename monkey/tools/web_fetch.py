"""``web_fetch``: one web page as Markdown or text, for the model.

The call is a network access the permission engine decides (``web_fetch(domain:HOST)`` rules,
:mod:`monkey.permissions.rules`); :mod:`monkey.tools.web` fetches it, refusing private and
loopback addresses that no allow rule names. HTML becomes Markdown with ``markdownify``
(scripts, styles and the page's navigation dropped), capped at the context's read limit; with a
``prompt``, a page over the cap keeps first the paragraphs that mention the prompt's words.
Results are cached per URL for the life of the tool (one session).
"""

from __future__ import annotations

import asyncio
import re
from collections import OrderedDict
from typing import Annotated

import msgspec

from monkey.tools.base import Tool, ToolContext, ToolOutcome
from monkey.tools.errors import ToolError

__all__ = ["WebFetch", "WebFetchArgs", "to_text"]

CACHE_SIZE = 32
_TEXT_TYPES = (
    "text/",
    "application/json",
    "application/xml",
    "application/xhtml",
    "application/javascript",
    "application/x-yaml",
    "application/yaml",
    "application/toml",
)
_DROPPED = ["script", "style", "noscript", "iframe", "svg", "nav", "form", "button", "input", "template", "head"]
"""Elements dropped with what they hold: code, styling, the page's menus and forms."""
_WORD = re.compile(r"[^\W_]{3,}", re.UNICODE)


class WebFetchArgs(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Arguments of web_fetch."""

    url: Annotated[str, msgspec.Meta(description="The page to fetch: an http or https URL.")]
    prompt: Annotated[
        str,
        msgspec.Meta(description="What you are looking for on the page; a long page keeps the parts that mention it."),
    ] = ""


def _charset(content_type: str) -> str:
    found = re.search(r"charset=[\"']?([\w.:-]+)", content_type, re.I)
    return found.group(1) if found else "utf-8"


def to_text(body: bytes, content_type: str) -> str | None:
    """The page as Markdown (HTML) or text, or None when it is not text."""
    kind = content_type.split(";", 1)[0].strip().lower()
    try:
        text = body.decode(_charset(content_type), errors="replace")
    except LookupError:
        text = body.decode("utf-8", errors="replace")
    if kind in ("text/html", "application/xhtml+xml") or (
        not kind and text.lstrip()[:15].lower().startswith(("<!doctype html", "<html"))
    ):
        from bs4 import BeautifulSoup
        from markdownify import MarkdownConverter

        soup = BeautifulSoup(text, "html.parser")
        for tag in soup(_DROPPED):
            tag.decompose()
        markdown = MarkdownConverter(heading_style="ATX").convert_soup(soup)
        return re.sub(r"\n{3,}", "\n\n", markdown).strip()
    if kind.startswith(_TEXT_TYPES) or not kind:
        if "\0" in text[:4096]:
            return None
        return text
    return None


def _focused(text: str, prompt: str, limit: int) -> str:
    """At most ``limit`` characters of ``text``: the paragraphs sharing most words with ``prompt`` first
    chosen, then shown in the page's order."""
    wanted = {w.lower() for w in _WORD.findall(prompt)}
    paragraphs = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
    ranked = sorted(
        range(len(paragraphs)), key=lambda i: -len(wanted & {w.lower() for w in _WORD.findall(paragraphs[i])})
    )
    kept: set[int] = set()
    size = 0
    for i in ranked:
        if size + len(paragraphs[i]) + 2 > limit:
            continue
        kept.add(i)
        size += len(paragraphs[i]) + 2
    return "\n\n".join(paragraphs[i] for i in sorted(kept))


class WebFetch(Tool[WebFetchArgs]):
    """Fetch one web page (a network access: approved like any dangerous call, no checkpoint)."""

    name = "web_fetch"
    Args = WebFetchArgs
    dangerous = True
    read_only = True

    def __init__(self) -> None:
        self._cache: OrderedDict[str, str] = OrderedDict()

    def touched_paths(self, args: WebFetchArgs, ctx: ToolContext) -> list[str] | None:
        return []  # nothing in the workspace changes: no checkpoint

    def check(self, args: WebFetchArgs, ctx: ToolContext) -> None:
        from monkey.tools.web import check_url

        check_url(args.url.strip(), ())

    def preview(self, args: WebFetchArgs, ctx: ToolContext) -> str:
        return f"GET {args.url}" + (f"\nlooking for: {args.prompt}" if args.prompt else "")

    async def run(self, args: WebFetchArgs, ctx: ToolContext) -> ToolOutcome:
        """Fetch (or take from the cache), convert, cap."""
        from monkey.process import secret_values
        from monkey.tools.web import fetch

        url = args.url.strip()
        text = self._cache.get(url)
        if text is None:
            page = await fetch(url, named=ctx.net_named or (lambda host: False), secrets=secret_values())
            converted = await asyncio.to_thread(to_text, page.body, page.content_type)
            kind = page.content_type.split(";", 1)[0].strip() or "no content type"
            if converted is None:
                raise ToolError(
                    f"web_fetch: {page.url} is {kind} ({len(page.body)} bytes"
                    f"{' or more' if page.truncated else ''}), not text; it is not read"
                )
            if page.status >= 400:
                raise ToolError(f"web_fetch: {page.url} answered HTTP {page.status}:\n{converted[:2000]}")
            moved = f" (redirected to {page.url})" if page.url != url else ""
            cut = " (the first 5 MB of it)" if page.truncated else ""
            text = f"[{url}{moved}: HTTP {page.status}, {kind}{cut}]\n\n{converted}"
            self._cache[url] = text
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        limit = max(1000, ctx.read_limit)
        if len(text) <= limit:
            return ToolOutcome(output=text)
        head, _, body = text.partition("\n\n")
        if args.prompt.strip():
            shown = _focused(body, args.prompt, limit - len(head) - 200)
            return ToolOutcome(
                output=f"{head}\n\n{shown}\n\n[{len(shown)} of {len(body)} characters: the parts "
                f"that mention {args.prompt.strip()!r}; fetch with another prompt for others]"
            )
        return ToolOutcome(
            output=f"{text[:limit]}\n\n[first {limit} of {len(text)} characters; give a prompt "
            "to keep the parts you need]"
        )
