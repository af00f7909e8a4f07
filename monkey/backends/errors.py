"""One error taxonomy for every model backend.

Each provider's failure (an HTTP status, an error ``type`` in a body, a dropped
connection) becomes a :class:`~monkey.backends.base.BackendError` whose ``kind`` is one of
:data:`KINDS`, whose ``retryable`` says whether trying again may help, and whose message
tells a person what to do about it.

=================  =========  =============================================================
kind               retryable  typical cause
=================  =========  =============================================================
authentication     no         401, a missing or wrong API key
permission         no         403, the key may not use this model or feature
rate_limit         yes        429, too many requests or tokens per minute (``retry-after``)
quota_exceeded     no         402 / billing error / 429 ``insufficient_quota``: out of credit
overloaded         yes        529 / 503, the provider is overloaded
server_error       yes        500, 502, 504, 408, an ``api_error`` in the stream
model_not_found    no         404, a model name the server does not know
invalid_request    no         400 / 422, a request the server refuses
context_too_long   no         the conversation does not fit the model's context window
network            yes        connection refused or dropped, timeouts, a broken stream
=================  =========  =============================================================
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping

from monkey.backends.base import BackendError

__all__ = ["KINDS", "RETRYABLE", "make_error", "classify_status", "network_error", "parse_retry_after"]

RETRYABLE = frozenset({"rate_limit", "overloaded", "server_error", "network"})
"""The kinds that are worth trying again."""

KINDS = (
    "authentication",
    "permission",
    "rate_limit",
    "quota_exceeded",
    "overloaded",
    "server_error",
    "model_not_found",
    "invalid_request",
    "context_too_long",
    "network",
)
"""Every kind a cloud or server backend raises."""

_CONTEXT_WORDS = (
    "prompt is too long",
    "context length",
    "context_length",
    "context window",
    "maximum context",
    "too many tokens",
    "exceeds the context",
    "reduce the length",
)

_ERROR_TYPES = {
    "authentication_error": "authentication",
    "invalid_api_key": "authentication",
    "permission_error": "permission",
    "billing_error": "quota_exceeded",
    "insufficient_quota": "quota_exceeded",
    "rate_limit_error": "rate_limit",
    "rate_limit_exceeded": "rate_limit",
    "overloaded_error": "overloaded",
    "api_error": "server_error",
    "timeout_error": "server_error",
    "internal_server_error": "server_error",
    "server_error": "server_error",
    "not_found_error": "model_not_found",
    "model_not_found": "model_not_found",
    "invalid_request_error": "invalid_request",
    "request_too_large": "context_too_long",
    "context_length_exceeded": "context_too_long",
}


def make_error(kind: str, message: str, *, retry_after: float | None = None) -> BackendError:
    """A :class:`BackendError` of ``kind``, retryable when the kind is."""
    return BackendError(message, kind=kind, retryable=kind in RETRYABLE, retry_after=retry_after)


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``retry-after`` (seconds or an HTTP date)."""
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    parsed = email.utils.parsedate_tz(value)
    if parsed is None:
        return None
    return max(0.0, float(email.utils.mktime_tz(parsed) - time.time()))


def _kind_of(status: int | None, error_type: str, detail: str) -> str:
    low = detail.lower()
    if (error_type == "invalid_request_error" or status in (400, 413, 422) or error_type == "request_too_large") and (
        error_type == "request_too_large" or any(w in low for w in _CONTEXT_WORDS)
    ):
        return "context_too_long"
    if "quota" in low and (status == 429 or error_type in ("rate_limit_error", "insufficient_quota")):
        return "quota_exceeded"
    if error_type in _ERROR_TYPES:
        return _ERROR_TYPES[error_type]
    if status is None:
        return "server_error"
    if status == 401:
        return "authentication"
    if status == 402:
        return "quota_exceeded"
    if status == 403:
        return "permission"
    if status == 404:
        return "model_not_found"
    if status == 429:
        return "rate_limit"
    if status in (503, 529):
        return "overloaded"
    if status == 413:
        return "context_too_long"
    if status == 408 or status >= 500:
        return "server_error"
    return "invalid_request"


def _url_hint(provider: str, url: str) -> str:
    if not url:
        return ""
    if provider.startswith("Anthropic"):
        return " and that --base-url is the API root (without /v1)"
    return " and that --base-url ends with /v1"


def _advice(kind: str, provider: str, model: str, key_hint: str, url: str) -> str:
    where = f" at {url}" if url else ""
    return {
        "authentication": f"check the API key ({key_hint})",
        "permission": f"this API key may not use {model or 'this model'}; check the key's permissions",
        "rate_limit": "rate limit reached: too many requests or tokens per minute",
        "quota_exceeded": f"your {provider} account is out of credit or over its spending limit",
        "overloaded": f"{provider} is overloaded; try again later or configure [backend] fallbacks",
        "server_error": f"{provider} had an internal error",
        "model_not_found": f"no model {model!r}{where}; check --model" + _url_hint(provider, url),
        "invalid_request": "the request was refused",
        "context_too_long": "the conversation is too long for the model's context window; start a new session "
        "or use a model with a larger window",
        "network": f"cannot reach {provider}{where}; check the network and --base-url",
    }[kind]


def classify_status(
    status: int | None,
    *,
    provider: str,
    model: str = "",
    error_type: str = "",
    detail: str = "",
    retry_after: float | None = None,
    key_hint: str = "--api-key",
    url: str = "",
) -> BackendError:
    """The error for an HTTP ``status`` (``None`` for an error event inside a stream)."""
    kind = _kind_of(status, error_type or "", detail or "")
    code = f" ({status})" if status else ""
    text = " ".join((detail or "").split())
    if len(text) > 300:
        text = text[:297] + "..."
    message = f"{provider}{code}: {_advice(kind, provider, model, key_hint, url)}"
    if text:
        message += f" — server said: {text}"
    return make_error(kind, message, retry_after=retry_after)


def network_error(provider: str, what: str, *, url: str = "") -> BackendError:
    """The error for a connection that failed, timed out or broke in the middle."""
    where = f" at {url}" if url else ""
    return make_error("network", f"{provider}: {what}{where}")
