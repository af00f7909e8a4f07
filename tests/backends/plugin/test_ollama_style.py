"""An Ollama plugin in the seed's style (manifest exactly as the seed prints it) against a fake
Ollama server on 127.0.0.1: validate, list, a task streaming its text, an alias, the server down."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.support.cli import invoke
from tests.support.fakes.ollama_server import FakeOllama
from tests.support.plugins import SEED
from tests.support.plugins import task

OLLAMA = Path(__file__).resolve().parent / "ollama"
ALIAS = """
[agents.fast-local]
extends = "ollama"
description = "Fast local model"
env = { OLLAMA_MODEL = "codellama:7b" }
"""


@pytest.fixture
def ollama(monkey_home: Path) -> Path:
    folder = monkey_home / "plugins" / "ollama"
    shutil.copytree(OLLAMA, folder)
    assert (folder / "plugin.yaml").read_text() == SEED  # the seed's manifest, unchanged
    return folder


def configure(home: Path, url: str) -> None:
    (home / "config.toml").write_text(f'[plugins.ollama]\nenv = {{ OLLAMA_HOST = "{url}" }}\n' + ALIAS)


def test_validate_walks_every_step(ollama, workspace: Path, monkey_home: Path):
    with FakeOllama() as server:
        configure(monkey_home, server.url)
        run = invoke(
            ["plugins", "validate", "ollama", "--run", "Hello, world!", "--cwd", str(workspace)], home=monkey_home
        )
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith(
        f"ok   manifest {ollama / 'plugin.yaml'}: ollama 1, protocol 1, capabilities streaming, tool_use"
    )
    assert lines[1] == "ok   agent.init: name ollama, model codellama:13b, capabilities streaming, tool_use"
    assert lines[2] == "ok   agent.available: available"
    assert lines[3] == "ok   usage: 12 in, 8 out"
    assert lines[4] == "ok   agent.run: 39 characters of text: Hello from codellama:13b: Hello, world!"


def test_a_task_streams_the_models_text(ollama, workspace: Path, monkey_home: Path):
    with FakeOllama() as server:
        configure(monkey_home, server.url)
        run = task(workspace, monkey_home, "ollama", "Say hi")
        alias = task(workspace, monkey_home, "fast-local", "Say hi")
    assert run.returncode == 0, run.stderr
    deltas = [e["text"] for e in run.of_type("text_delta")]
    assert len(deltas) > 1 and "".join(deltas) == "Hello from codellama:13b: Say hi"
    assert run.of_type("turn_completed")[0]["result"] == "Hello from codellama:13b: Say hi"
    usage = run.of_type("usage")[0]
    assert (usage["input_tokens"], usage["output_tokens"]) == (12, 8)
    assert alias.returncode == 0, alias.stderr
    assert alias.of_type("session_started")[0]["backend"] == "plugin:fast-local"
    assert alias.of_type("turn_completed")[0]["result"] == "Hello from codellama:7b: Say hi"
    assert [r["model"] for r in server.requests] == ["codellama:13b", "codellama:7b"]


def test_list_shows_plugins_and_aliases(ollama, workspace: Path, monkey_home: Path):
    with FakeOllama() as server:
        configure(monkey_home, server.url)
        run = invoke(["plugins", "list", "--cwd", str(workspace)], home=monkey_home)
    assert run.returncode == 0, run.stderr
    rows = {line.split()[0]: line for line in run.stdout.splitlines()}
    assert rows["ollama"].split()[1:3] == ["1", "user"] and "streaming, tool_use" in rows["ollama"]
    assert rows["ollama"].endswith("available (model codellama:13b)")
    assert "alias of ollama" in rows["fast-local"] and rows["fast-local"].endswith("available (model codellama:7b)")
    assert "built-in" in rows["openai-compat"] and "not available" in rows["openai-compat"]
    listed = invoke(["plugins", "list", "--json", "--no-check", "--cwd", str(workspace)], home=monkey_home)
    by_name = {row["name"]: row for row in json.loads(listed.stdout)}
    assert by_name["fast-local"]["source"] == "alias of ollama" and "status" not in by_name["fast-local"]
    assert by_name["ollama"]["capabilities"] == ["streaming", "tool_use"]
    info = invoke(["plugins", "info", "fast-local", "--cwd", str(workspace)], home=monkey_home)
    assert info.returncode == 0, info.stderr
    assert "alias: fast-local -> ollama" in info.stdout
    assert "env OLLAMA_MODEL (optional; set by monkey's config): Model to use (e.g., codellama:13b)" in info.stdout


def test_with_the_server_down_it_is_not_available(ollama, workspace: Path, monkey_home: Path):
    with FakeOllama() as server:
        url = server.url
    configure(monkey_home, url)
    run = invoke(["plugins", "validate", "ollama", "--cwd", str(workspace)], home=monkey_home)
    assert run.returncode == 1
    assert run.stdout.splitlines()[-1] == "FAIL agent.available: not available: Ollama server not running"
    agent = task(workspace, monkey_home, "ollama", "Say hi")
    assert agent.returncode == 1
    assert agent.stderr.strip().splitlines()[-1] == "monkey: plugin ollama is not available: Ollama server not running"


def test_validate_a_folder_by_its_path(workspace: Path, monkey_home: Path, tmp_path: Path):
    with FakeOllama() as server:
        configure(monkey_home, server.url)
        run = invoke(["plugins", "validate", str(OLLAMA), "--cwd", str(workspace)], home=monkey_home)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.splitlines()[-1] == "ok   agent.available: available"
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "plugin.yaml").write_text(SEED.replace('type: "agent"', 'type: "agnet"'))
    bad = invoke(["plugins", "validate", str(broken), "--cwd", str(workspace)], home=monkey_home)
    assert bad.returncode == 1
    assert bad.stdout.strip() == (
        f'FAIL manifest: {(broken / "plugin.yaml").resolve()}: type: expected "agent" '
        "(the only plugin type monkey runs), got 'agnet'"
    )
