"""monkey blanks its credentials where a child running as root could read them in monkey itself
(``/proc/<pid>/environ``, ``--api-key`` in ``/proc/<pid>/cmdline``) and still uses them: a real Python
process runs :func:`monkey.process.hide_secrets`, as ``monkey`` does at start."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's"),
    pytest.mark.subprocess,
]  # a real process's /proc/<pid>/environ and cmdline

PROBE = r"""
import ctypes, json, os, subprocess, sys
from monkey.process import hide_secrets
blanked = hide_secrets()
libc = ctypes.CDLL(None)
libc.getenv.restype = ctypes.c_char_p
child = subprocess.run([sys.executable, "-c", "import os; print(os.environ.get('ANTHROPIC_API_KEY', ''))"],
                       capture_output=True, text=True).stdout.strip()  # env=None: the C library's environment
print(json.dumps({
    "blanked": blanked,
    "os_environ": [os.environ.get("ANTHROPIC_API_KEY"), os.environ.get("OPENAI_API_KEY"), os.environ.get("PLAIN")],
    "getenv": libc.getenv(b"ANTHROPIC_API_KEY").decode(),
    "inherited": child,
    "proc_environ": open(f"/proc/{os.getpid()}/environ", "rb").read().decode(errors="replace"),
    "proc_cmdline": open(f"/proc/{os.getpid()}/cmdline", "rb").read().decode(errors="replace"),
    "argv": sys.argv[1:],
}))
"""


def test_credentials_are_blanked_where_children_could_read_them_and_still_work(tmp_path: Path) -> None:
    env = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(Path(__file__).resolve().parent.parent),
        "ANTHROPIC_API_KEY": "sk-ant-hidden-0123456789abcdef",
        "OPENAI_API_KEY": "sk-openai-hidden-key",
        "PLAIN": "visible-value",
        "MONKEY_CHILD": "outer.7",
    }  # the tag an outer monkey finds it by
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "--model", "x", "--api-key", "argv-hidden-key", "--api-key=argv-hidden-two"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert {"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "--api-key"} <= set(seen["blanked"])
    # gone from what the kernel shows other processes
    for secret in ("sk-ant-hidden", "sk-openai-hidden", "argv-hidden-key", "argv-hidden-two"):
        assert secret not in seen["proc_environ"] and secret not in seen["proc_cmdline"]
    assert "PLAIN=visible-value" in seen["proc_environ"] and "MONKEY_CHILD=outer.7" in seen["proc_environ"]
    assert "--model" in seen["proc_cmdline"]
    # still monkey's own, for the backends to hand on explicitly
    assert seen["os_environ"] == ["sk-ant-hidden-0123456789abcdef", "sk-openai-hidden-key", "visible-value"]
    assert seen["getenv"] == "sk-ant-hidden-0123456789abcdef" == seen["inherited"]
    assert seen["argv"] == ["--model", "x", "--api-key", "argv-hidden-key", "--api-key=argv-hidden-two"]
