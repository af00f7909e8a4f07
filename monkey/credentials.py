"""Credentials in environments and text: what children never get, and what leaves monkey redacted.

:func:`scrub_env` is the environment children get: the parent's without credentials.
:func:`hide_secrets` blanks those credentials where a child could still read them in monkey
itself: its ``/proc/<pid>/environ`` (and an ``--api-key`` in ``/proc/<pid>/cmdline``).
:func:`redact` replaces them in text that leaves monkey (telemetry, a background process's
output). :mod:`monkey.process` re-exports these for its callers; this module imports nothing of
monkey but :mod:`monkey.children`'s tag name.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Mapping

from monkey import children

__all__ = [
    "REDACTED",
    "hide_secrets",
    "holds_credential",
    "is_secret",
    "redact",
    "scrub_env",
    "secret_values",
]

_SECRET_PREFIXES = (
    "ANTHROPIC_", "OPENAI_", "AWS_", "AZURE_", "GOOGLE_", "GH_", "GITHUB_", "HF_",
    "HUGGING", "CLAUDE_", "CODEX_", "MONKEY_", "OTEL_",
)  # fmt: skip
_SECRET_WORDS = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|AUTH(?!OR(?:[^I]|$))|COOKIE")
_SECRET_PARTS = frozenset({"KEY", "APIKEY", "ACCESSKEY", "SECRETKEY", "PRIVATEKEY", "PASS", "PWD", "DSN"})
_URL_WITH_PASSWORD = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:[^/\s@]+@")


def _is_secret(name: str, value: str) -> bool:
    upper = name.upper()
    if upper in {"PWD", "OLDPWD"}:
        return False
    if upper.startswith(_SECRET_PREFIXES) or _SECRET_WORDS.search(upper):
        return True
    if any(part in _SECRET_PARTS or part.endswith("APIKEY") for part in re.split(r"[^A-Z0-9]+", upper)):
        return True
    return (
        bool(_URL_WITH_PASSWORD.match(value))
        or _secret_value(value)
        or (_SUSPICIOUS_NAME.search(upper) is not None and _random_looking(value))
    )


_SUSPICIOUS_NAME = re.compile(
    r"SALT|SIGN|JWT|BEARER|PRIVATE|SESSION|HMAC|CIPHER|CRYPT|NONCE|SEED|WEBHOOK|"
    r"LICEN[CS]E|CONN|DATABASE|_DB|^DB|DSN|SIG\b|CERT"
)
"""Names that often hold a credential without saying so (``DJANGO_SALT``, ``JWT_SIGNING``...):
their value is dropped when it looks random."""


def _random_looking(value: str) -> bool:
    """A value of 16+ characters without spaces whose characters look drawn at random
    (over 3.5 bits of entropy each, letters and digits mixed): a generated secret, not a word,
    a path or a number."""
    import math

    if len(value) < 16 or any(ch.isspace() for ch in value) or value.startswith(("/", "./", "~")):
        return False
    if not (any(ch.isdigit() for ch in value) and any(ch.isalpha() for ch in value)):
        return False
    counts: dict[str, int] = {}
    for ch in value:
        counts[ch] = counts.get(ch, 0) + 1
    entropy = -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())
    return entropy > 3.5


_TOKEN_VALUE = re.compile(
    r"(?:^|[^A-Za-z0-9_-])(?:"
    r"sk-ant-[A-Za-z0-9_-]{16,}|sk-(?:proj-|svcacct-)?[A-Za-z0-9_-]{20,}|"  # Anthropic, OpenAI
    r"gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}|glpat-[A-Za-z0-9_-]{20,}|"  # GitHub, GitLab
    r"xox[abpors]-[A-Za-z0-9-]{10,}|"  # Slack
    r"(?:AKIA|ASIA)[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35}|"  # AWS access key ids, Google API keys
    r"hf_[A-Za-z0-9]{30,}|npm_[A-Za-z0-9]{36}|pypi-AgE[A-Za-z0-9_-]{50,}|"  # Hugging Face, npm, PyPI
    r"sk_live_[A-Za-z0-9]{20,}|rk_live_[A-Za-z0-9]{20,}"  # Stripe
    r")"
)
"""Tokens with a provider's well-known prefix, wherever they sit in a value."""
_PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----")
_URL_PASSWORD_ANYWHERE = re.compile(r"(?<![A-Za-z])[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:[^/\s@]+@")


def _secret_value(value: str) -> bool:
    """Whether a value holds a credential whatever its variable is called."""
    return bool(_TOKEN_VALUE.search(value) or _PRIVATE_KEY.search(value) or _URL_PASSWORD_ANYWHERE.search(value))


def holds_credential(text: str) -> bool:
    """Whether ``text`` holds what looks like a credential whatever surrounds it: a token with a
    provider's well-known prefix, a private-key block, a URL with a password."""
    return _secret_value(text)


def scrub_env(env: Mapping[str, str]) -> dict[str, str]:
    """The environment without anything that looks like a credential.

    Dropped: names with a ``KEY`` word (``API_KEY``, ``SECRET_KEY``, ``APIKEY``...),
    ``TOKEN``, ``SECRET``, ``PASSWORD``, ``PASSWD``, ``CREDENTIAL`` or ``AUTH`` in them,
    the prefixes of known providers and tools (``ANTHROPIC_``, ``OPENAI_``, ``AWS_``,
    ``GITHUB_``, ``MONKEY_``, ``OTEL_``...), and, whatever the name, values that hold a
    credential: a URL with a password, a private-key block, or a token with a provider's
    well-known prefix (``sk-ant-``, ``ghp_``, ``github_pat_``, ``AKIA``, ``xoxb-``, ``hf_``...);
    and a random-looking value (high entropy) of a name that often holds one (``*_SALT``,
    ``JWT_*``, ``*_SIGNING_*``, ``SESSION_*``, ``DATABASE_*``...). Names are compared case-insensitively. ``PATH``,
    ``HOME``, ``LANG`` and the like stay.

    Args:
        env: The environment to scrub (usually ``os.environ``).

    Returns:
        A new dictionary.
    """
    return {k: v for k, v in env.items() if not _is_secret(k, v)}


