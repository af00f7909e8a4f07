"""The connection to one language server: pygls's client over a child that dies with monkey.

Imported only when a server starts (pygls and lsprotocol are the ``lsp`` extra). The child is
started like every child of monkey (:func:`monkey.process.spawn`: its own process group, the
parent-death signal, the tag the guardian kills by), with a scrubbed environment and its stderr
thrown away (a chatty server never blocks on a full pipe).
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import Any, Optional, Union

from lsprotocol import types as lsp
from pygls.io_ import run_async
from pygls.lsp.client import BaseLanguageClient
from pygls.protocol import default_converter

from monkey.process import scrub_env, spawn, stop_group

__all__ = ["Connection", "ServerGone"]

_log = logging.getLogger(__name__)


class ServerGone(Exception):
    """The server exited (or could not be started)."""


def _converter() -> Any:
    """pygls's converter, with the hook lsprotocol 2025.0.0 lacks for an optional notebook filter (the
    ``notebookSelector`` ``ruff server`` announces: ``{"cells": [...], "notebook": "*"}`` fails without it)."""
    converter = default_converter()
    kinds = (
        lsp.NotebookDocumentFilterNotebookType,
        lsp.NotebookDocumentFilterScheme,
        lsp.NotebookDocumentFilterPattern,
    )

    def notebook_filter(value: Any, _: type) -> Any:
        if value is None or isinstance(value, str):
            return value
        kind = kinds[0] if "notebookType" in value else kinds[1] if "scheme" in value else kinds[2]
        return converter.structure(value, kind)

    converter.register_structure_hook(Optional[Union[str, *kinds]], notebook_filter)  # noqa: UP007, UP045 (the typing form lsprotocol declares)
    return converter


class _Client(BaseLanguageClient):
    """pygls's client, told where the server's answers and pushed diagnostics go."""

    def __init__(self) -> None:
        super().__init__("monkey", "1", converter_factory=_converter)
        self.pushed: dict[str, list[tuple[int | None, list[lsp.Diagnostic]]]] = {}
        self.news = asyncio.Event()

        @self.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def published(params: lsp.PublishDiagnosticsParams) -> None:
            self.pushed.setdefault(params.uri, []).append((params.version, list(params.diagnostics)))
            self.news.set()

        @self.feature(lsp.WORKSPACE_CONFIGURATION)
        def configuration(params: lsp.ConfigurationParams) -> list[Any]:
            return [None for _ in params.items]

    async def attach(self, proc: asyncio.subprocess.Process) -> None:
        """Talk to ``proc`` over its stdin and stdout (what ``start_io`` does, with monkey's own child)."""
        assert proc.stdin is not None and proc.stdout is not None
        self.protocol.set_writer(proc.stdin)
        self._server = proc
        reader = asyncio.create_task(
            run_async(
                stop_event=self._stop_event,
                reader=proc.stdout,
                protocol=self.protocol,
                logger=_log,
                error_handler=self.report_server_error,
            )
        )
        self._async_tasks.extend([reader, asyncio.create_task(self._server_exit())])


class Connection:
    """One running server: initialized, its documents opened and closed per check."""

    def __init__(self, workspace: Path, command: tuple[str, ...]) -> None:
        self.workspace = workspace
        self.command = command
        self.client = _Client()
        self.proc: asyncio.subprocess.Process | None = None
        self.pull = False
        self.versions: dict[str, int] = {}

    @property
    def exited(self) -> int | None:
        """The server's exit status once it exited, else None."""
        return None if self.proc is None else self.proc.returncode

    async def start(self) -> None:
        """Start and initialize the server.

        Raises:
            OSError: The program cannot be started.
            ServerGone: It exited before it answered.
        """
        self.proc = await spawn(
            list(self.command),
            env=scrub_env(os.environ),
            cwd=self.workspace,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        await self.client.attach(self.proc)
        root = self.workspace.as_uri()
        caps = lsp.ClientCapabilities(
            text_document=lsp.TextDocumentClientCapabilities(
                diagnostic=lsp.DiagnosticClientCapabilities(),
                publish_diagnostics=lsp.PublishDiagnosticsClientCapabilities(version_support=True),
            )
        )
        result = await self._ask(
            self.client.initialize_async(
                lsp.InitializeParams(
                    capabilities=caps,
                    process_id=os.getpid(),
                    root_uri=root,
                    workspace_folders=[lsp.WorkspaceFolder(uri=root, name=self.workspace.name)],
                )
            )
        )
        self.pull = result.capabilities.diagnostic_provider is not None
        self.client.initialized(lsp.InitializedParams())

    async def _ask(self, request: Any) -> Any:
        """The answer to ``request``, or :class:`ServerGone` when the server exits first."""
        asked = asyncio.ensure_future(request)
        gone = asyncio.ensure_future(self.proc.wait()) if self.proc is not None else None
        try:
            await asyncio.wait([t for t in (asked, gone) if t is not None], return_when=asyncio.FIRST_COMPLETED)
        finally:
            if gone is not None:
                gone.cancel()
            if not asked.done():
                asked.cancel()
        if asked.cancelled() or not asked.done():
            raise ServerGone(f"exited with status {self.exited}")
        try:
            return asked.result()
        except RuntimeError as exc:  # pygls fails what is pending when the server exits
            raise ServerGone(str(exc)) from None

    async def diagnostics(self, path: Path, language: str, text: str) -> list[lsp.Diagnostic]:
        """The server's diagnostics of ``path`` holding ``text`` (opened, or changed to it)."""
        uri = path.as_uri()
        version = self.versions.get(uri, 0) + 1
        self.versions[uri] = version
        self.client.news.clear()
        seen = len(self.client.pushed.get(uri, []))
        if version == 1:
            self.client.text_document_did_open(
                lsp.DidOpenTextDocumentParams(
                    text_document=lsp.TextDocumentItem(uri=uri, language_id=language, version=version, text=text)
                )
            )
        else:
            self.client.text_document_did_change(
                lsp.DidChangeTextDocumentParams(
                    text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
                    content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)],
                )
            )
        if self.pull:
            report = await self._ask(
                self.client.text_document_diagnostic_async(
                    lsp.DocumentDiagnosticParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
                )
            )
            return list(getattr(report, "items", []) or [])
        while True:  # pushed: the first publication for this version (or after it was sent, unversioned)
            for published_version, items in self.client.pushed.get(uri, [])[seen:]:
                if published_version in (None, version):
                    return items
            if self.exited is not None:
                raise ServerGone(f"exited with status {self.exited}")
            self.client.news.clear()
            waiter = asyncio.create_task(self.client.news.wait())
            gone = asyncio.create_task(self.proc.wait()) if self.proc is not None else None
            try:
                await asyncio.wait([t for t in (waiter, gone) if t is not None], return_when=asyncio.FIRST_COMPLETED)
            finally:
                waiter.cancel()
                if gone is not None:
                    gone.cancel()

    def close_document(self, path: Path) -> None:
        """Forget ``path`` (the next check opens it afresh with what it then holds)."""
        uri = path.as_uri()
        if self.versions.pop(uri, None) is not None and self.exited is None:
            self.client.text_document_did_close(
                lsp.DidCloseTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
            )
        self.client.pushed.pop(uri, None)

    async def stop(self, grace: float = 1.0, *, polite: bool = True) -> None:
        """Ask the server to shut down (briefly; not ``polite``: a server that hung is not asked),
        then stop its process group whatever it did."""
        proc = self.proc
        if proc is None:
            return
        try:
            if polite and proc.returncode is None:
                await asyncio.wait_for(self.client.shutdown_async(None), grace)
                self.client.exit(None)
        except Exception:  # noqa: BLE001 (a server that will not shut down is stopped)
            pass
        self.client._stop_event.set()
        await stop_group(proc, grace)
        for task in self.client._async_tasks:
            task.cancel()
        await asyncio.gather(*self.client._async_tasks, return_exceptions=True)
