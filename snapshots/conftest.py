"""Snapshot tests reuse the suite's fixtures: an isolated monkey home, a git workspace, and
the real app on a scripted backend."""

import pytest
from textual.reactive import reactive
from textual.widgets import Input, TextArea

from tests.conftest import monkey_home, workspace  # noqa: F401 - fixtures (monkey_home is autouse)
from tests.ui.conftest import app_for  # noqa: F401 - a fixture


@pytest.fixture(autouse=True)
def steady_cursors(monkeypatch: pytest.MonkeyPatch) -> None:
    """A blinking cursor is drawn or not depending on when the screenshot is taken: keep it on."""
    for cls in (Input, TextArea):
        steady = reactive(False, init=False)
        steady.__set_name__(cls, "cursor_blink")
        monkeypatch.setattr(cls, "cursor_blink", steady)