REDACTED = "[redacted]"
_PLAIN = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*://[^\s@]*|[0-9.]+|true|false|yes|no|on|off|none)$", re.IGNORECASE)


def is_secret(name: str, value: str) -> bool:
    """Whether :func:`scrub_env` would drop ``name=value`` (a credential by its name or its value)."""
    return _is_secret(name, value)


def secret_values(env: Mapping[str, str] | None = None) -> frozenset[str]:
    """The values :func:`scrub_env` would drop from ``env`` that are worth looking for in text: 8
    characters or more, and not a path, a plain URL, a number or a switch (``MONKEY_HOME=/home/x``,
    ``OTEL_EXPORTER_OTLP_ENDPOINT=http://...`` are kept by :func:`redact`; a key, a token or a header is not),
    and the values of a ``key=value,...`` list (headers) each, and without their ``Bearer`` or ``Basic``.
    ``env``: ``os.environ`` by default."""
    env = os.environ if env is None else env
    found: set[str] = set()
    for name, value in env.items():
        if not _is_secret(name, value):
            continue
        parts = [value]
        if "=" in value:  # OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer abc,x-key=def: abc and def too
            for pair in value.split(","):
                said = pair.partition("=")[2].strip()
                parts += [said, said.split(" ", 1)[-1]]  # "Bearer abc": abc
        found.update(p for p in parts if len(p) >= 8 and not p.startswith(("/", "~", ".")) and not _PLAIN.match(p))
    return frozenset(found)


def _cut(match: re.Match[str]) -> str:
    text = match.group(0)
    lead = text[0] if not (text[0].isalnum() or text[0] in "_-") else ""
    return lead + REDACTED


def redact(text: str, secrets: frozenset[str] = frozenset()) -> str:
    """``text`` with what the children's scrubbing treats as a credential replaced by ``[redacted]``: the
    values of ``secrets`` (see :func:`secret_values`) wherever they appear, tokens with a provider's prefix,
    private-key blocks and the password of a URL. For text that leaves monkey (telemetry)."""
    for value in secrets:
        if value in text:
            text = text.replace(value, REDACTED)
    if _TOKEN_VALUE.search(text):
        text = _TOKEN_VALUE.sub(_cut, text)
    if _PRIVATE_KEY.search(text):
        text = _KEY_BLOCK.sub(REDACTED, text)
    if _URL_PASSWORD_ANYWHERE.search(text):
        text = _URL_PASSWORD_ANYWHERE.sub(lambda m: m.group(0)[: m.group(0).index("://") + 3] + REDACTED + "@", text)
    return text


_KEY_BLOCK = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY"
    r"( BLOCK)?-----|\Z)",
    re.DOTALL,
)


def _blank(start: int, end: int, secret: Callable[[bytes, bytes], bool]) -> list[str]:
    """Zero, in the block of NUL-separated strings at ``[start, end)`` of this process's memory,
    each ``NAME=value``'s value (or each argument after ``--api-key``) that ``secret`` says is one."""
    import ctypes

    if end <= start:
        return []
    block = ctypes.string_at(start, end - start)
    blanked: list[str] = []
    offset = 0
    previous = b""
    for entry in block.split(b"\0"):
        name, eq, value = entry.partition(b"=")
        if eq and value and secret(name, value):
            ctypes.memset(start + offset + len(name) + 1, 0, len(value))
            blanked.append(name.decode(errors="replace"))
        elif previous == b"--api-key" and entry:
            ctypes.memset(start + offset, 0, len(entry))
            blanked.append("--api-key")
        previous = entry
        offset += len(entry) + 1
    return blanked


def hide_secrets() -> list[str]:
    """Blank the credentials (what :func:`scrub_env` drops) in the environment block the kernel shows
    as ``/proc/<pid>/environ``, and the value of ``--api-key`` in ``/proc/<pid>/cmdline`` (Linux).

    monkey keeps them (``os.environ`` is Python's own copy, and each backend is handed its key
    explicitly; children get :func:`scrub_env`'s environment), but a child running as root, which
    ``PR_SET_DUMPABLE`` does not stop, could read them there: outside the sandbox a hook, an MCP server,
    a plugin, the Claude Code CLI or a command the person typed. The C library's own copy is set again
    from ``os.environ``, so ``getenv`` still finds them. Returns what was blanked (names, ``--api-key``).
    """
    if not sys.platform.startswith("linux"):
        return []
    try:
        with open("/proc/self/stat", "rb") as fh:
            stat = fh.read()
        fields = stat[stat.rfind(b")") + 2 :].split()
        arg_start, arg_end, env_start, env_end = (int(fields[i]) for i in (45, 46, 47, 48))  # fields 48-51
    except (OSError, ValueError, IndexError):
        return []
    tag = children.TAG_VAR.encode()  # no credential: how a monkey above this one finds it (/proc/<pid>/environ)
    blanked = _blank(
        env_start,
        env_end,
        lambda name, value: name != tag and _is_secret(name.decode(errors="replace"), value.decode(errors="replace")),
    )
    for name in blanked:
        if name in os.environ:
            os.putenv(name, os.environ[name])  # a fresh copy for getenv, outside the block the kernel shows
    return blanked + _blank(arg_start, arg_end, lambda name, value: name == b"--api-key")
