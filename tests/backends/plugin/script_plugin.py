"""A plugin that plays a script: the tests' well-behaved and hostile plugins, as real processes.

``PLUGIN_SCRIPT`` names a JSON file::

    {"init": {...agent.init result...} | null for the default,
     "available": {...} | null,
     "run": [step, ...]}          # what it does on agent.run

``PLUGIN_LOG`` (optional) names a file where every line read on stdin is appended as it came.
Steps:

- ``{"text": "..."}`` / ``{"thinking": "..."}`` / ``{"notify": {"type": .., "data": ..}}``:
  a ``stream`` notification; ``{"method": "x", "params": ..}``: a notification of another method;
- ``{"line": "..."}``: a raw line on stdout; ``{"big": N}``: a line of N bytes (no newline until the end);
- ``{"tool_use": {"id", "name", "input"}}``: ask for a tool, then wait for its ``agent.tool_result``
  (answered with a response when it has an id, unless ``"ack": false`` is in the step);
- ``{"respond": {...}}``: the final response to agent.run (``"id": N`` in the step overrides the id;
  ``"error": {...}`` sends an error object instead);
- ``{"sleep": S}``; ``{"exit": CODE}``; ``{"ignore_term": true}``; ``{"stderr": "..."}``;
- ``{"env_to": PATH}``: write the plugin's environment to PATH as JSON;
- ``{"wait_eof": true}``: block until stdin closes, then write ``PLUGIN_LOG``'s ``EOF`` line and exit;
- ``{"request": {"id": .., "method": ..}}``: a request of the plugin's to the host.

Without ``respond`` in the script the run ends with ``complete`` and ``{"status": "complete"}``.
"""

import json
import os
import signal
import sys
import time

with open(os.environ["PLUGIN_SCRIPT"]) as fh:
    script = json.load(fh)
log_path = os.environ.get("PLUGIN_LOG")


def log(line):
    if log_path:
        with open(log_path, "a") as fh:
            fh.write(line.rstrip("\n") + "\n")


def out(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def stream(kind, data):
    out({"jsonrpc": "2.0", "method": "stream", "params": {"type": kind, "data": data}})


def read():
    line = sys.stdin.readline()
    if not line:
        log("EOF")
        sys.exit(0)
    log(line)
    return json.loads(line)


def run(rid):
    responded = False
    for step in script.get("run", []):
        if "text" in step:
            stream("text", step["text"])
        elif "thinking" in step:
            stream("thinking", step["thinking"])
        elif "notify" in step:
            stream(step["notify"]["type"], step["notify"].get("data"))
        elif "method" in step:
            out({"jsonrpc": "2.0", "method": step["method"], "params": step.get("params")})
        elif "line" in step:
            sys.stdout.write(step["line"] + "\n")
            sys.stdout.flush()
        elif "big" in step:
            chunk = b"x" * 65536
            left = step["big"]
            while left > 0:
                sys.stdout.buffer.write(chunk[: min(left, len(chunk))])
                left -= len(chunk)
            sys.stdout.buffer.write(b"\n")
            sys.stdout.flush()
        elif "tool_use" in step:
            stream("tool_use", step["tool_use"])
            while True:
                msg = read()
                if msg.get("method") == "agent.tool_result":
                    if "id" in msg and step.get("ack", True):
                        out({"jsonrpc": "2.0", "id": msg["id"], "result": {}})
                    break
        elif "respond" in step:
            body = {"jsonrpc": "2.0", "id": step.get("id", rid)}
            if "error" in step:
                body["error"] = step["error"]
            else:
                body["result"] = step["respond"]
            out(body)
            responded = True
        elif "request" in step:
            out({"jsonrpc": "2.0", **step["request"]})
        elif "sleep" in step:
            time.sleep(step["sleep"])
        elif "exit" in step:
            sys.exit(step["exit"])
        elif "ignore_term" in step:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        elif "stderr" in step:
            sys.stderr.write(step["stderr"] + "\n")
            sys.stderr.flush()
        elif "env_to" in step:
            with open(step["env_to"], "w") as fh:
                json.dump(dict(os.environ), fh)
        elif "wait_eof" in step:
            while sys.stdin.readline():
                pass
            log("EOF")
            sys.exit(0)
    if not responded:
        stream("complete", None)
        out({"jsonrpc": "2.0", "id": rid, "result": {"status": "complete", "tokens_used": 0}})


def main():
    while True:
        msg = read()
        method, rid = msg.get("method"), msg.get("id")
        if method == "agent.init":
            out(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "result": script.get("init")
                    or {"name": "scripted", "model": "script-1", "capabilities": ["streaming", "tool_use"]},
                }
            )
        elif method == "agent.available":
            out({"jsonrpc": "2.0", "id": rid, "result": script.get("available") or {"available": True}})
        elif method == "agent.run":
            run(rid)
        elif rid is not None:
            out({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "method not found"}})


if __name__ == "__main__":
    main()
