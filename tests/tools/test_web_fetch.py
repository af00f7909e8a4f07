"""``web_fetch``: a network access decided by the engine, fetched only from where rules allow,
HTML given back as Markdown, nothing of the person's sent. Real HTTP servers on 127.0.0.1."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from monkey.agent.loop import Agent
from monkey.backends.scripted import Script, ScriptCall, ScriptedBackend, ScriptTurn
from monkey.events import ApprovalResolved, Event, ToolResult
from monkey.permissions.decide import Call, decide
from monkey.permissions.policy import ApprovalPolicy
from monkey.permissions.rules import Rule, grant_for, rules_for
from monkey.tools.base import ToolContext
from monkey.tools.errors import ToolError
from monkey.tools.web import blocked_address, check_url
from monkey.tools.web_fetch import WebFetch, WebFetchArgs, to_text

PAGE = (
    b"<!doctype html><html><head><title>T</title><style>p{color:red}</style>"
    b"<script>alert('boom')</script></head><body><nav>menu</nav><h1>Release notes</h1>"
    b"<p>Version <b>2.0</b> adds <a href='/x'>undo</a>.</p></body></html>"
)


class _Handler(http.server.BaseHTTPRequestHandler):
    seen: list[dict[str, str]] = []

    def do_GET(self) -> None:  # noqa: N802 - the http.server name
        type(self).seen.append({"path": self.path, **{k.lower(): v for k, v in self.headers.items()}})
        routes = {
            "/page": (200, "text/html; charset=utf-8", PAGE),
            "/text": (200, "text/plain", b"plain words\n"),
            "/json": (200, "application/json", b'{"a": 1}'),
            "/image": (200, "image/png", b"\x89PNG\r\n\x1a\n" + b"\0" * 64),
            "/missing": (404, "text/html", b"<p>no such page</p>"),
            "/big": (
                200,
                "text/plain",
                b"".join(b"filler paragraph %d\n\n" % i for i in range(20000)) + b"the needle is here\n\n",
            ),
        }
        if self.path.startswith("/redirect"):
            self.send_response(302)
            self.send_header("Location", self.path.partition("?to=")[2])
            self.end_headers()
            return
        status, kind, body = routes.get(self.path, (404, "text/plain", b"?"))
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    _Handler.seen = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def fetch_call(url: str, call_id: str = "c1", prompt: str = "") -> ScriptCall:
    return ScriptCall(name="web_fetch", arguments={"url": url, **({"prompt": prompt} if prompt else {})}, id=call_id)


async def run_agent(workspace: Path, calls: list[ScriptCall], **policy: object) -> list[Event]:
    script = Script(turns=[ScriptTurn(tool_calls=[c]) for c in calls] + [ScriptTurn(text="done")])
    agent = Agent(backend=ScriptedBackend(script), workspace=workspace, policy=ApprovalPolicy.from_strings(**policy))  # type: ignore[arg-type]
    return [e async for e in agent.run("read the page")]


def results(events: list[Event]) -> dict[str, ToolResult]:
    return {e.call_id: e for e in events if isinstance(e, ToolResult)}


async def test_an_allowed_page_comes_back_as_markdown_without_scripts(workspace: Path, server: str) -> None:
    before = sorted(p.name for p in workspace.iterdir())
    events = await run_agent(workspace, [fetch_call(f"{server}/page")], allow=["web_fetch(domain:127.0.0.1)"])
    result = results(events)["c1"]
    assert result.ok, result.output
    assert "# Release notes" in result.output and "Version **2.0** adds [undo](/x)." in result.output
    assert "alert" not in result.output and "color:red" not in result.output and "menu" not in result.output
    assert result.output.startswith(f"[{server}/page: HTTP 200, text/html]")
    resolved = [e for e in events if isinstance(e, ApprovalResolved)]
    assert [r.decision for r in resolved] == ["approved"]
    assert sorted(p.name for p in workspace.iterdir()) == before  # nothing written in the workspace


async def test_without_a_rule_nobody_there_means_no_fetch(workspace: Path, server: str) -> None:
    """Headless (no person): the fetch is refused, in every mode, auto included: no request is made."""
    for mode in ("default", "auto", "plan", "accept-edits"):
        events = await run_agent(workspace, [fetch_call(f"{server}/page")], mode=mode)
        assert not results(events)["c1"].ok, mode
    assert _Handler.seen == []


async def test_a_deny_rule_wins_over_an_allow_rule(workspace: Path, server: str) -> None:
    events = await run_agent(
        workspace, [fetch_call(f"{server}/page")], allow=["web_fetch"], deny=["web_fetch(domain:127.0.0.1)"]
    )
    assert "denied by rule web_fetch(domain:127.0.0.1)" in results(events)["c1"].output
    assert _Handler.seen == []


async def test_loopback_is_refused_when_only_a_broad_rule_allows_the_call(workspace: Path, server: str) -> None:
    """``web_fetch`` (every fetch) approves the call, but no rule names 127.0.0.1: the address is refused."""
    events = await run_agent(
        workspace,
        [fetch_call(f"{server}/page"), fetch_call(server.replace("127.0.0.1", "localhost") + "/page", "c2")],
        allow=["web_fetch"],
    )
    for call_id in ("c1", "c2"):
        output = results(events)[call_id].output
        assert "refused" in output and "loopback address" in output and "web_fetch(domain:" in output
    assert _Handler.seen == []


async def test_a_redirect_to_loopback_is_refused(workspace: Path, server: str) -> None:
    """A public-looking host named by the rule redirects to 127.0.0.1, which no rule names."""
    other = server.replace("127.0.0.1", "localhost")
    events = await run_agent(
        workspace, [fetch_call(f"{other}/redirect?to={server}/page")], allow=["web_fetch(domain:localhost)"]
    )
    output = results(events)["c1"].output
    assert "refused" in output and "127.0.0.1 resolves to a loopback address" in output
    assert [s["path"] for s in _Handler.seen] == ["/redirect?to=" + server + "/page"]


async def test_what_is_sent_holds_nothing_of_the_person(
    workspace: Path, server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-1234567890-secret")
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # the environment's proxy is not used
    events = await run_agent(
        workspace,
        [
            fetch_call(f"{server}/text"),
            fetch_call(f"{server}/text?k=tok-1234567890-secret", "c2"),
            fetch_call(f"{server}/text?k=ghp_" + "a" * 36, "c3"),
            fetch_call(f"http://me:pw@{server[7:]}/text", "c4"),
        ],
        allow=["web_fetch(domain:127.0.0.1)"],
    )
    got = results(events)
    assert got["c1"].ok and "plain words" in got["c1"].output
    assert "secret of monkey's environment" in got["c2"].output
    assert "looks like a credential" in got["c3"].output
    assert "user name or password" in got["c4"].output
    assert [s["path"] for s in _Handler.seen] == ["/text"]
    sent = _Handler.seen[0]
    assert "cookie" not in sent and "authorization" not in sent and sent["user-agent"].startswith("monkey")


async def test_pages_that_are_not_text_and_errors_say_so(tmp_path: Path, server: str) -> None:
    tool = WebFetch()
    ctx = ToolContext(workspace=tmp_path, net_named=lambda host: host == "127.0.0.1")
    with pytest.raises(ToolError, match=r"is image/png \(72 bytes\), not text"):
        await tool.run(WebFetchArgs(url=f"{server}/image"), ctx)
    with pytest.raises(ToolError, match="answered HTTP 404:\nno such page"):
        await tool.run(WebFetchArgs(url=f"{server}/missing"), ctx)
    assert (await tool.run(WebFetchArgs(url=f"{server}/json"), ctx)).output.endswith('{"a": 1}')
    with pytest.raises(ToolError, match="only http and https"):
        tool.check(WebFetchArgs(url="file:///etc/passwd"), ctx)


async def test_a_page_is_fetched_once_per_session_and_a_long_one_keeps_what_the_prompt_names(
    tmp_path: Path, server: str
) -> None:
    tool = WebFetch()
    ctx = ToolContext(workspace=tmp_path, net_named=lambda host: True, read_limit=2000)
    first = await tool.run(WebFetchArgs(url=f"{server}/big", prompt="where is the needle"), ctx)
    assert "the needle is here" in first.output and len(first.output) < 2300
    assert "the parts that mention 'where is the needle'" in first.output
    plain = await tool.run(WebFetchArgs(url=f"{server}/big"), ctx)
    assert "filler paragraph 0" in plain.output and "the needle" not in plain.output
    assert "first 2000 of" in plain.output
    assert [s["path"] for s in _Handler.seen] == ["/big"]  # the second call came from the cache


def test_rules_grants_and_always_name_the_host(tmp_path: Path) -> None:
    args = {"url": "https://Docs.Python.org/3/library/os.html"}
    assert Rule.parse("web_fetch(domain:docs.python.org)").matches("web_fetch", args, for_deny=False)
    assert Rule.parse("web_fetch(domain:*.python.org)").matches("web_fetch", args, for_deny=False)
    assert Rule.parse("web_fetch(domain:*.python.org)").names_host("python.org")
    assert not Rule.parse("web_fetch(domain:python.org)").matches("web_fetch", args, for_deny=False)
    assert not Rule.parse("web_fetch(domain:*.python.org)").names_host("evilpython.org")
    assert rules_for("web_fetch", args) == ["web_fetch(domain:docs.python.org)"]
    key, what = grant_for("web_fetch", args)
    assert what == "fetching pages from docs.python.org"
    policy = ApprovalPolicy.from_strings()
    call = Call(id="c", tool="web_fetch", arguments=args, workspace=tmp_path)
    assert decide(policy, call).question is not None  # asked
    policy.remember("web_fetch", args)
    decided = decide(policy, call).decision
    assert decided is not None and decided.approved and decided.by == "session"
    other = Call(id="c", tool="web_fetch", arguments={"url": "https://pypi.org/"}, workspace=tmp_path)
    assert decide(policy, other).question is not None  # the grant is for that host only


@given(st.ip_addresses())
def test_every_address_is_either_public_or_named_blocked(address: object) -> None:
    import ipaddress

    ip = ipaddress.ip_address(str(address))
    why = blocked_address(str(ip))
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # ::ffff:127.0.0.1 is 127.0.0.1
    special = ip.is_multicast or ip.is_reserved or ip.is_private or ip.is_loopback or ip.is_link_local
    assert (why is None) == (ip.is_global and not special)


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "192.168.0.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "::1",
        "::ffff:127.0.0.1",
        "fe80::1%eth0",
        "fc00::1",
        "224.0.0.1",
    ],
)
def test_loopback_private_metadata_and_shared_addresses_are_blocked(address: str) -> None:
    assert blocked_address(address) is not None


@pytest.mark.parametrize("address", ["8.8.8.8", "151.101.0.223", "2606:4700:4700::1111"])
def test_public_addresses_are_not(address: str) -> None:
    assert blocked_address(address) is None


@given(st.text(max_size=80))
def test_any_text_as_a_url_is_refused_or_checked_never_a_crash(text: str) -> None:
    try:
        check_url(text, ())
    except ToolError:
        pass


def test_html_without_a_content_type_is_still_read_as_html() -> None:
    assert to_text(b"<!DOCTYPE html><p>a <i>b</i></p>", "") == "a *b*"
    assert to_text(b"\x00\x01binary", "application/octet-stream") is None
