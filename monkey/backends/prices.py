"""Token prices, for the ``cost_usd`` of :class:`~monkey.events.Usage` events.

The built-in table is ``prices.toml`` beside this module (US dollars per million tokens);
``[anthropic.prices]`` and ``[openai.prices]`` in config override or add models. A model
id uses the entry of the longest key it starts with, so dated ids find their family. A
model with no entry costs 0 (monkey does not guess).
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources

__all__ = ["Price", "builtin_prices", "find_price", "cost_usd"]


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens."""

    input: float
    output: float
    cache_write: float | None = None
    """Price of tokens written to the prompt cache (default: ``input``)."""
    cache_read: float | None = None
    """Price of tokens read from the prompt cache (default: ``input``)."""


@functools.cache
def builtin_prices(provider: str) -> dict[str, Price]:
    """The built-in table of ``provider`` (``anthropic`` or ``openai``)."""
    text = resources.files("monkey.backends").joinpath("prices.toml").read_text(encoding="utf-8")
    table = tomllib.loads(text).get(provider, {})
    return {name: Price(**entry) for name, entry in table.items()}


def find_price(model: str, table: Mapping[str, Price]) -> Price | None:
    """The entry for ``model``: an exact key, else the longest key it starts with."""
    if model in table:
        return table[model]
    best = max((k for k in table if model.startswith(k)), key=len, default=None)
    return table[best] if best is not None else None


def cost_usd(
    price: Price | None, *, input_tokens: int, output_tokens: int, cache_write: int = 0, cache_read: int = 0
) -> float:
    """The cost of one call; ``input_tokens`` excludes the cached ones (as Anthropic counts)."""
    if price is None:
        return 0.0
    write = price.input if price.cache_write is None else price.cache_write
    read = price.input if price.cache_read is None else price.cache_read
    total = input_tokens * price.input + output_tokens * price.output + cache_write * write + cache_read * read
    return round(total / 1_000_000, 8)
