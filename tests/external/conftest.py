"""Fixtures for the external-agent backends: a fake agent executable on disk."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.fixture
def fake_agent(tmp_path: Path) -> Path:
    """An executable ``claude`` that runs tests/external/fake_agent.py with this Python."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "claude"
    exe.write_text(
        f"#!{sys.executable}\nimport runpy\nrunpy.run_path({str(HERE / 'fake_agent.py')!r}, run_name='__main__')\n"
    )
    exe.chmod(0o755)
    os.link(exe, bindir / "codex")
    return exe


@pytest.fixture
def fake_codex(fake_agent: Path) -> Path:
    """The same fake agent as an executable ``codex``."""
    return fake_agent.with_name("codex")
