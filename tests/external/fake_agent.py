"""A fake ``claude`` / ``codex`` executable: a real process that replays a recorded stream.

Behaviour comes from environment variables (passed on by the backend as explicit config):
FAKE_REPLAY (a fixture file), FAKE_MODE (replay, silent, ignore_term, crash, flood, write,
lines_then_exit, endless_line: the first line, then one line of FAKE_ENDLESS_MB megabytes
without a newline), FAKE_LOG (a file the argv, cwd, stdin and environment are appended to as
JSON), FAKE_VERSION (what ``--version`` prints). Run with ``--input-format`` (Claude Code's stream-json
input) it reads only the first stdin line as the prompt, and after replaying each recorded
``control_request`` line it waits for monkey's answer on stdin and logs it (``{"answer": ...}``).
``@WORKSPACE@`` in a recording stands for the folder it runs in.

Run as ``codex app-server`` it replays a recorded JSON-RPC stream (record_codex_app.py): a
response to one of the client's requests is printed only once the client sent that request,
and after a request of the server's (an approval) it waits for the client's response; every
line the client sends is logged (``{"rpc": ...}``); at the end it waits for stdin to close, as
the real server does. FAKE_MODE=rpc_hang stops before the last line and waits (for a stop); crash stops halfway with status 3.
"""

import json
import os
import signal
import sys
import time


def _log(entry: dict) -> None:
    log = os.environ.get("FAKE_LOG")
    if log:
        with open(log, "a") as fh:
            fh.write(json.dumps(entry) + "\n")


def rpc_replay(mode: str) -> int:
    """``codex app-server``: replay the recorded stream, in step with the client's lines."""
    _log({"argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ), "pid": os.getpid()})
    with open(os.environ["FAKE_REPLAY"], "rb") as fh:
        replay = fh.read().replace(b"@WORKSPACE@", os.getcwd().encode())
    lines = replay.splitlines(keepends=True)
    requests: set = set()
    answers: set = set()

    def read_until(seen: set, rid: object) -> bool:
        while rid not in seen:
            line = sys.stdin.readline()
            if not line:
                return False
            obj = json.loads(line)
            _log({"rpc": obj})
            (answers if "method" not in obj else requests).add(obj.get("id"))
        return True

    out = sys.stdout.buffer
    if mode == "rpc_hang":
        lines = lines[:-1]
    if mode == "crash":
        lines = lines[: len(lines) // 2]
    for line in lines:
        obj = json.loads(line)
        is_request = "method" in obj and "id" in obj
        if not is_request and "id" in obj and not read_until(requests, obj["id"]):
            return 0  # the client went away before asking
        out.write(line)
        out.flush()
        if is_request and not read_until(answers, obj["id"]):
            return 0
    if mode == "rpc_hang":
        time.sleep(3600)
    if mode == "crash":
        sys.stderr.write("Error: the fake agent crashed on purpose\n")
        return 3
    read_until(set(), object())  # until stdin closes, logging what comes
    return 0


def main() -> int:
    if "--version" in sys.argv[1:]:
        print(os.environ.get("FAKE_VERSION", "2.0.14 (Claude Code)"))
        return 0
    mode = os.environ.get("FAKE_MODE", "replay")
    if sys.argv[1:2] == ["app-server"]:
        return rpc_replay(mode)
    talks = "--input-format" in sys.argv[1:]  # Claude Code's stream-json input: stdin stays open
    if talks:
        first = sys.stdin.readline()
        try:
            prompt = json.loads(first)["message"]["content"]
        except (ValueError, KeyError, TypeError):
            prompt = first
    else:
        prompt = sys.stdin.read()
    log = os.environ.get("FAKE_LOG")
    if log:
        with open(log, "a") as fh:
            fh.write(
                json.dumps(
                    {
                        "argv": sys.argv[1:],
                        "cwd": os.getcwd(),
                        "stdin": prompt,
                        "env": dict(os.environ),
                        "pid": os.getpid(),
                    }
                )
                + "\n"
            )
    with open(os.environ["FAKE_REPLAY"], "rb") as fh:
        replay = fh.read().replace(b"@WORKSPACE@", os.getcwd().encode())
    lines = replay.splitlines(keepends=True)
    out = sys.stdout.buffer
    if mode == "ignore_term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if mode in ("silent", "ignore_term"):
        out.write(lines[0])
        out.flush()
        time.sleep(3600)
        return 0
    if mode == "flood":
        chunk = b"warning: something noisy happened\n" * 2000
        for _ in range(80):  # ~5.6 MB, far over any pipe buffer
            sys.stderr.buffer.write(chunk)
        sys.stderr.flush()
    if mode == "endless_line":
        out.write(lines[0])
        out.write(b'{"type":"assistant","message":{"content":[{"type":"text","text":"')
        piece = b"a" * (1 << 20)
        try:
            for _ in range(int(os.environ.get("FAKE_ENDLESS_MB", "200"))):
                out.write(piece)
                out.flush()
        except BrokenPipeError:
            return 1
        return 0
    if mode == "write":
        with open(os.path.join(os.getcwd(), "hello.txt"), "w") as fh:
            fh.write("hi there\n")
    if mode == "crash":
        lines = lines[: len(lines) // 2]
    for line in lines:
        out.write(line)
        out.flush()
        if talks and b"control_request" in line and json.loads(line).get("type") == "control_request":
            answer = sys.stdin.readline()  # blocks as the real CLI does until monkey answers
            if log:
                with open(log, "a") as fh:
                    fh.write(json.dumps({"answer": json.loads(answer) if answer else None}) + "\n")
    if mode == "crash":
        sys.stderr.write("Error: the fake agent crashed on purpose\n")
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
