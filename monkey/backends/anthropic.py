"""The Anthropic Messages API, through the official ``anthropic`` SDK (async, streaming).

The SDK is imported when the first call is made, never at start-up. Its own retries are
off (``max_retries=0``): :class:`~monkey.backends.retry.RetryingBackend` retries instead,
so that every retry is announced as an event and a broken stream is not shown twice.

What is streamed: ``text_delta`` for text, ``thinking_delta`` for extended thinking (when
``thinking_budget`` is set), tool calls accumulated from ``input_json_delta`` pieces, and
at the end one ``message_completed`` and one ``usage`` with the cache tokens and the cost.
Prompt caching puts breakpoints on the system prompt, the tool list and the tail of the
conversation (see :mod:`monkey.backends.convert`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

from monkey.backends.base import API, BackendError, ModelCheck
from monkey.backends.convert import anthropic_tools, bad_arguments, last_turn_signed, to_anthropic
from monkey.backends.errors import classify_status, make_error, network_error, parse_retry_after
from monkey.backends.prices import Price, builtin_prices, cost_usd, find_price
from monkey.events import Event, MessageCompleted, TextDelta, ThinkingDelta, ToolCallSpec, Usage
from monkey.messages import ModelRequest

__all__ = ["AnthropicBackend", "DEFAULT_MODEL", "translate_error"]

DEFAULT_MODEL = "claude-sonnet-4-6"
"""The model used when none is named (a current Sonnet; the SDK marks claude-sonnet-4-5 deprecated)."""

_STOP_REASONS = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "end_turn",
    "pause_turn": "end_turn",
    "refusal": "refusal",
}


def _sdk() -> Any:
    try:
        import anthropic
    except ImportError:
        raise BackendError(
            "the Anthropic backend needs the anthropic package: pip install anthropic", kind="missing_dependency"
        ) from None
    return anthropic


def translate_error(exc: BaseException, *, model: str, url: str = "", key_hint: str = "") -> BackendError:
    """The :class:`BackendError` for an exception of the SDK (or of its HTTP client)."""
    anthropic = _sdk()
    hint = key_hint or "--api-key or ANTHROPIC_API_KEY"
    if isinstance(exc, anthropic.APIStatusError):
        body = exc.body if isinstance(exc.body, dict) else {}
        error = body.get("error")
        error = error if isinstance(error, dict) else {}
        detail = str(error.get("message") or (exc.body if isinstance(exc.body, str) else "") or "")
        status = exc.status_code if exc.status_code >= 400 else None  # an `error` event inside a 200 stream
        headers = exc.response.headers if exc.response is not None else None
        return classify_status(
            status,
            provider="Anthropic API",
            model=model,
            error_type=str(error.get("type") or ""),
            detail=detail,
            retry_after=parse_retry_after(headers),
            key_hint=hint,
            url=url,
        )
    if isinstance(exc, anthropic.APITimeoutError):
        return network_error("Anthropic API", "the request timed out or the stream broke", url=url)
    if isinstance(exc, anthropic.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        what = f"connection failed ({type(cause).__name__}: {cause})" if cause else "connection failed"
        return network_error("Anthropic API", what, url=url)
    if isinstance(exc, (anthropic.APIResponseValidationError, ValueError)):
        reason = " ".join(str(exc).split())[:200]
        return make_error("server_error", f"Anthropic API sent a stream event monkey cannot read ({reason})")
    name = type(exc).__module__.split(".")[0]
    if name in ("httpx2", "httpx", "httpcore2", "httpcore", "h11", "anyio") or isinstance(exc, OSError):
        return network_error("Anthropic API", f"the stream broke ({type(exc).__name__}: {exc})", url=url)
    return make_error("server_error", f"Anthropic API: unexpected {type(exc).__name__}: {exc}")


class AnthropicBackend:
    """Claude through the Anthropic Messages API.

    Args:
        api_key: the API key; required (``ANTHROPIC_API_KEY`` is read by the caller).
        model: the model id; default :data:`DEFAULT_MODEL`.
        base_url: another endpoint speaking the same API (a proxy, a test server).
        max_tokens: the most output tokens per call (a request may ask for fewer).
        thinking_budget: tokens of extended thinking per call; 0 turns it off.
        prompt_cache: whether to set ``cache_control`` breakpoints.
        timeout: seconds for a whole call.
        prices: per-model prices overriding the built-in table.
    """

    capabilities = API
    context_window = 0
    """A model: streams a message; the loop runs the tools and keeps the context."""
    name = "anthropic"

    def __init__(
        self,
        *,
        api_key: str,
        model: str | None = None,
        base_url: str | None = None,
        max_tokens: int = 8192,
        thinking_budget: int = 0,
        prompt_cache: bool = True,
        timeout: float = 600.0,
        prices: Mapping[str, Price] | None = None,
        key_hint: str = "--api-key or ANTHROPIC_API_KEY",
    ) -> None:
        if not api_key:
            raise make_error("authentication", f"no Anthropic API key: set {key_hint}")
        self.model = model or DEFAULT_MODEL
        self.base_url = base_url or ""
        self.max_tokens = max_tokens
        self.thinking_budget = thinking_budget
        self.prompt_cache = prompt_cache
        self.timeout = timeout
        self.key_hint = key_hint
        self._api_key = api_key
        self._prices = {**builtin_prices("anthropic"), **(prices or {})}
        self._client: Any = None

    def client(self) -> Any:
        """The SDK's async client (made, and the SDK imported, on first use)."""
        if self._client is None:
            anthropic = _sdk()
            self._client = anthropic.AsyncAnthropic(
                api_key=self._api_key, base_url=self.base_url or None, max_retries=0, timeout=self.timeout
            )
        return self._client

    async def check_model(self) -> ModelCheck:
        """Whether the API knows :attr:`model` (``GET /v1/models/{model}``), before ``/model`` switches."""
        anthropic = _sdk()
        try:
            await self.client().models.retrieve(self.model)
        except anthropic.NotFoundError:
            return ModelCheck(False, f"the Anthropic API has no model {self.model!r}")
        except Exception as exc:  # noqa: BLE001 - any failure means only that it could not be checked
            error = translate_error(exc, model=self.model, url=self.base_url, key_hint=self.key_hint)
            return ModelCheck(None, f"not checked: {error.message}")
        return ModelCheck(True)

    def params(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments of ``messages.create`` for ``request``."""
        thinking = self.thinking_budget > 0 and last_turn_signed(request)
        converted = to_anthropic(request, cache=self.prompt_cache, thinking=thinking)
        max_tokens = max(1, min(request.max_tokens, self.max_tokens))
        params: dict[str, Any] = {"model": self.model, "messages": converted["messages"], "max_tokens": max_tokens}
        if converted["system"]:
            params["system"] = converted["system"]
        if request.tools:
            params["tools"] = anthropic_tools(request.tools, cache=self.prompt_cache)
        if thinking:
            params["thinking"] = {"type": "enabled", "budget_tokens": self.thinking_budget}
            params["max_tokens"] = max(max_tokens, self.thinking_budget + 1024)
        return params

    async def stream(self, request: ModelRequest) -> AsyncIterator[Event]:
        """Stream one Messages API call for ``request``."""
        client = self.client()
        try:
            stream = await client.messages.create(stream=True, **self.params(request))
        except Exception as exc:
            raise self._error(exc) from exc
        state = _StreamState(request.session_id)
        try:
            async for raw in stream:
                for event in state.feed(raw):
                    yield event
        except BackendError:
            raise
        except Exception as exc:
            raise self._error(exc) from exc
        finally:
            await stream.close()
        if not state.stopped:
            raise network_error("Anthropic API", "the stream ended before message_stop", url=self.base_url)
        yield state.completed()
        yield self._usage(state)

    def _error(self, exc: BaseException) -> BackendError:
        return translate_error(exc, model=self.model, url=self.base_url, key_hint=self.key_hint)

    def _usage(self, state: _StreamState) -> Usage:
        price = find_price(state.model or self.model, self._prices)
        return Usage(
            session_id=state.sid,
            model=state.model or self.model,
            input_tokens=state.input_tokens,
            output_tokens=state.output_tokens,
            cache_creation_tokens=state.cache_write,
            cache_read_tokens=state.cache_read,
            cost_usd=cost_usd(
                price,
                input_tokens=state.input_tokens,
                output_tokens=state.output_tokens,
                cache_write=state.cache_write,
                cache_read=state.cache_read,
            ),
        )

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()


class _StreamState:
    """What one stream has said so far."""

    def __init__(self, sid: str) -> None:
        self.sid = sid
        self.model = ""
        self.text: list[str] = []
        self.thinking: list[str] = []
        self.signature = ""
        self.blocks: dict[int, dict[str, Any]] = {}
        self.calls: list[ToolCallSpec] = []
        self.stop_reason = "end_turn"
        self.stopped = False
        self.input_tokens = self.output_tokens = self.cache_write = self.cache_read = 0

    def feed(self, raw: Any) -> list[Event]:
        """Events for one raw SDK stream event."""
        kind = raw.type
        if kind == "content_block_delta":
            delta = raw.delta
            dtype = delta.type
            if dtype == "text_delta":
                self.text.append(delta.text)
                return [TextDelta(session_id=self.sid, text=delta.text)] if delta.text else []
            if dtype == "input_json_delta":
                block = self.blocks.get(raw.index)
                if block is not None:
                    block["json"].append(delta.partial_json)
                return []
            if dtype == "thinking_delta":
                self.thinking.append(delta.thinking)
                return [ThinkingDelta(session_id=self.sid, text=delta.thinking)] if delta.thinking else []
            if dtype == "signature_delta":
                self.signature += delta.signature
            return []
        if kind == "content_block_start":
            block = raw.content_block
            if block.type == "tool_use":
                self.blocks[raw.index] = {"id": block.id, "name": block.name, "json": []}
            elif block.type == "text" and block.text:
                self.text.append(block.text)
                return [TextDelta(session_id=self.sid, text=block.text)]
            elif block.type == "thinking":
                if block.thinking:
                    self.thinking.append(block.thinking)
                    self.signature += block.signature or ""
                    return [ThinkingDelta(session_id=self.sid, text=block.thinking)]
                self.signature += block.signature or ""
            return []
        if kind == "content_block_stop":
            block = self.blocks.pop(raw.index, None)
            if block is not None:
                self.calls.append(_tool_call(block))
            return []
        if kind == "message_start":
            msg = raw.message
            self.model = msg.model or ""
            self._count(msg.usage)
            return []
        if kind == "message_delta":
            if raw.delta.stop_reason:
                self.stop_reason = _STOP_REASONS.get(raw.delta.stop_reason, raw.delta.stop_reason)
            self._count(raw.usage)
            return []
        if kind == "message_stop":
            self.stopped = True
        return []

    def _count(self, usage: Any) -> None:
        if usage is None:
            return
        if usage.input_tokens is not None:
            self.input_tokens = usage.input_tokens
        if usage.output_tokens is not None:
            self.output_tokens = usage.output_tokens
        if usage.cache_creation_input_tokens is not None:
            self.cache_write = usage.cache_creation_input_tokens
        if usage.cache_read_input_tokens is not None:
            self.cache_read = usage.cache_read_input_tokens

    def completed(self) -> MessageCompleted:
        for index in sorted(self.blocks):  # a tool_use block the server never closed
            self.calls.append(_tool_call(self.blocks.pop(index)))
        return MessageCompleted(
            session_id=self.sid,
            text="".join(self.text),
            thinking="".join(self.thinking),
            thinking_signature=self.signature,
            tool_calls=self.calls,
            stop_reason="tool_use" if self.calls else self.stop_reason,
        )


def _tool_call(block: dict[str, Any]) -> ToolCallSpec:
    raw = "".join(block["json"])
    if not raw.strip():
        return ToolCallSpec(id=block["id"], name=block["name"], arguments={})
    try:
        args = json.loads(raw)
    except json.JSONDecodeError as exc:
        return ToolCallSpec(
            id=block["id"], name=block["name"], arguments={}, error=bad_arguments(block["name"], raw, exc)
        )
    if not isinstance(args, dict):
        return ToolCallSpec(
            id=block["id"],
            name=block["name"],
            arguments={},
            error=bad_arguments(block["name"], raw, "not a JSON object"),
        )
    return ToolCallSpec(id=block["id"], name=block["name"], arguments=args)
