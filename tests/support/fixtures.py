"""Fixtures shared by the two test roots (``tests/`` and ``snapshots/``): each conftest imports them,
so neither imports the other."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.app import make_app


@pytest.fixture(autouse=True)
def monkey_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own monkey home, so no user config leaks in."""
    home = tmp_path_factory.mktemp("monkey-home")
    monkeypatch.setenv("MONKEY_HOME", str(home))
    monkeypatch.setenv("MONKEY_USER_SKILLS", "")  # nor skills from the person's ~/.agents/skills
    monkeypatch.setenv("MONKEY_LSP_BUILTINS", "off")  # no `ruff server` a test did not ask for (tests/lsp turn it on)
    for name in ("TERM_PROGRAM", "KITTY_WINDOW_ID", "WT_SESSION", "WEZTERM_PANE", "DISPLAY", "WAYLAND_DISPLAY"):
        monkeypatch.delenv(name, raising=False)  # no notification pops up on the runner's terminal or desktop
    return home


@pytest.fixture
def app_for(workspace: Path, tmp_path: Path):
    """``app_for(turns, *flags, **kw)``: the real app (:class:`MonkeyApp`) for a script, not yet running."""

    def build(turns: list[dict[str, Any]], *flags: str, **kw: Any):  # type: ignore[no-untyped-def]
        return make_app(workspace, tmp_path / "script.json", turns, *flags, **kw)

    return build
