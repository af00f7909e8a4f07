"""Installing the tests' plugins into the test's monkey home, as a person would."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.plugins import SCRIPT_PLUGIN, Installed, manifest_text


@pytest.fixture
def install(monkey_home: Path, tmp_path: Path) -> Callable[..., Installed]:
    """``install(name, run_steps, **settings)``: a scripted plugin under ``plugins/NAME`` with
    ``[plugins.NAME]`` in the user's config (its script and log paths in ``env``, then ``settings``)."""
    config_parts: list[str] = []

    def make(
        name: str,
        steps: list[dict[str, Any]],
        *,
        init: dict[str, Any] | None = None,
        available: dict[str, Any] | None = None,
        capabilities: list[str] | None = None,
        settings: str = "",
    ) -> Installed:
        folder = monkey_home / "plugins" / name
        folder.mkdir(parents=True)
        script = tmp_path / f"{name}-script.json"
        script.write_text(json.dumps({"init": init, "available": available, "run": steps}))
        log = tmp_path / f"{name}-stdin.log"
        caps = capabilities if capabilities is not None else ["streaming", "tool_use"]
        (folder / "plugin.yaml").write_text(manifest_text(name, [sys.executable, str(SCRIPT_PLUGIN)], caps))
        config_parts.append(
            f'[plugins.{name}]\nenv = {{ PLUGIN_SCRIPT = "{script}", PLUGIN_LOG = "{log}" }}\n' + settings + "\n"
        )
        (monkey_home / "config.toml").write_text("\n".join(config_parts))
        return Installed(name, folder, script, log)

    return make
