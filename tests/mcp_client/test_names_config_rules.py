"""Naming, configuration parsing and rule matching of MCP tools."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from monkey.permissions.policy import ApprovalPolicy
from monkey.permissions.rules import Rule, RuleError
from monkey.mcp_client.config import McpConfigError, load_servers, parse_server
from monkey.mcp_client.names import MAX_LEN, assign_names, server_of, tool_name

NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@given(st.text(min_size=1, max_size=80), st.text(min_size=1, max_size=120))
def test_a_tool_name_is_safe_short_and_keeps_its_server(server: str, tool: str) -> None:
    name = tool_name(server, tool)
    assert NAME.match(name) and len(name) <= MAX_LEN
    assert name == tool_name(server, tool)
    assert name.startswith("mcp__") and server_of(name) is not None
    assert "__" not in server_of(name)  # type: ignore[operator]


@given(st.text(alphabet="abc", min_size=70, max_size=90), st.text(alphabet="abc", min_size=70, max_size=90))
def test_long_names_that_differ_stay_apart(a: str, b: str) -> None:
    if a != b:
        assert tool_name("srv", a) != tool_name("srv", b)


def test_a_cut_name_ends_in_a_hash_and_collisions_are_detected() -> None:
    long = tool_name("server", "t" * 100)
    assert len(long) == 64 and re.search(r"_[0-9a-f]{8}$", long)
    names, errors = assign_names("s", ["read.file", "read_file", "ok"])
    assert names == {"read.file": "mcp__s__read_file", "ok": "mcp__s__ok"}
    assert errors == ["tools 'read.file' and 'read_file' both become mcp__s__read_file; 'read_file' left out"]


def test_a_server_name_with_double_underscores_cannot_reach_another_servers_tools() -> None:
    assert tool_name("a__b", "c") == "mcp__a_b__c"


def test_a_definition_expands_variables_and_checks_its_keys() -> None:
    config = parse_server(
        "s",
        {"command": "${BIN}", "args": ["--x", "${MISSING:-dflt}"], "env": {"K": "${V}"}, "tool_timeout": 5},
        origin="user",
        source="f",
        environ={"BIN": "/bin/srv", "V": "v"},
    )
    assert (config.command, config.args, dict(config.env), config.tool_timeout) == (
        "/bin/srv",
        ("--x", "dflt"),
        {"K": "v"},
        5.0,
    )
    assert config.startup_timeout == 10.0 and config.transport == "stdio"
    http = parse_server(
        "h",
        {"url": "https://x/mcp", "headers": {"Authorization": "Bearer ${T}"}},
        origin="user",
        source="f",
        environ={"T": "tok"},
    )
    assert http.transport == "http" and http.headers["Authorization"] == "Bearer tok"


@pytest.mark.parametrize(
    "spec, said",
    [
        ({"command": "x", "url": "y"}, "needs exactly one of command (stdio) or url"),
        ({}, "needs exactly one of command"),
        ({"command": "x", "args": "a b"}, "args must be a list of strings"),
        ({"command": "x", "colour": 1}, "unknown key 'colour'"),
        ({"command": "${NOPE}"}, "${NOPE} is not set"),
        ({"command": "x", "tool_timeout": -1}, "tool_timeout must be a positive number of seconds"),
        ({"command": "x", "trusted": True}, "trusted = true is only read from your own config"),
        ("just a string", "must be an object with command or url"),
    ],
)
def test_a_bad_definition_is_one_clear_line(spec: object, said: str) -> None:
    with pytest.raises(McpConfigError) as caught:
        parse_server("s", spec, origin="project", source=".mcp.json", environ={})
    message = str(caught.value)
    assert said in message and message.startswith(".mcp.json: server 's': ") and "\n" not in message


def test_files_are_read_with_the_persons_definitions_winning(tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    (ws / ".monkey").mkdir(parents=True)
    home.mkdir()
    (ws / ".mcp.json").write_text('{"mcpServers": {"a": {"command": "project-a"}, "b": {"command": "project-b"}}}')
    (home / "config.toml").write_text('[mcp_servers.a]\ncommand = "mine"\ntrusted = true\n')
    (ws / ".monkey" / "config.toml").write_text('[mcp_servers.c]\nurl = "http://127.0.0.1:1/mcp"\n')
    found = load_servers(ws, home, environ={})
    assert {n: (s.origin, s.command or s.url) for n, s in found.servers.items()} == {
        "a": ("user", "mine"),
        "b": ("project", "project-b"),
        "c": ("project", "http://127.0.0.1:1/mcp"),
    }
    assert found.servers["a"].trusted and found.errors == []


def test_bad_toml_and_json_files_are_told_and_the_rest_still_read(tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    (ws / ".monkey").mkdir(parents=True)
    home.mkdir()
    (ws / ".mcp.json").write_text('{"mcpServers": [1, 2]}')
    (ws / ".monkey" / "config.toml").write_text("[mcp_servers.x\n")
    (home / "mcp.json").write_text('{"mcpServers": {"ok": {"command": "fine"}}}')
    found = load_servers(ws, home, environ={})
    assert list(found.servers) == ["ok"]
    assert len(found.errors) == 2
    assert 'expected an object with "mcpServers"' in found.errors[0]
    assert found.errors[1].startswith(f"cannot read {ws / '.monkey' / 'config.toml'}: ")


def test_mcp_rules_name_a_server_a_prefix_or_one_tool() -> None:
    policy = ApprovalPolicy.from_strings(["mcp__fs", "mcp__gh__get_*", "mcp__db__query"], ["mcp__fs__delete"])
    allowed = lambda tool: (d := policy.check(tool, {})) is not None and d.approved  # noqa: E731
    assert allowed("mcp__fs__read_file") and allowed("mcp__gh__get_issue") and allowed("mcp__db__query")
    assert not allowed("mcp__fs__delete") and not allowed("mcp__gh__create_issue")
    assert not allowed("mcp__fsx__read") and not allowed("mcp__db__query_all")
    assert policy.check("mcp__fs__delete", {}).by == "rule"  # type: ignore[union-attr]
    with pytest.raises(RuleError):
        Rule.parse("file_*")


def test_plan_mode_refuses_and_accept_edits_asks_for_mcp_tools() -> None:
    plan = ApprovalPolicy.from_strings(["mcp__fs"], mode="plan")
    assert plan.check("mcp__fs__write_file", {}).approved is False  # type: ignore[union-attr]
    edits = ApprovalPolicy.from_strings(mode="accept-edits")
    assert edits.check("mcp__fs__write_file", {}) is None


def test_a_toml_file_that_is_not_utf8_is_told_not_raised(tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    (ws / ".monkey").mkdir(parents=True)
    home.mkdir()
    (ws / ".monkey" / "config.toml").write_bytes(b'[mcp_servers.x]\ncommand = "caf\xe9"\n')
    (home / "mcp.json").write_text('{"mcpServers": {"ok": {"command": "fine"}}}')
    found = load_servers(ws, home, environ={})
    assert list(found.servers) == ["ok"]
    assert [e.split(": ", 1)[0] for e in found.errors] == [f"cannot read {ws / '.monkey' / 'config.toml'}"]
    assert "'utf-8' codec can't decode" in found.errors[0]
