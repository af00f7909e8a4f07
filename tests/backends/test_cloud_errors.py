"""The shared error taxonomy: statuses, error types and retry-after headers."""

from __future__ import annotations

import email.utils
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from monkey.backends.errors import KINDS, RETRYABLE, classify_status, parse_retry_after


@pytest.mark.parametrize(
    ("status", "etype", "detail", "kind"),
    [
        (401, "authentication_error", "invalid x-api-key", "authentication"),
        (403, "permission_error", "", "permission"),
        (429, "rate_limit_error", "", "rate_limit"),
        (429, "insufficient_quota", "You exceeded your current quota", "quota_exceeded"),
        (402, "", "", "quota_exceeded"),
        (400, "billing_error", "credit balance is too low", "quota_exceeded"),
        (529, "overloaded_error", "Overloaded", "overloaded"),
        (503, "", "", "overloaded"),
        (500, "api_error", "", "server_error"),
        (502, "", "bad gateway", "server_error"),
        (404, "not_found_error", "model: claude-nope", "model_not_found"),
        (400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum", "context_too_long"),
        (400, "", "This model's maximum context length is 8192 tokens", "context_too_long"),
        (413, "request_too_large", "", "context_too_long"),
        (400, "invalid_request_error", "messages: roles must alternate", "invalid_request"),
        (422, "", "", "invalid_request"),
        (None, "overloaded_error", "Overloaded", "overloaded"),
        (None, "", "", "server_error"),
    ],
)
def test_classification(status, etype, detail, kind):
    err = classify_status(status, provider="P", model="m", error_type=etype, detail=detail)
    assert err.kind == kind and err.retryable == (kind in RETRYABLE)
    assert err.message.startswith("P") and (not detail or detail.split()[0] in err.message)


def test_messages_say_what_to_do():
    assert "ANTHROPIC_API_KEY" in classify_status(401, provider="P", key_hint="--api-key or ANTHROPIC_API_KEY").message
    assert "--model" in classify_status(404, provider="P", model="x", url="http://h/v1").message
    assert "/v1" in classify_status(404, provider="P", model="x", url="http://h").message
    long = classify_status(500, provider="P", detail="x" * 5000).message
    assert len(long) < 500


def test_retry_after_forms():
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after": "1.5"}) == 1.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    date = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= parse_retry_after({"retry-after": date}) <= 31
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({"retry-after": "-4"}) == 0.0
    assert parse_retry_after({}) is None and parse_retry_after(None) is None


@given(st.one_of(st.none(), st.integers(100, 999)), st.text(max_size=40), st.text(max_size=400))
def test_any_input_gives_a_known_kind(status, etype, detail):
    err = classify_status(status, provider="P", error_type=etype, detail=detail)
    assert err.kind in KINDS and "\n" not in err.message


@given(st.dictionaries(st.sampled_from(["retry-after", "retry-after-ms", "x"]), st.text(max_size=30)))
def test_retry_after_never_raises(headers):
    value = parse_retry_after(headers)
    assert value is None or value >= 0
