"""A command that starts grandchildren, for the tests of children dying with monkey.

``python family.py DIR MODE``: writes ``DIR/pids`` (one ``pid start-time`` line per process
of the family, written once all of them run) and prints ``family-ready``; each grandchild
sleeps 100 s and then creates ``DIR/wrote-NAME``; so does the child itself. The grandchildren:

- ``group``: stays in the child's process group;
- ``setsid``: leaves it (a session of its own), keeping the environment;
- ``bare``: leaves it and clears its environment (no ``MONKEY_CHILD`` tag).

MODE ``wait``: the child then sleeps too; ``exit``: the child exits at once, leaving the
grandchildren (they hold its stdout) as orphans.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

SLEEPER = (
    "import sys, time, pathlib; time.sleep(100); "
    "pathlib.Path(sys.argv[1], 'wrote-' + sys.argv[2]).write_text('too late')"
)


def start_time(pid: int) -> str:
    data = Path(f"/proc/{pid}/stat").read_bytes()
    return data[data.rfind(b")") + 2 :].split()[19].decode()


def main() -> None:
    folder, mode = Path(sys.argv[1]), sys.argv[2]
    kids = [
        subprocess.Popen([sys.executable, "-c", SLEEPER, str(folder), "group"]),
        subprocess.Popen([sys.executable, "-c", SLEEPER, str(folder), "setsid"], start_new_session=True),
        subprocess.Popen(
            [sys.executable, "-c", SLEEPER, str(folder), "bare"],
            start_new_session=True,
            env={"PATH": os.environ.get("PATH", "")},
        ),
    ]
    lines = [f"{os.getpid()} {start_time(os.getpid())} child"]
    lines += [f"{k.pid} {start_time(k.pid)} {name}" for k, name in zip(kids, ("group", "setsid", "bare"), strict=True)]
    tmp = folder / "pids.tmp"
    tmp.write_text("\n".join(lines) + "\n")
    os.replace(tmp, folder / "pids")
    print("family-ready", flush=True)
    if mode == "wait":
        time.sleep(100)
        (folder / "wrote-child").write_text("too late")


if __name__ == "__main__":
    main()
