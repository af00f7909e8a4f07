#!/usr/bin/env python3
"""Record the real Codex CLI's ``exec --json`` output against the fake Responses API.

    npm ci --prefix tests/npm
    python tests/external/record_codex.py tests/npm/node_modules/.bin/codex

Writes tests/fixtures/codex/real_*.jsonl: a text answer, the same thread resumed (usage
is cumulative), a shell command that writes a file (after a reasoning summary), an
``apply_patch`` file change, a failing command, an API error, and a model Codex has no
metadata for (an ``error`` item before the turn). The command lines are the ones
:class:`monkey.backends.codex.backend.CodexBackend` builds. The Codex version used is
written to tests/fixtures/codex/real_VERSION.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from monkey.backends.codex.backend import CodexBackend  # noqa: E402
from tests.external.fake_openai_responses import FakeResponses, codex_config  # noqa: E402

MODEL = "gpt-5.5"
"""A model this Codex knows (it then offers ``apply_patch`` and adds no metadata warning)."""

CASES = [  # (fixture, prompt, model, resume the thread of this fixture)
    ("real_text", "say hello", MODEL, ""),
    ("real_resumed", "say hello again", MODEL, "real_text"),
    ("real_shell", "please create hello.txt", MODEL, ""),
    ("real_patch", "please patch notes.txt", MODEL, ""),
    ("real_command_failed", "please cat missing.txt", MODEL, ""),
    ("real_api_error", "please fail now", MODEL, ""),
    ("real_unknown_model", "say hello", "gpt-fake", ""),
]


def main() -> int:
    codex = sys.argv[1] if len(sys.argv) > 1 else "codex"
    out = ROOT / "tests" / "fixtures" / "codex"
    version = subprocess.run([codex, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    (out / "real_VERSION").write_text(version + "\n")
    threads: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp, FakeResponses() as srv:
        for name, prompt, model, resume in CASES:
            home = Path(tmp) / f"codex-home-{resume or name}"
            ws = Path(tmp) / f"proj-{resume or name}"
            home.mkdir(exist_ok=True)
            ws.mkdir(exist_ok=True)
            (home / "config.toml").write_text(codex_config(srv.url, model=model))
            (Path(tmp) / "tmp").mkdir(exist_ok=True)  # Codex makes no sandbox helper inside its temp folder
            env = {"PATH": os.environ["PATH"], "HOME": tmp, "CODEX_HOME": str(home), "FAKE_OPENAI_KEY": "sk-fake",
                   "TMPDIR": str(Path(tmp) / "tmp")}
            backend = CodexBackend(executable=codex, model=None, workspace=ws, check_version=False)
            backend.agent_session_id = threads.get(resume, "")
            run = subprocess.run(backend.argv(prompt), input=prompt.encode(), capture_output=True, cwd=ws, env=env,
                                 timeout=120)
            (out / f"{name}.jsonl").write_bytes(run.stdout)
            for line in run.stdout.splitlines():
                obj = json.loads(line)
                if obj.get("type") == "thread.started":
                    threads[name] = obj["thread_id"]
            print(name, run.returncode, len(run.stdout), "bytes", run.stderr.decode()[-300:].strip())
    print(version)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
