"""Plugins installed in a monkey home as a person would (the ``install`` fixture of tests/backends/plugin)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.cli import Run, invoke, run_monkey

SCRIPT_PLUGIN = Path(__file__).resolve().parents[1] / "backends" / "plugin" / "script_plugin.py"
"""A plugin that plays a script of JSON lines and logs what it reads on stdin."""


@dataclass
class Installed:
    """A scripted plugin in the monkey home: where its script and its log of stdin are."""

    name: str
    folder: Path
    script: Path
    log: Path

    def received(self) -> list[dict[str, Any]]:
        """Every JSON line the plugin read on stdin, in order (runs of all its processes)."""
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.startswith("{")]

    def methods(self) -> list[str]:
        return [m.get("method", "") for m in self.received()]

    def saw_eof(self) -> bool:
        return self.log.exists() and "EOF" in self.log.read_text().splitlines()


def manifest_text(name: str, command: list[str], capabilities: list[str], env: str = "") -> str:
    """A ``plugin.yaml`` of an agent plugin that runs ``command``."""
    return (
        f'version: "0.1"\nname: "{name}"\ntype: "agent"\ndescription: "test plugin {name}"\nprotocol: "1"\n'
        f"executable:\n  command: {json.dumps(command)}\n"
        f'agent:\n  name: "{name}"\n  streaming: true\n  capabilities: {json.dumps(capabilities)}\n' + env
    )


def task(workspace: Path, home: Path, name: str, prompt: str = "say hello", *flags: str, process: bool = False) -> Run:
    """``monkey agent --backend plugin:NAME --task PROMPT`` with stream-json output, in this process
    (``process=True``: as a process, for what only a process shows, such as the plugins it leaves)."""
    args = [
        "agent",
        "--backend",
        f"plugin:{name}",
        "--task",
        prompt,
        "--cwd",
        str(workspace),
        "--output-format",
        "stream-json",
        *flags,
    ]
    return run_monkey(args, home=home) if process else invoke(args, home=home)


WRITE: dict[str, Any] = {
    "tool_use": {"id": "t1", "name": "file_write", "input": {"path": "notes.txt", "content": "from the plugin\n"}}
}
"""A plugin step that asks monkey to write notes.txt."""


def results(plugin: Installed) -> list[dict[str, Any]]:
    """The tool results monkey sent the plugin, in order."""
    return [m["params"] for m in plugin.received() if m.get("method") == "agent.tool_result"]


SEED = """version: "1"
name: "ollama"
type: "agent"
description: "Local LLM via Ollama"
protocol: "1"

executable:
  command: ["python3", "./ollama-agent.py"]

agent:
  name: "ollama"
  streaming: true
  capabilities:
    - streaming
    - tool_use

env:
  OLLAMA_MODEL:
    description: "Model to use (e.g., codellama:13b)"
    required: false
    default: "codellama:13b"
"""


def configure_openai_compat(home: Path, url: str, extra: str = "") -> None:
    """monkey's config for the openai-compat example plugin against the server at ``url``."""
    (home / "config.toml").write_text(
        f'[plugins.openai-compat]\nenv = {{ OPENAI_COMPAT_BASE_URL = "{url}" }}\nmodel = "fake-model"\n{extra}'
    )
