"""Installing the tests' plugins into the test's monkey home, as a person would."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
SCRIPT_PLUGIN = HERE / "script_plugin.py"


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
    return (f'version: "0.1"\nname: "{name}"\ntype: "agent"\ndescription: "test plugin {name}"\nprotocol: "1"\n'
            f"executable:\n  command: {json.dumps(command)}\n"
            f'agent:\n  name: "{name}"\n  streaming: true\n  capabilities: {json.dumps(capabilities)}\n' + env)


@pytest.fixture
def install(monkey_home: Path, tmp_path: Path) -> Callable[..., Installed]:
    """``install(name, run_steps, **settings)``: a scripted plugin under ``plugins/NAME`` with
    ``[plugins.NAME]`` in the user's config (its script and log paths in ``env``, then ``settings``)."""
    config_parts: list[str] = []

    def make(name: str, steps: list[dict[str, Any]], *, init: dict[str, Any] | None = None,
             available: dict[str, Any] | None = None, capabilities: list[str] | None = None,
             settings: str = "") -> Installed:
        folder = monkey_home / "plugins" / name
        folder.mkdir(parents=True)
        script = tmp_path / f"{name}-script.json"
        script.write_text(json.dumps({"init": init, "available": available, "run": steps}))
        log = tmp_path / f"{name}-stdin.log"
        caps = capabilities if capabilities is not None else ["streaming", "tool_use"]
        (folder / "plugin.yaml").write_text(manifest_text(name, [sys.executable, str(SCRIPT_PLUGIN)], caps))
        config_parts.append(f'[plugins.{name}]\nenv = {{ PLUGIN_SCRIPT = "{script}", PLUGIN_LOG = "{log}" }}\n'
                            + settings + "\n")
        (monkey_home / "config.toml").write_text("\n".join(config_parts))
        return Installed(name, folder, script, log)

    return make
