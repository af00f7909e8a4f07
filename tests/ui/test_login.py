"""No API key: the session says what the embedded model can do and how to set a key; ``/login KEY``
keeps one in the user's own config.toml (mode 0600, in no history); ``/backend anthropic``
says what is missing."""

from __future__ import annotations

import os
import stat
import tomllib
from pathlib import Path

import pytest

from monkey.backends.select import choose_backend
from monkey.config import Config
from monkey.session.login import store_key
from tests.support.app import notices, settle, type_and_send


def test_without_a_key_the_start_says_what_the_embedded_model_can_do_and_how_to_set_one() -> None:
    choice = choose_backend(flag=None, local=False, script=None, base_url=None, api_key=None, config=Config(), env={})
    assert choice.name == "local"
    [said] = choice.notices
    assert "embedded local model" in said and "cannot be relied on to use tools" in said
    assert "ANTHROPIC_API_KEY" in said and "/login" in said


def test_a_stored_key_chooses_anthropic() -> None:
    config = Config()
    config.anthropic.api_key = "sk-stored"
    choice = choose_backend(flag=None, local=False, script=None, base_url=None, api_key=None, config=config, env={})
    assert choice.name == "anthropic" and "/login" in choice.notices[0]


def test_store_key_keeps_the_rest_of_the_file_and_writes_it_0600(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('# my settings\n[approvals]\nallow = ["git status"]\n')
    os.chmod(tmp_path / "config.toml", 0o644)
    store_key(tmp_path, "sk-one")
    path = store_key(tmp_path, "sk-two")  # replaced, not added twice
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    text = path.read_text()
    assert text.startswith("# my settings") and tomllib.loads(text)["anthropic"]["api_key"] == "sk-two"
    assert tomllib.loads(text)["approvals"]["allow"] == ["git status"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".config.toml.lock", "config.toml"], (
        "no temporary file left (the lock file is the user files' own, shared with approve-for-good and revoke)"
    )
    with pytest.raises(ValueError):
        store_key(tmp_path, "two words")


def test_a_projects_config_may_not_set_the_key(workspace: Path, monkey_home: Path) -> None:
    from monkey.config import load_config
    from monkey.trust import trust

    trust(workspace, monkey_home)
    (workspace / ".monkey").mkdir()
    (workspace / ".monkey" / "config.toml").write_text('[anthropic]\napi_key = "sk-theirs"\n')
    config = load_config(workspace)
    assert config.anthropic.api_key == "" and any("anthropic.api_key" in n for n in config.notices)


async def test_login_and_backend_anthropic_in_the_app(app_for, monkey_home: Path, monkeypatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    app = app_for([{"text": "x"}])
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot, app)
        await type_and_send(pilot, app, "/backend anthropic")
        await settle(pilot, app)
        said = notices(app)[-1]
        assert "cannot switch to anthropic: no Anthropic API key" in said and "/login KEY" in said
        assert app.agent.backend.name == "scripted"
        await type_and_send(pilot, app, "/login")
        await settle(pilot, app)
        assert "ANTHROPIC_API_KEY" in notices(app)[-1] and "/login KEY" in notices(app)[-1]
        await type_and_send(pilot, app, "/login sk-ant-test-0123")
        await settle(pilot, app)
        assert "key stored in" in notices(app)[-1]
        config = monkey_home / "config.toml"
        assert stat.S_IMODE(config.stat().st_mode) == 0o600
        assert tomllib.loads(config.read_text())["anthropic"]["api_key"] == "sk-ant-test-0123"
        history = [p for p in monkey_home.rglob("*") if p.is_file() and p != config]
        assert any("/backend anthropic" in p.read_text(errors="replace") for p in history), "the history is there"
        assert all("sk-ant-test-0123" not in p.read_text(errors="replace") for p in history)
        await type_and_send(pilot, app, "/backend anthropic")
        await settle(pilot, app)
        assert app.agent.backend.name == "anthropic", notices(app)[-1]
