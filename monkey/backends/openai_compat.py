"""OpenAI-compatible chat completions: OpenAI, Ollama, LM Studio, vLLM, llama.cpp's server.

A lean streaming client on ``httpx2`` (the HTTP client the ``anthropic`` SDK already
brings), imported on the first call. It reads the server-sent events itself rather than
through the ``openai`` SDK: these servers differ in small ways (a missing ``id``, a
``reasoning_content`` field, usage only on request, an ``error`` object in the middle of
the stream), and reading the chunks as plain JSON takes each as it comes, without one
validation model per chunk and without another dependency.

Tool calls arrive as deltas keyed by ``index``: the id and name in the first, the
arguments in pieces. They are accumulated per index and parsed at the end; arguments that
are not a JSON object become a call whose result tells the model so (it can try again).
A server that ignores the tool list and writes a call as JSON text gets that text read as
the call when it names one of the tools.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import AsyncIterator, Mapping
from typing import Any

from monkey.backends.base import API, TEXT_ONLY, BackendError, ModelCheck
from monkey.backends.convert import bad_arguments, openai_tools, to_openai
from monkey.backends.errors import classify_status, make_error, network_error, parse_retry_after
from monkey.backends.prices import Price, builtin_prices, cost_usd, find_price
from monkey.events import Event, MessageCompleted, TextDelta, ThinkingDelta, ToolCallSpec, Usage
from monkey.messages import ModelRequest, ToolSpec

__all__ = ["OpenAICompatBackend", "DEFAULT_BASE_URL", "DEFAULT_MODEL", "ChunkReader"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "gpt-4o-mini"
"""Used with OpenAI itself when no model is named; other servers are asked for theirs."""

_STOP = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


def _httpx() -> Any:
    try:
        import httpx2
    except ImportError:
        raise BackendError(
            "the OpenAI-compatible backend needs httpx2: pip install httpx2", kind="missing_dependency"
        ) from None
    return httpx2


class OpenAICompatBackend:
    """A chat-completions server.

    Args:
        base_url: the API root, ending in ``/v1`` (default OpenAI's).
        api_key: sent as a bearer token when given (local servers need none).
        model: the model id; when empty, the server's first model (``GET /models``).
        max_tokens: the most output tokens per call.
        timeout: seconds to wait for the server to answer or send the next piece.
        prices: per-model prices overriding the built-in table.
    """

    capabilities = API
    context_window = 0
    """A model: streams a message; the loop runs the tools and keeps the context."""
    name = "openai"

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        model: str | None = None,
        max_tokens: int = 4096,
        timeout: float = 600.0,
        prices: Mapping[str, Price] | None = None,
        key_hint: str = "--api-key or OPENAI_API_KEY",
        images: bool = True,
    ) -> None:
        self.images = images
        """The model reads images (``[openai] images``)."""
        self.capabilities = API if images else TEXT_ONLY
        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        if not self.base_url.startswith(("http://", "https://")):
            raise make_error("invalid_request", f"--base-url must start with http:// or https://, got {base_url!r}")
        if self.base_url == DEFAULT_BASE_URL and not api_key:
            raise make_error("authentication", f"no OpenAI API key: set {key_hint}")
        self.model = model or (DEFAULT_MODEL if self.base_url == DEFAULT_BASE_URL else "")
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.key_hint = key_hint
        self._api_key = api_key or ""
        self._prices = {**builtin_prices("openai"), **(prices or {})}
        self._client: Any = None

    def client(self) -> Any:
        """The HTTP client (made on first use)."""
        if self._client is None:
            httpx2 = _httpx()
            headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
            self._client = httpx2.AsyncClient(
                headers=headers, timeout=httpx2.Timeout(self.timeout, connect=min(self.timeout, 15.0))
            )
        return self._client

    def body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body of the chat-completions call for ``request``."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": to_openai(request, images=self.images),
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_tokens": max(1, min(request.max_tokens, self.max_tokens)),
        }
        if request.tools:
            body["tools"] = openai_tools(request.tools)
        return body

    async def list_models(self) -> list[str] | None:
        """The model ids the server lists (``GET /models``); None when it lists none that way.

        Raises:
            BackendError: the server cannot be reached.
        """
        httpx2 = _httpx()
        try:
            response = await self.client().get(f"{self.base_url}/models")
        except httpx2.HTTPError as exc:
            raise network_error(
                "the OpenAI-compatible server", f"cannot list models ({exc})", url=self.base_url
            ) from None
        if response.status_code != 200:
            return None
        try:
            models = response.json().get("data") or []
        except (ValueError, AttributeError):
            return None
        return (
            [str(m["id"]) for m in models if isinstance(m, dict) and m.get("id")] if isinstance(models, list) else None
        )

    async def _resolve_model(self) -> None:
        """Ask the server for its model when none was named."""
        if self.model:
            return
        models = await self.list_models()
        if not models:
            raise make_error("model_not_found", f"the server at {self.base_url} names no model; pass --model NAME")
        self.model = models[0]

    async def check_model(self) -> ModelCheck:
        """Whether the server lists :attr:`model` (``/model NAME`` asks before it switches)."""
        try:
            models = await self.list_models()
        except BackendError as exc:
            return ModelCheck(None, f"not checked: {exc.message}")
        if models is None:
            return ModelCheck(None, f"not checked: the server at {self.base_url} does not list its models")
        if self.model in models:
            return ModelCheck(True)
        listed = ", ".join(models[:8]) + (f" and {len(models) - 8} more" if len(models) > 8 else "")
        return ModelCheck(
            False, f"the server at {self.base_url} has no model {self.model!r}; it lists {listed or 'none'}"
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[Event]:
        """Stream one chat-completions call for ``request``."""
        httpx2 = _httpx()
        await self._resolve_model()
        url = f"{self.base_url}/chat/completions"
        reader = ChunkReader(request.session_id, request.tools)
        try:
            async with self.client().stream("POST", url, json=self.body(request)) as response:
                if response.status_code >= 400:
                    await response.aread()
                    raise self._status_error(response)
                if response.headers.get("content-type", "").startswith("application/json"):
                    # a server that ignored "stream": the whole completion at once
                    for event in reader.feed(_as_chunk(await response.aread())):
                        yield event
                else:
                    async for data in _sse_data(response.aiter_lines()):
                        for event in reader.feed(data):
                            yield event
        except BackendError:
            raise
        except httpx2.TimeoutException:
            raise network_error("the OpenAI-compatible server", "no answer in time", url=self.base_url) from None
        except httpx2.HTTPError as exc:
            raise network_error(
                "the OpenAI-compatible server", f"{type(exc).__name__}: {exc}", url=self.base_url
            ) from None
        if not reader.finished:
            raise network_error(
                "the OpenAI-compatible server", "the stream ended before the answer did", url=self.base_url
            )
        yield reader.completed()
        price = find_price(self.model, self._prices)
        yield reader.usage(self.model, price)

    def _status_error(self, response: Any) -> BackendError:
        detail, etype = _error_detail(response.text)
        if response.status_code == 400 and re.search(
            r"does not support tools|tools? (are|is) not supported", detail, re.IGNORECASE
        ):
            return make_error(
                "invalid_request",
                f"the model {self.model!r} at {self.base_url} does not support tool calls; "
                "choose a model with tool support (--model)",
            )
        return classify_status(
            response.status_code,
            provider="the OpenAI-compatible server",
            model=self.model,
            error_type=etype,
            detail=detail,
            retry_after=parse_retry_after(response.headers),
            key_hint=self.key_hint,
            url=self.base_url,
        )

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()


def _error_detail(text: str) -> tuple[str, str]:
    """The message and type of an error body (``{"error": {...}}`` or plain text)."""
    try:
        obj = json.loads(text)
    except ValueError:
        return text.strip()[:500], ""
    err = obj.get("error") if isinstance(obj, dict) else None
    if isinstance(err, dict):
        etype = err.get("code") if isinstance(err.get("code"), str) else err.get("type")
        return str(err.get("message") or ""), str(etype or "")
    if isinstance(err, str):
        return err, ""
    return text.strip()[:500], ""


def _as_chunk(body: bytes) -> str:
    """A whole (non-streamed) chat completion as one streamed chunk."""
    try:
        obj = json.loads(body)
    except ValueError:
        return body.decode("utf-8", "replace")  # fed as is: the reader says it is not JSON
    if not isinstance(obj, dict) or "choices" not in obj:
        return json.dumps(obj)
    choices = []
    for choice in obj.get("choices") or []:
        if isinstance(choice, dict):
            message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
            choices.append(
                {
                    "index": choice.get("index", 0),
                    "delta": message,
                    "finish_reason": choice.get("finish_reason") or "stop",
                }
            )
    return json.dumps({"choices": choices, "usage": obj.get("usage")})


async def _sse_data(lines: AsyncIterator[str]) -> AsyncIterator[str]:
    """The ``data`` of each server-sent event (multi-line data joined, comments skipped)."""
    parts: list[str] = []
    async for line in lines:
        if not line:
            if parts:
                yield "\n".join(parts)
                parts = []
            continue
        if line.startswith("data:"):
            parts.append(line[6:] if line.startswith("data: ") else line[5:])
    if parts:
        yield "\n".join(parts)


class ChunkReader:
    """Accumulates the chunks of one streamed chat completion."""

    def __init__(self, sid: str, tools: list[ToolSpec]) -> None:
        self.sid = sid
        self.tool_names = {t.name for t in tools}
        self.text: list[str] = []
        self.thinking: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish = ""
        self.finished = False
        self.prompt_tokens = self.completion_tokens = self.cached_tokens = 0

    def feed(self, data: str) -> list[Event]:
        """Events for the data of one server-sent event."""
        if data.strip() == "[DONE]":
            self.finished = True
            return []
        try:
            chunk = json.loads(data)
        except ValueError:
            raise make_error("server_error", f"the server sent a chunk that is not JSON: {data[:200]!r}") from None
        if not isinstance(chunk, dict):
            raise make_error("server_error", f"the server sent a chunk that is not a JSON object: {data[:200]!r}")
        if "error" in chunk and chunk["error"]:
            err = chunk["error"]
            detail = err.get("message", "") if isinstance(err, dict) else str(err)
            etype = (err.get("code") or err.get("type") or "") if isinstance(err, dict) else ""
            raise classify_status(
                None, provider="the OpenAI-compatible server", error_type=str(etype), detail=str(detail)
            )
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.prompt_tokens = int(usage.get("prompt_tokens") or 0)
            self.completion_tokens = int(usage.get("completion_tokens") or 0)
            details = usage.get("prompt_tokens_details")
            if isinstance(details, dict):
                self.cached_tokens = int(details.get("cached_tokens") or 0)
        out: list[Event] = []
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                self.thinking.append(reasoning)
                out.append(ThinkingDelta(session_id=self.sid, text=reasoning))
            content = delta.get("content")
            if isinstance(content, str) and content:
                self.text.append(content)
                out.append(TextDelta(session_id=self.sid, text=content))
            for piece in delta.get("tool_calls") or []:
                self._tool_piece(piece)
            if choice.get("finish_reason"):
                self.finish = choice["finish_reason"]
                self.finished = True
        return out

    def _tool_piece(self, piece: Any) -> None:
        if not isinstance(piece, dict):
            return
        index = piece.get("index")
        if not isinstance(index, int):
            index = len(self.calls)
        call = self.calls.setdefault(index, {"id": "", "name": "", "args": []})
        if piece.get("id"):
            call["id"] = str(piece["id"])
        fn = piece.get("function") or {}
        if fn.get("name") and not call["name"]:
            call["name"] = str(fn["name"])
        args = fn.get("arguments")
        if isinstance(args, str):
            call["args"].append(args)
        elif isinstance(args, dict):  # some servers send the object itself
            call["args"].append(json.dumps(args))

    def completed(self) -> MessageCompleted:
        """The whole message."""
        text = "".join(self.text)
        calls = [self._call(i, c) for i, c in sorted(self.calls.items())]
        if not calls and self.tool_names:
            found = _call_in_text(text, self.tool_names)
            if found is not None:
                calls, text = [found], ""
        stop = "tool_use" if calls else _STOP.get(self.finish, "end_turn")
        return MessageCompleted(
            session_id=self.sid, text=text, thinking="".join(self.thinking), tool_calls=calls, stop_reason=stop
        )

    def _call(self, index: int, call: dict[str, Any]) -> ToolCallSpec:
        call_id = call["id"] or f"call_{secrets.token_hex(6)}"
        name = call["name"] or "unnamed_tool"
        raw = "".join(call["args"])
        if not raw.strip():
            return ToolCallSpec(id=call_id, name=name, arguments={})
        try:
            args = json.loads(raw)
        except ValueError as exc:
            return ToolCallSpec(id=call_id, name=name, arguments={}, error=bad_arguments(name, raw, exc))
        if not isinstance(args, dict):
            return ToolCallSpec(id=call_id, name=name, arguments={}, error=bad_arguments(name, raw, "not an object"))
        return ToolCallSpec(id=call_id, name=name, arguments=args)

    def usage(self, model: str, price: Price | None) -> Usage:
        """The usage the server reported (zeros when it reported none)."""
        uncached = max(0, self.prompt_tokens - self.cached_tokens)
        return Usage(
            session_id=self.sid,
            model=model,
            input_tokens=self.prompt_tokens,
            output_tokens=self.completion_tokens,
            cache_read_tokens=self.cached_tokens,
            cost_usd=cost_usd(
                price, input_tokens=uncached, output_tokens=self.completion_tokens, cache_read=self.cached_tokens
            ),
        )


_FENCE = re.compile(r"^\s*(?:```(?:json)?|<tool_call>)\s*(.*?)\s*(?:```|</tool_call>)\s*$", re.DOTALL)


def _call_in_text(text: str, names: set[str]) -> ToolCallSpec | None:
    """A tool call written as JSON text by a model whose server ignored the tool list."""
    stripped = text.strip()
    match = _FENCE.match(stripped)
    if match:
        stripped = match.group(1)
    if not stripped.startswith("{"):
        return None
    try:
        obj = json.loads(stripped)
    except ValueError:
        return None
    if not isinstance(obj, dict) or obj.get("name") not in names:
        return None
    args = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return ToolCallSpec(
                id=f"call_{secrets.token_hex(6)}",
                name=obj["name"],
                arguments={},
                error=bad_arguments(obj["name"], args, "not JSON"),
            )
    if not isinstance(args, dict):
        return None
    return ToolCallSpec(id=f"call_{secrets.token_hex(6)}", name=obj["name"], arguments=args)
