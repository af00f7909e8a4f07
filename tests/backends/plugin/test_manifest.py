"""plugin.yaml: the seed's manifest loads; every mistake is one line naming the file, the field and
what was expected."""

from __future__ import annotations

from pathlib import Path

import pytest

from monkey.backends.plugin.discovery import Catalog, PluginError, discover, resolve
from monkey.backends.plugin.manifest import ManifestError, load_manifest
from tests.support.plugins import SEED


def write(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "plugin.yaml"
    path.write_text(text)
    return path


def test_the_seeds_manifest_loads(tmp_path: Path):
    m = load_manifest(write(tmp_path / "ollama", SEED))
    assert (m.name, m.version, m.protocol, m.description) == ("ollama", "1", "1", "Local LLM via Ollama")
    assert m.capabilities == ("streaming", "tool_use") and m.streaming and m.agent_name == "ollama"
    assert m.argv() == ["python3", str((tmp_path / "ollama" / "ollama-agent.py").resolve())]
    [var] = m.env
    assert (var.name, var.required, var.default) == ("OLLAMA_MODEL", False, "codellama:13b")
    assert m.warnings == ()


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda t: t.replace('name: "ollama"\ntype', "type"), "name: expected a string (missing)"),
        (
            lambda t: t.replace('type: "agent"', 'type: "tool"'),
            "type: expected \"agent\" (the only plugin type monkey runs), got 'tool'",
        ),
        (lambda t: t.replace('protocol: "1"', 'protocol: "2"'), "protocol: expected \"1\", got '2'"),
        (
            lambda t: t.replace('command: ["python3", "./ollama-agent.py"]', 'command: "python3 agent.py"'),
            "executable.command: expected a non-empty list of strings (program and arguments), got 'python3 agent.py'",
        ),
        (
            lambda t: t.replace('command: ["python3", "./ollama-agent.py"]', "command: [python3, 3]"),
            "executable.command[1]: expected a string, got 3",
        ),
        (
            lambda t: t.replace("    - tool_use", "    - telepathy"),
            "agent.capabilities[1]: expected one of: streaming, tool_use, code_execution, vision, long_context, got 'telepathy'",
        ),
        (
            lambda t: t.replace('default: "codellama:13b"', "default: [a, b]"),
            "env.OLLAMA_MODEL.default: expected a string or a number, got list",
        ),
        (
            lambda t: t.replace("required: false", "required: maybe"),
            "env.OLLAMA_MODEL.required: expected true or false, got 'maybe'",
        ),
        (lambda t: t.replace('name: "ollama"\ntype', 'name: "../evil"\ntype'), "name: expected letters, digits"),
        (lambda t: "- just\n- a list\n", "expected a mapping of keys"),
        (lambda t: t.replace("agent:\n", "agent: [\n"), "expected valid YAML, got"),
        (lambda t: "!!python/object/apply:os.system ['echo pwned']\n", "expected valid YAML, got"),
    ],
)
def test_mistakes_name_the_file_and_the_field(tmp_path: Path, change, said):
    path = write(tmp_path / "p", change(SEED))
    with pytest.raises(ManifestError) as info:
        load_manifest(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and said in message
    assert "\n" not in message


def test_a_yaml_syntax_error_says_its_line(tmp_path: Path):
    path = write(tmp_path / "p", SEED.replace("agent:\n", "agent: [\n"))
    with pytest.raises(ManifestError, match=r"line \d+"):
        load_manifest(path)


def test_unknown_keys_are_warnings_and_a_missing_file_an_error(tmp_path: Path):
    m = load_manifest(write(tmp_path / "p", SEED + "homepage: https://example.org\n"))
    assert m.warnings == (f"{m.path}: unknown key 'homepage' (ignored)",)
    with pytest.raises(ManifestError, match="nothing/plugin.yaml: expected a manifest file \\(missing\\)"):
        load_manifest(tmp_path / "nothing")


def test_discovery_keeps_going_past_a_broken_manifest_and_the_project_needs_trust(tmp_path: Path):
    home, ws = tmp_path / "home", tmp_path / "ws"
    write(home / "plugins" / "ollama", SEED)
    write(home / "plugins" / "broken", "name: [\n")
    write(ws / ".monkey" / "plugins" / "ollama", SEED.replace("Local LLM via Ollama", "the project's"))
    untrusted = discover(home, ws, trusted=False)
    assert untrusted.plugins["ollama"].description == "Local LLM via Ollama"
    assert "openai-compat" in untrusted.plugins  # shipped with monkey
    assert any("broken" in p and "valid YAML" in p for p in untrusted.problems)
    assert any("not trusted" in n for n in untrusted.notes)
    trusted = discover(home, ws, trusted=True)
    assert trusted.plugins["ollama"].description == "the project's"
    assert trusted.plugins["ollama"].source == "project"


def test_aliases_extend_plugins_and_each_other(tmp_path: Path):
    catalog = Catalog(plugins={"ollama": load_manifest(write(tmp_path / "o", SEED))})
    plugins = {"ollama": {"env": {"OLLAMA_HOST": "http://127.0.0.1:1"}, "idle_timeout": 5}}
    agents = {
        "fast-local": {"extends": "ollama", "description": "Fast local model", "env": {"OLLAMA_MODEL": "codellama:7b"}},
        "faster": {"extends": "fast-local", "env": {"OLLAMA_MODEL": "tiny"}},
        "loop-a": {"extends": "loop-b"},
        "loop-b": {"extends": "loop-a"},
        "typo": {"extend": "ollama"},
    }
    fast = resolve("fast-local", catalog, plugins, agents)
    assert fast.manifest.name == "ollama" and fast.description == "Fast local model"
    assert fast.settings.env == {"OLLAMA_HOST": "http://127.0.0.1:1", "OLLAMA_MODEL": "codellama:7b"}
    assert fast.settings.idle_timeout == 5
    assert resolve("faster", catalog, plugins, agents).settings.env["OLLAMA_MODEL"] == "tiny"
    with pytest.raises(PluginError, match="in a circle: loop-a -> loop-b -> loop-a"):
        resolve("loop-a", catalog, plugins, agents)
    with pytest.raises(PluginError, match=r"\[agents.typo\]: .*extend"):
        resolve("typo", catalog, plugins, agents)
    with pytest.raises(PluginError, match="no plugin or agent alias named 'nothing'; known: "):
        resolve("nothing", catalog, plugins, agents)
