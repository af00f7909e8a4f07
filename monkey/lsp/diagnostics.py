"""What an edit newly broke, asked of the file's language server.

One :class:`Diagnostics` per session: a server per language, started at the first edit of one of
its files and kept until :meth:`Diagnostics.aclose` (the session's end). For each edit the server
is shown the file as it was, then as it is, and only the errors and warnings the edit added are
reported (counted by severity, code and message, so the ones the edit only moved are not). A
server that cannot start, exits, or does not answer within its ``timeout`` is skipped with a note
(in the result for a configured server; for a built-in one only in the event) and not asked again
this session: the edit itself is done already and never waits longer.
"""

from __future__ import annotations

import asyncio
import importlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from monkey.event_base import Diagnostic
from monkey.lsp.servers import ServerSpec

if TYPE_CHECKING:
    from monkey.lsp.client import Connection

__all__ = ["Diagnostics", "Found", "MAX_LINES", "render"]

MAX_LINES = 20
"""Diagnostics told to the model after one edit; the rest are counted."""

_SEVERITY: dict[int, Literal["error", "warning"]] = {1: "error", 2: "warning"}


@dataclass
class Found:
    """What the server said about one edit: the new diagnostics, or why it said nothing."""

    server: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    note: str = ""
    quiet: bool = False
    """The note is for front ends only: a built-in server nobody configured is best effort, and the model
    is not told about it (a configured server's note is in the result)."""


def render(rel: str, found: Found) -> str:
    """The lines the model reads: ``path:line:col: severity: message [code]``, capped, or the note."""
    if found.note:
        return "" if found.quiet else f"[diagnostics: {found.note}]"
    if not found.diagnostics:
        return ""
    lines = [
        f"{rel}:{d.line}:{d.column}: {d.severity}: {d.message}" + (f" [{d.code}]" if d.code else "")
        for d in found.diagnostics[:MAX_LINES]
    ]
    if len(found.diagnostics) > MAX_LINES:
        lines.append(f"... and {len(found.diagnostics) - MAX_LINES} more")
    return f"New problems the {found.server} language server reports after this change:\n" + "\n".join(lines)


def _record(item: Any) -> Diagnostic | None:
    severity = _SEVERITY.get(int(item.severity) if item.severity is not None else 1)
    if severity is None:
        return None
    code = "" if item.code is None else str(item.code)
    start = item.range.start
    message = "; ".join(" ".join(line.split()) for line in str(item.message).splitlines() if line.strip())
    return Diagnostic(
        line=start.line + 1,
        column=start.character + 1,
        severity=severity,
        message=message,
        code=code,
        source=item.source or "",
    )


def new_ones(before: list[Diagnostic], after: list[Diagnostic]) -> list[Diagnostic]:
    """The diagnostics of ``after`` that ``before`` did not have (an edit moves lines: position is no key)."""
    had = Counter((d.severity, d.code, d.message) for d in before)
    fresh: list[Diagnostic] = []
    for d in after:
        key = (d.severity, d.code, d.message)
        if had[key]:
            had[key] -= 1
        else:
            fresh.append(d)
    return fresh


class Diagnostics:
    """The language servers of one session."""

    def __init__(self, workspace: Path, specs: list[ServerSpec]) -> None:
        self.workspace = workspace
        self.specs = specs
        self.running: dict[str, Connection] = {}
        self.off: set[str] = set()
        """Servers skipped for the rest of the session (their note was said)."""
        self.lock = asyncio.Lock()
        self.stopping: set[asyncio.Task[None]] = set()
        """Servers being stopped after they were skipped (the session's end waits for them)."""

    def server_for(self, rel: str) -> ServerSpec | None:
        """The server that checks ``rel``, if any is configured (or built in and installed)."""
        return next((s for s in self.specs if s.handles(rel)), None)

    async def check(self, rel: str, before: bytes | None, after: bytes | None) -> Found | None:
        """The new errors and warnings of the file ``rel`` after an edit from ``before`` to ``after``
        (None: no server checks it, it was deleted, or its server is off)."""
        spec = self.server_for(rel)
        if spec is None or after is None or spec.name in self.off:
            return None
        async with self.lock:  # one edit at a time per session: a server sees one document's story at once
            if spec.name not in self.running:  # the client library, loaded once, off the event loop and outside
                await asyncio.to_thread(importlib.import_module, "monkey.lsp.client")  # the server's bound
            try:
                return await asyncio.wait_for(self._ask(spec, rel, before, after), spec.timeout)
            except TimeoutError:
                return await self._skip(
                    spec, f"the {spec.shown} did not answer within {spec.timeout:g} s; skipped for this session"
                )
            except OSError as exc:
                return await self._skip(spec, f"cannot start the {spec.shown}: {exc.strerror or exc}")
            except Exception as exc:  # noqa: BLE001 (a server's failure never fails the edit)
                from monkey.lsp.client import ServerGone

                why = f"exited ({exc})" if isinstance(exc, ServerGone) else f"failed: {type(exc).__name__}: {exc}"
                return await self._skip(spec, f"the {spec.shown} {why}; skipped for this session")

    async def _skip(self, spec: ServerSpec, note: str) -> Found:
        self.off.add(spec.name)
        conn = self.running.pop(spec.name, None)
        if conn is not None:  # stopped beside the session, so the edit's result does not wait for it
            task = asyncio.create_task(conn.stop(0.5, polite=False))
            self.stopping.add(task)
            task.add_done_callback(self.stopping.discard)
        return Found(spec.name, note=note, quiet=spec.builtin)

    async def _ask(self, spec: ServerSpec, rel: str, before: bytes | None, after: bytes) -> Found:
        conn = self.running.get(spec.name)
        if conn is None:
            from monkey.lsp.client import Connection

            conn = Connection(self.workspace, spec.command)
            self.running[spec.name] = conn
            await conn.start()
        path = self.workspace / rel
        try:
            old: list[Diagnostic] = []
            if before is not None:
                old = self._keep(await conn.diagnostics(path, spec.language, _text(before)))
            new = self._keep(await conn.diagnostics(path, spec.language, _text(after)))
        finally:
            if conn.exited is None:
                conn.close_document(path)
        return Found(spec.name, sorted(new_ones(old, new), key=lambda d: (d.line, d.column)))

    @staticmethod
    def _keep(items: list[Any]) -> list[Diagnostic]:
        return [d for d in map(_record, items) if d is not None]

    async def aclose(self) -> None:
        """Stop every server (the session ends)."""
        running, self.running = self.running, {}
        await asyncio.gather(*(conn.stop() for conn in running.values()), *self.stopping, return_exceptions=True)


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")
