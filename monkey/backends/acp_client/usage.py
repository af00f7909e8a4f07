"""Token usage an ACP agent reports, as monkey's ``usage`` events (``monkey stats`` counts them).

The protocol's prompt answer may carry ``usage`` (``inputTokens``, ``outputTokens``,
``cachedReadTokens``, ``cachedWriteTokens``); agents also report it under ``_meta``, each its own way:

- Qwen Code 0.24.4: an update's ``_meta.usage`` once per model call (``inputTokens``, ``outputTokens``,
  ``totalTokens``, ``thoughtTokens``, ``cachedReadTokens``), on an empty ``agent_message_chunk``;
- Gemini CLI 0.61.0: the prompt answer's ``_meta.quota``: ``token_count`` (``input_tokens``,
  ``output_tokens``) for the turn and ``model_usage``, the same per model.

One source counts per turn, the first of: the answer's ``usage``, the updates' ``_meta.usage``, the
answer's ``_meta.quota`` (per model when it names them), so nothing is counted twice.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Tokens", "meta_usage", "quota_usage"]

Tokens = tuple[str, int, int, int, int]
"""``(model or "", input, output, cache read, cache write)``."""


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def meta_usage(meta: Any) -> Tokens | None:
    """The usage in an update's ``_meta`` (``_meta.usage``), or None."""
    usage = meta.get("usage") if isinstance(meta, dict) else None
    if not isinstance(usage, dict):
        return None
    tokens = (
        "",
        _int(usage.get("inputTokens")),
        _int(usage.get("outputTokens")),
        _int(usage.get("cachedReadTokens")),
        _int(usage.get("cachedWriteTokens")),
    )
    return tokens if any(tokens[1:]) else None


def _count(table: Any) -> tuple[int, int]:
    if not isinstance(table, dict):
        return 0, 0
    return _int(table.get("input_tokens")), _int(table.get("output_tokens"))


def quota_usage(meta: Any) -> list[Tokens]:
    """The usage in a prompt answer's ``_meta.quota`` (per model when it names them), or none."""
    quota = meta.get("quota") if isinstance(meta, dict) else None
    if not isinstance(quota, dict):
        return []
    per_model = [
        (str(m.get("model") or ""), *_count(m.get("token_count")), 0, 0)
        for m in quota.get("model_usage") or []
        if isinstance(m, dict)
    ]
    per_model = [t for t in per_model if t[1] or t[2]]
    if per_model:
        return per_model
    total = _count(quota.get("token_count"))
    return [("", *total, 0, 0)] if any(total) else []
