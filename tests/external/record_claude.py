#!/usr/bin/env python3
"""Record the real Claude Code CLI's stream-json (and its permission control stream) against
the fake Anthropic server.

    python tests/external/record_claude.py [/path/to/claude]

Runs the CLI as monkey does (``--input-format stream-json --permission-prompt-tool stdio
--permission-mode default --setting-sources ""``), answers each ``can_use_tool`` control
request as the case says (allow or deny), and writes tests/fixtures/claude_code/real_*.jsonl
(a text answer, an allowed Write, a denied Bash call, an API error): the recordings the parser
tests and the fake ``claude`` replay
(the workspace's path written as ``@WORKSPACE@``). The CLI defaults to the copy the claude-agent-sdk wheel bundles.
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

from tests.support.fakes.anthropic_server import FakeAnthropic  # noqa: E402

CASES = {
    "real_text": ("say hello", ""),
    "real_write": ("please create hello.txt", "allow"),
    "real_bash_denied": ("please run the command", "deny"),
    "real_api_error": ("please fail now", ""),
}


def _bundled() -> str:
    import claude_agent_sdk

    return str(Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude")


def record(claude: str, ws: Path, env: dict[str, str], prompt: str, behavior: str) -> bytes:
    argv = [
        claude,
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--include-partial-messages",
        "--input-format",
        "stream-json",
        "--permission-prompt-tool",
        "stdio",
        "--permission-mode",
        "default",
        "--setting-sources",
        "",
    ]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ws, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    message = {
        "type": "user",
        "message": {"role": "user", "content": prompt},
        "parent_tool_use_id": None,
        "session_id": "",
    }
    proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()
    out = []
    for line in proc.stdout:
        out.append(line)
        obj = json.loads(line)
        if obj.get("type") == "control_request":
            req = obj["request"]
            decision = (
                {"behavior": "allow", "updatedInput": req["input"]}
                if behavior == "allow"
                else {"behavior": "deny", "message": "denied by monkey: recorded refusal"}
            )
            answer = {
                "type": "control_response",
                "response": {"subtype": "success", "request_id": obj["request_id"], "response": decision},
            }
            proc.stdin.write(json.dumps(answer).encode() + b"\n")
            proc.stdin.flush()
        elif obj.get("type") == "result":
            proc.stdin.close()
    proc.wait(timeout=60)
    return b"".join(out)


def main() -> int:
    claude = sys.argv[1] if len(sys.argv) > 1 else _bundled()
    out = ROOT / "tests" / "fixtures" / "claude_code"
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "proj"
        ws.mkdir()
        with FakeAnthropic(str(ws)) as srv:
            env = {
                "PATH": os.environ["PATH"],
                "HOME": tmp,
                "ANTHROPIC_API_KEY": "sk-ant-fake",
                "ANTHROPIC_BASE_URL": srv.url,
                "DISABLE_AUTOUPDATER": "1",
            }
            for name, (prompt, behavior) in CASES.items():
                data = record(claude, ws, env, prompt, behavior)
                # the recording's folder is a placeholder the fake ``claude`` fills in with its own
                (out / f"{name}.jsonl").write_bytes(data.replace(str(ws).encode(), b"@WORKSPACE@"))
                print(name, len(data), "bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
