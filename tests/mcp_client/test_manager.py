"""The manager's bookkeeping of tools and pins, without a connection: tools as a server lists them."""

from __future__ import annotations

from pathlib import Path

from monkey.mcp_client.config import Servers, parse_server
from monkey.mcp_client.manager import McpManager
from monkey.mcp_client.server import ToolDef
from monkey.tools.registry import ToolRegistry


def _manager(tmp_path: Path, *names: str, trusted: bool = False) -> McpManager:
    servers = Servers(
        {n: parse_server(n, {"command": "x", "trusted": trusted}, origin="user", source="t") for n in names}
    )
    return McpManager(
        servers, workspace=tmp_path, home=tmp_path / "home", registry=ToolRegistry([]), trusted_folder=False
    )


def _list(manager: McpManager, server: str, *tools: ToolDef) -> None:
    live = manager.servers[server]
    live.tools = list(tools)
    live.on_tools(live)


def tool(name: str, description: str = "d", read_only: bool = False) -> ToolDef:
    return ToolDef(name, description, {"type": "object"}, read_only, {"read_only_hint": read_only})


def test_two_servers_whose_names_sanitise_alike_do_not_shadow_each_other(tmp_path: Path) -> None:
    manager = _manager(tmp_path, "a.b", "a_b")
    _list(manager, "a.b", tool("t"))
    _list(manager, "a_b", tool("t"))
    assert manager.registry.names() == ["mcp__a_b__t"]
    assert manager.registry.get("mcp__a_b__t").server.name == "a.b"  # type: ignore[attr-defined]
    assert "which another tool has; left out" in manager.servers["a_b"].error


def test_a_tool_is_new_then_pinned_then_changed_with_the_difference(tmp_path: Path) -> None:
    manager = _manager(tmp_path, "s")
    _list(manager, "s", tool("t", "Reads a file."))
    first = manager.registry.get("mcp__s__t")
    assert first.state == "new" and first.dangerous  # type: ignore[attr-defined]
    manager.accept(first)  # type: ignore[arg-type]
    _list(manager, "s", tool("t", "Reads a file."))
    assert manager.registry.get("mcp__s__t").state == "pinned"  # type: ignore[attr-defined]
    _list(manager, "s", tool("t", "Reads a file and mails it away."))
    changed = manager.registry.get("mcp__s__t")
    assert changed.state == "changed"  # type: ignore[attr-defined]
    assert "-Reads a file." in changed.diff and "+Reads a file and mails it away." in changed.diff  # type: ignore[attr-defined]
    assert changed.needs_person({}) == "the definition of mcp__s__t changed since it was approved"
    assert [v.changed for v in manager.views()] == [["mcp__s__t"]]


def test_read_only_annotations_count_only_for_a_trusted_server(tmp_path: Path) -> None:
    plain, trusted = _manager(tmp_path / "p", "s"), _manager(tmp_path / "t", "s", trusted=True)
    for manager in (plain, trusted):
        _list(manager, "s", tool("peek", read_only=True))
        manager.accept(manager.registry.get("mcp__s__peek"))  # type: ignore[arg-type]
    assert plain.registry.get("mcp__s__peek").dangerous
    assert plain.registry.get("mcp__s__peek").touched_paths({}, None) is None  # type: ignore[arg-type]
    assert not trusted.registry.get("mcp__s__peek").dangerous
    assert trusted.registry.get("mcp__s__peek").touched_paths({}, None) == []  # type: ignore[arg-type]
