"""A real ACP client (the SDK's own client side) driving ``monkey acp`` as a subprocess."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from tests.support.cli import monkey_env

# the acp SDK (pydantic models, seconds to import) is imported where it is used, not when a test module is collected

__all__ = ["EditorClient", "start_monkey", "kinds", "text_of"]


class EditorClient:
    """What an editor does: records every update, answers permission questions as told."""

    def __init__(self) -> None:
        self.updates: list[Any] = []
        self.questions: list[Any] = []
        self.answer = "allow_once"
        """The option id to answer with ("" for a cancelled question)."""
        self.changed = asyncio.Event()
        self.asked = asyncio.Event()
        self.before_answer: Callable[[], Awaitable[Any]] | None = None
        """Awaited before each answer (a test looks at the store, or holds the question open)."""

    async def request_permission(self, options: list[Any], session_id: str, tool_call: Any, **kwargs: Any):
        from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse

        self.questions.append((options, tool_call))
        self.asked.set()
        if self.before_answer is not None:
            await self.before_answer()
        outcome = (
            AllowedOutcome(outcome="selected", option_id=self.answer)
            if self.answer
            else DeniedOutcome(outcome="cancelled")
        )
        return RequestPermissionResponse(outcome=outcome)

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)
        self.changed.set()

    async def wait_for(self, test, timeout: float = 30.0) -> Any:  # type: ignore[no-untyped-def]
        """The first update ``test`` accepts, waiting for it (generous deadline, no sleeps)."""

        async def find() -> Any:
            while True:
                for update in self.updates:
                    if test(update):
                        return update
                self.changed.clear()
                await self.changed.wait()

        return await asyncio.wait_for(find(), timeout)

    async def write_text_file(self, **kwargs: Any) -> None:
        from acp import RequestError

        raise RequestError.method_not_found("fs/write_text_file")

    async def read_text_file(self, **kwargs: Any) -> None:
        from acp import RequestError

        raise RequestError.method_not_found("fs/read_text_file")

    async def create_terminal(self, **kwargs: Any) -> None:
        from acp import RequestError

        raise RequestError.method_not_found("terminal/create")


def kinds(updates: list[Any]) -> list[str]:
    """The ``sessionUpdate`` tag of each update."""
    return [u.session_update for u in updates]


def text_of(updates: list[Any], kind: str = "agent_message_chunk") -> str:
    """The text of every chunk of one kind, joined."""
    return "".join(u.content.text for u in updates if u.session_update == kind)


@contextlib.asynccontextmanager
async def start_monkey(home: Path, *args: str) -> AsyncIterator[tuple[Any, EditorClient, Any]]:
    """``python -m monkey acp ARGS`` with an initialized connection: (connection, client, process)."""
    from acp import PROTOCOL_VERSION, spawn_agent_process

    client = EditorClient()
    async with spawn_agent_process(client, sys.executable, "-m", "monkey", "acp", *args, env=monkey_env(home)) as (
        conn,
        process,
    ):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        yield conn, client, process


def prompt(text: str) -> list[Any]:
    """A prompt of one text block."""
    from acp import text_block

    return [text_block(text)]
