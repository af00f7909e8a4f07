"""Snapshot tests reuse the suite's fixtures: an isolated monkey home, a git workspace, and
the real app on a scripted backend."""

from tests.conftest import monkey_home, workspace  # noqa: F401 - fixtures (monkey_home is autouse)
from tests.ui.conftest import app_for  # noqa: F401 - a fixture
