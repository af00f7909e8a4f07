#!/usr/bin/env python3
"""Record the real Codex CLI's ``app-server`` JSON-RPC streams against the fake Responses API.

    npm install --prefix tests/npm
    python tests/external/record_codex_app.py tests/npm/node_modules/.bin/codex

Writes tests/fixtures/codex/app_*.jsonl: what ``codex app-server`` printed (the workspace
path replaced by ``@WORKSPACE@``) while monkey's own opening requests
(:meth:`monkey.backends.codex.backend.CodexBackend.stdin`) and ``turn/start`` were sent and
each approval request was answered with the case's decision: a text answer, the thread
resumed by a second process, a command accepted, the same command declined, a file change
accepted, a file change into ``.git/hooks`` declined, a command cancelled while its
approval waited, and an API error. tests/external/fake_agent.py replays them (JSON-RPC mode).
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

from monkey.backends.codex import rpc  # noqa: E402
from monkey.backends.codex.app_parser import TURN_REQUEST  # noqa: E402
from monkey.backends.codex.backend import CodexBackend  # noqa: E402
from tests.support.fakes.openai_responses import FakeResponses, codex_config  # noqa: E402

MODEL = "gpt-5.5"
CASES = [  # (fixture, prompt, decision for every approval request, resume the thread of this fixture)
    ("app_text", "say hello", "", ""),
    ("app_resumed", "say hello again", "", "app_text"),
    ("app_shell", "please create hello.txt", "accept", ""),
    ("app_declined", "please create hello.txt", "decline", ""),
    ("app_patch", "please patch notes.txt", "accept", ""),
    ("app_hook", "please patch a hook", "decline", ""),
    ("app_cancel", "please sleep a while", "cancel", ""),
    ("app_api_error", "please fail now", "", ""),
]


def run_case(codex: str, backend: CodexBackend, prompt: str, decision: str, ws: Path, env: dict[str, str]) -> bytes:
    proc = subprocess.Popen(
        backend.argv(prompt), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ws, env=env
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(backend.stdin(prompt))
    proc.stdin.flush()
    out = b""
    for line in iter(proc.stdout.readline, b""):
        out += line
        obj = json.loads(line)
        if obj.get("id") == 2 and "result" in obj:
            thread = obj["result"]["thread"]["id"]
            proc.stdin.write(
                rpc.message(
                    TURN_REQUEST, "turn/start", {"threadId": thread, "input": [{"type": "text", "text": prompt}]}
                )
            )
            proc.stdin.flush()
        elif "id" in obj and "method" in obj:
            proc.stdin.write(
                json.dumps({"jsonrpc": "2.0", "id": obj["id"], "result": {"decision": decision}}).encode() + b"\n"
            )
            proc.stdin.flush()
        if obj.get("method") == "turn/completed" or (obj.get("id") in (1, 2, 3) and "error" in obj):
            break
    proc.stdin.close()
    proc.wait(30)
    err = proc.stderr.read().decode() if proc.stderr else ""
    print(prompt, proc.returncode, len(out), "bytes", err[-300:].strip())
    return out.replace(str(ws).encode(), b"@WORKSPACE@")


def main() -> int:
    codex = sys.argv[1] if len(sys.argv) > 1 else "codex"
    codex = str(Path(codex).resolve()) if os.sep in codex else codex
    out = ROOT / "tests" / "fixtures" / "codex"
    version = subprocess.run([codex, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    (out / "app_VERSION").write_text(version + "\n")
    threads: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp, FakeResponses() as srv:
        for name, prompt, decision, resume in CASES:
            home = Path(tmp) / f"codex-home-{resume or name}"
            ws = Path(tmp) / f"proj-{resume or name}"
            home.mkdir(exist_ok=True)
            ws.mkdir(exist_ok=True)
            subprocess.run(["git", "init", "-q", str(ws)], check=True)
            (home / "config.toml").write_text(codex_config(srv.url, model=MODEL))
            (Path(tmp) / "tmp").mkdir(exist_ok=True)  # Codex makes no sandbox helper inside its temp folder
            env = {
                "PATH": os.environ["PATH"],
                "HOME": tmp,
                "CODEX_HOME": str(home),
                "FAKE_OPENAI_KEY": "sk-fake",
                "TMPDIR": str(Path(tmp) / "tmp"),
            }
            backend = CodexBackend(executable=codex, model=None, workspace=ws, check_version=False)
            backend.agent_session_id = threads.get(resume, "")
            data = run_case(codex, backend, prompt, decision, ws, env).replace(tmp.encode(), b"/tmp/codex-record")
            (out / f"{name}.jsonl").write_bytes(data)
            for line in data.splitlines():
                obj = json.loads(line)
                if obj.get("id") == 2 and "result" in obj:
                    threads[name] = obj["result"]["thread"]["id"]
    print(version)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
