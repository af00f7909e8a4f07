"""The registry, the descriptions, and the pinned JSON schemas of every tool.

A change to what the model is told must be visible in review: the schemas live in
``tool_schemas.json``. After an intended change regenerate them with

    MONKEY_UPDATE_SCHEMAS=1 python -m pytest tests/tools/test_registry.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from monkey.tools.base import ToolError
from monkey.tools.registry import ToolRegistry, default_tools

SNAPSHOT = Path(__file__).with_name("tool_schemas.json")
ORDER = [
    "file_read",
    "file_write",
    "file_edit",
    "file_delete",
    "shell_execute",
    "process_output",
    "process_stop",
    "process_list",
    "list_directory",
    "glob_search",
    "grep_search",
    "web_fetch",
]


def test_default_tools_in_order() -> None:
    assert [t.name for t in default_tools()] == ORDER
    assert ToolRegistry.default().names() == ORDER


def test_lookup() -> None:
    registry = ToolRegistry()
    assert registry.get("file_read").name == "file_read"
    assert registry.find("nope") is None and "grep_search" in registry and len(registry) == 12
    with pytest.raises(ToolError, match="unknown tool nope; available: file_read, file_write"):
        registry.get("nope")
    with pytest.raises(ValueError, match="two tools"):
        registry.add(default_tools()[0])


def test_safety_flags() -> None:
    flags = {t.name: (t.dangerous, t.read_only) for t in default_tools()}
    for name in ("file_write", "file_edit", "file_delete", "shell_execute"):
        assert flags[name] == (True, False), name
    for name in ("file_read", "list_directory", "glob_search", "grep_search"):
        assert flags[name] == (False, True), name
    assert flags["web_fetch"] == (True, True)  # asked (the network), but changes nothing: runs beside reads
    assert flags["process_output"] == flags["process_list"] == (False, True)  # reading output only reads
    assert flags["process_stop"] == (False, False)  # no approval to stop what monkey started; never beside reads


def test_descriptions_are_packaged_and_short() -> None:
    for spec in ToolRegistry().specs():
        assert 40 < len(spec.description) < 1500, spec.name
        assert (Path(__file__).parents[2] / "monkey" / "tools" / f"{spec.name}.md").is_file()


def test_schemas_are_self_contained() -> None:
    for spec in ToolRegistry().specs():
        text = json.dumps(spec.parameters)
        assert "$ref" not in text and "$defs" not in text, spec.name
        assert spec.parameters["type"] == "object" and spec.parameters["additionalProperties"] is False
        for name, prop in spec.parameters["properties"].items():
            assert prop.get("description"), f"{spec.name}.{name} has no description"


def test_schemas_match_snapshot() -> None:
    current = {spec.name: spec.parameters for spec in ToolRegistry().specs()}
    if os.environ.get("MONKEY_UPDATE_SCHEMAS") == "1":
        SNAPSHOT.write_text(json.dumps(current, indent=2, sort_keys=True) + "\n")
    expected = json.loads(SNAPSHOT.read_text()) if SNAPSHOT.exists() else {}
    assert current == expected, (
        "the tool schemas changed; if that is intended, regenerate tests/tools/tool_schemas.json with "
        "MONKEY_UPDATE_SCHEMAS=1 python -m pytest tests/tools/test_registry.py"
    )
