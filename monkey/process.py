"""Child processes, for the tools and the backends alike: their group, output and environment.

Supervising a child process group: stream its output, cap it, stop the whole group. The
child is started by :func:`spawn`, in a session of its own so that its pid is the id of a
process group holding it and everything it starts, with the parent-death signal and a tag
(:mod:`monkey.children`), so it dies with monkey and its descendants that leave the group
are found. Stopping means SIGTERM to the group and to those strays, a grace period, then
SIGKILL; it happens on a timeout, on cancellation (before the
:class:`asyncio.CancelledError` goes on), and for processes left running in the background
after the command itself ended, so that no child outlives the call.

:func:`scrub_env` is the environment children get: the parent's without credentials.
:func:`hide_secrets` blanks those credentials where a child could still read them in monkey
itself: its ``/proc/<pid>/environ`` (and an ``--api-key`` in ``/proc/<pid>/cmdline``).

``shell_execute`` (:mod:`monkey.tools.shell`) and the external agent CLIs
(:mod:`monkey.backends.supervise`) both run children this way; this module sits below both
and imports nothing of monkey.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import contextvars
import os
import re
import signal
import sys
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from monkey import children

__all__ = [
    "Finished",
    "OutputBuffer",
    "group_alive",
    "hide_secrets",
    "holds_credential",
    "is_secret",
    "redact",
    "run_supervised",
    "scrub_env",
    "secret_values",
    "signal_group",
    "spawn",
    "spawns_go_to",
    "stop_group",
    "wait_exited",
]

_on_spawn: contextvars.ContextVar[Callable[[int], None] | None] = contextvars.ContextVar(
    "monkey_on_spawn", default=None
)


@contextlib.contextmanager
def spawns_go_to(claim: Callable[[int], None]) -> Iterator[None]:
    """Within the block (this task and the tasks it starts), every child :func:`spawn` starts is
    handed to ``claim`` by pid as soon as it exists: the checkpoint of the call that runs it
    knows which process tree is that call's (two commands at once in one monkey)."""
    token = _on_spawn.set(claim)
    try:
        yield
    finally:
        _on_spawn.reset(token)


_CHUNK = 65536
_DRAIN_WAIT = 2.0
"""Seconds to wait for the output pipes to close once the group is gone."""
_POLL = 0.02


class OutputBuffer:
    """Output kept for the model: the head and the tail, with what was cut in between.

    Args:
        limit: Characters kept at most (half from the start, half from the end).
    """

    def __init__(self, limit: int) -> None:
        self.limit = max(limit, 2)
        self._head_limit = self.limit // 2
        self._tail_limit = self.limit - self._head_limit
        self._head: list[str] = []
        self._head_len = 0
        self._tail: deque[str] = deque()
        self._tail_len = 0
        self.total = 0
        """Characters seen in all."""

    def add(self, text: str) -> None:
        """Take one more piece of output."""
        self.total += len(text)
        room = self._head_limit - self._head_len
        if room > 0:
            self._head.append(text[:room])
            self._head_len += min(room, len(text))
            text = text[room:]
        if text:
            self._tail.append(text)
            self._tail_len += len(text)
            while self._tail and self._tail_len - len(self._tail[0]) >= self._tail_limit:
                self._tail_len -= len(self._tail.popleft())

    def text(self) -> str:
        """The kept output; a note says how many characters were cut from the middle."""
        head = "".join(self._head)
        tail = "".join(self._tail)
        if self.total <= self.limit:
            return head + tail
        tail = tail[-self._tail_limit :]
        cut = self.total - len(head) - len(tail)
        return f"{head}\n[... {cut} characters of output cut ...]\n{tail}"


