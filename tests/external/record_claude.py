#!/usr/bin/env python3
"""Record the real Claude Code CLI's stream-json against the fake Anthropic server.

    python tests/external/record_claude.py /path/to/claude

Writes tests/fixtures/claude_code/real_*.jsonl (a text answer, a Write tool turn, an API
error), the recordings the parser tests and the fake ``claude`` replay.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.external.fake_anthropic import FakeAnthropic  # noqa: E402

CASES = {"real_text": "say hello", "real_write": "please create hello.txt", "real_api_error": "please fail now"}


def main() -> int:
    claude = sys.argv[1] if len(sys.argv) > 1 else "claude"
    out = ROOT / "tests" / "fixtures" / "claude_code"
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "proj"
        ws.mkdir()
        with FakeAnthropic(str(ws)) as srv:
            env = {"PATH": os.environ["PATH"], "HOME": tmp, "ANTHROPIC_API_KEY": "sk-ant-fake",
                   "ANTHROPIC_BASE_URL": srv.url, "DISABLE_AUTOUPDATER": "1"}
            for name, prompt in CASES.items():
                run = subprocess.run([claude, "-p", "--output-format", "stream-json", "--verbose",
                                      "--include-partial-messages", "--permission-mode", "acceptEdits"],
                                     input=prompt.encode(), capture_output=True, cwd=ws, env=env, timeout=120)
                (out / f"{name}.jsonl").write_bytes(run.stdout)
                print(name, run.returncode, len(run.stdout), "bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