def signal_group(pgid: int, sig: int) -> bool:
    """Send a signal to a process group; False when there is no such group."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def group_alive(pgid: int) -> bool:
    """Whether a process group still has a live (not zombie) member.

    The group is probed with signal 0 first. On Linux, when that finds members, the process
    table is read too, because zombies that nobody reaps (a container whose init does not
    reap orphans) still count for ``kill(0)``.
    """
    if not signal_group(pgid, 0):
        return False
    if sys.platform.startswith("linux") and os.path.isdir("/proc"):
        try:
            names = os.listdir("/proc")
        except OSError:
            names = []
        for name in names:
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as fh:
                    stat = fh.read()
            except OSError:
                continue
            fields = stat[stat.rfind(b")") + 2 :].split()
            if len(fields) > 2 and fields[2] == str(pgid).encode() and fields[0] not in (b"Z", b"X"):
                return True
        if names:
            return False
    return True


async def wait_exited(proc: asyncio.subprocess.Process, timeout: float | None) -> bool:
    """Wait until the process itself has exited, whether or not its pipes are still open.

    ``Process.wait()`` also waits for the pipes to close, which never happens while a
    background child holds them; the exit status is known earlier, so it is polled
    (quickly at first, then every 0.1 s) besides waiting.

    Returns:
        False when ``timeout`` seconds passed first.
    """
    waiter = asyncio.ensure_future(proc.wait())
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    delay = 0.005
    try:
        while proc.returncode is None:
            step = delay
            if deadline is not None:
                step = min(step, deadline - loop.time())
                if step <= 0:
                    return False
            await asyncio.wait({waiter}, timeout=step)
            delay = min(delay * 2, 0.1)
        return True
    finally:
        waiter.cancel()


async def spawn(
    argv: list[str], *, env: Mapping[str, str], before_exec: Callable[[], None] | None = None, **kwargs: Any
) -> asyncio.subprocess.Process:
    """Start a child the way every child of monkey starts (``asyncio.create_subprocess_exec``).

    In a session (and process group) of its own, with the parent-death signal (it dies when
    monkey dies, even by ``kill -9``) and ``MONKEY_CHILD`` set to a new tag in ``env`` (so
    its descendants are found wherever they go). ``before_exec`` runs in the child last,
    just before exec (the Landlock sandbox restricts the child there). ``kwargs`` go to
    ``create_subprocess_exec``.

    Raises:
        OSError: The program cannot be started.
    """
    tag = children.new_tag()
    setup = children.preexec()
    if before_exec is not None:
        die_with_us, then = setup, before_exec

        def setup() -> None:
            die_with_us()
            then()

    proc = await asyncio.create_subprocess_exec(
        *argv, env={**env, children.TAG_VAR: tag}, start_new_session=True, preexec_fn=setup, **kwargs
    )
    children.register(proc.pid, tag)
    claim = _on_spawn.get()
    if claim is not None:
        claim(proc.pid)
    return proc


def _strays(proc: asyncio.subprocess.Process) -> list[tuple[int, int]]:
    tag = children.tag_of(proc.pid)
    return children.strays(tag, proc.pid) if tag else []


async def stop_group(proc: asyncio.subprocess.Process, grace: float) -> None:
    """Stop the process group led by ``proc``, and its processes that left the group.

    SIGTERM, up to ``grace`` seconds, SIGKILL. Returns once no live member of the group and
    no stray is left (or SIGKILL was sent to them) and ``proc`` has been reaped (or a few
    seconds passed).
    """
    pgid = proc.pid
    strays = _strays(proc)
    if group_alive(pgid) and signal_group(pgid, signal.SIGTERM) or strays:
        signal_group(pgid, signal.SIGCONT)  # a stopped process must run to see SIGTERM
        children.kill(strays, signal.SIGTERM)
        children.kill(strays, signal.SIGCONT)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace
        while group_alive(pgid) or any(children.alive(*p) for p in strays):
            if loop.time() >= deadline:
                signal_group(pgid, signal.SIGKILL)
                children.kill(strays, signal.SIGKILL)
                break
            await asyncio.sleep(_POLL)
        for _ in range(3):  # a stray that forked on its way out: its child is a stray too
            more = [p for p in _strays(proc) if p not in strays]
            if not more:
                break
            children.kill(more, signal.SIGKILL)
            strays += more
    await wait_exited(proc, grace + _DRAIN_WAIT)
    if strays:
        await _reap(strays)
    if proc.returncode is not None:
        children.forget(proc.pid)


async def _reap(strays: list[tuple[int, int]]) -> None:
    """Reap the killed strays re-parented to monkey, waiting briefly for SIGKILL to land."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + _DRAIN_WAIT
    while any(children.alive(*p) for p in strays) and loop.time() < deadline:
        await asyncio.sleep(_POLL)
    children.reap(strays)


async def pump_pipe(
    stream: asyncio.StreamReader | None,
    name: str,
    out: Any,
    emit: Callable[[str, str], None],
) -> None:
    """Read one pipe to its end, decoding UTF-8 incrementally, keeping (``out.add``: an
    :class:`OutputBuffer`, a background process's log) and emitting text."""
    if stream is None:
        return
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    while True:
        chunk = await stream.read(_CHUNK)
        text = decoder.decode(chunk, final=not chunk)
        if text:
            out.add(text)
            emit(name, text)
        if not chunk:
            return


@dataclass
class Finished:
    """How a supervised process ended."""

    returncode: int | None
    """The exit status; negative for a signal, as in :mod:`subprocess`."""
    output: str
    """stdout and stderr as they arrived, capped."""
    timed_out: bool


async def run_supervised(
    proc: asyncio.subprocess.Process,
    *,
    timeout: float,
    grace: float,
    limit: int,
    emit: Callable[[str, str], None],
) -> Finished:
    """Wait for a process started in its own session, streaming and capping its output.

    Args:
        proc: The process, with stdout and stderr pipes, started with
            ``start_new_session=True``.
        timeout: Seconds before the group is stopped and the run counts as timed out.
        grace: Seconds between SIGTERM and SIGKILL.
        limit: Characters of output kept.
        emit: Called with ``(stream, text)`` for every piece of output as it arrives.

    Returns:
        The exit status and the kept output.

    Raises:
        asyncio.CancelledError: After the process group has been stopped.
    """
    out = OutputBuffer(limit)
    pumps = [
        asyncio.create_task(pump_pipe(proc.stdout, "stdout", out, emit)),
        asyncio.create_task(pump_pipe(proc.stderr, "stderr", out, emit)),
    ]
    stopped = False
    try:
        timed_out = not await wait_exited(proc, timeout)
        # On a timeout this stops the command; otherwise whatever it left in the background.
        await stop_group(proc, grace)
        stopped = True
        _, pending = await asyncio.wait(pumps, timeout=_DRAIN_WAIT)
        for task in pending:  # a process that left the group still holds a pipe
            task.cancel()
        for task in pumps:
            if task.done() and not task.cancelled() and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]
        return Finished(proc.returncode, out.text(), timed_out)
    except asyncio.CancelledError:
        if not stopped:
            try:
                await asyncio.shield(stop_group(proc, grace))
            except asyncio.CancelledError:
                signal_group(proc.pid, signal.SIGKILL)
            stopped = True
        raise
    finally:
        if not stopped:
            signal_group(proc.pid, signal.SIGKILL)
        for task in pumps:
            if not task.done():
                task.cancel()


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
