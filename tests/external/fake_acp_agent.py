"""A fake ACP agent speaking JSON-RPC on stdio, for the ``acp:NAME`` backend's tests.

The prompt's first word picks what it does (``text``, ``usage``, ``quota``, ``write PATH``, ``rawwrite PATH``, ``read PATH``,
``shell COMMAND``, ``garbage``, ``huge``, ``early``, ``silent``, ``crash``, ``unknown``, ``term COMMAND``,
``askterm COMMAND``, ``termbad``, ``termkill COMMAND``, ``termleft COMMAND``, ``termhold COMMAND``);
every message it receives is appended to ``$FAKE_LOG`` as a JSON line. ``$FAKE_AUTH`` lists the auth
methods it offers (comma-separated); ``$FAKE_MODES`` its modes, the first one current; ``$FAKE_LOAD``
set: it says ``loadSession`` and replays a session of ``$FAKE_KNOWN`` (its own id by default) on
``session/load``; ``$FAKE_MCP_HTTP`` set: it takes HTTP MCP servers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

LOG = os.environ.get("FAKE_LOG", "")
_next = [100]
_inbox: list[dict] = []
SESSION = "fake-session-1"


def log(entry: dict) -> None:
    if LOG:
        with open(LOG, "a") as fh:
            fh.write(json.dumps(entry) + "\n")


def write(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def read() -> dict | None:
    line = sys.stdin.readline()
    if not line:
        return None
    message = json.loads(line)
    log({"got": message})
    return message


def call(method: str, params: dict) -> dict:
    """A request to the client; its response (other messages meanwhile are kept for later)."""
    _next[0] += 1
    rid = _next[0]
    write({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
    while True:
        message = read()
        if message is None:
            sys.exit(0)
        if message.get("id") == rid and "method" not in message:
            return message
        _inbox.append(message)


def update(which: str, **fields: object) -> None:
    write(
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": SESSION, "update": {"sessionUpdate": which, **fields}},
        }
    )


def say(text: str) -> None:
    update("agent_message_chunk", content={"type": "text", "text": text})


OPTIONS = [
    {"optionId": "yes", "name": "Allow", "kind": "allow_once"},
    {"optionId": "always", "name": "Always", "kind": "allow_always"},
    {"optionId": "no", "name": "Reject", "kind": "reject_once"},
    {"optionId": "never", "name": "Never", "kind": "reject_always"},
]


def ask(tool_call: dict) -> str:
    answer = call("session/request_permission", {"sessionId": SESSION, "toolCall": tool_call, "options": OPTIONS})
    outcome = answer.get("result", {}).get("outcome", {})
    return str(outcome.get("optionId") or outcome.get("outcome"))


def prompt(text: str) -> dict:
    word, _, rest = text.split("\n\n")[-1].partition(" ")  # a failed turn's prompt comes along with the next
    cwd = os.getcwd()
    if word == "text":
        update("agent_thought_chunk", content={"type": "text", "text": "thinking it over"})
        for piece in ("hello ", "from ", "the agent"):
            say(piece)
        update("plan", entries=[{"content": "say hello", "status": "completed", "priority": "high"}])
        update(
            "tool_call",
            toolCallId="r1",
            title="Read notes.txt",
            kind="read",
            status="completed",
            locations=[{"path": os.path.join(cwd, "notes.txt")}],
        )
        return {"stopReason": "end_turn", "usage": {"totalTokens": 30, "inputTokens": 20, "outputTokens": 10}}
    if word == "usage":  # as Qwen Code reports it: an empty chunk's _meta.usage per model call
        for given, made in ((100, 7), (150, 9)):
            say("part ")
            update(
                "agent_message_chunk",
                content={"type": "text", "text": ""},
                _meta={
                    "usage": {
                        "inputTokens": given,
                        "outputTokens": made,
                        "totalTokens": given + made,
                        "thoughtTokens": 0,
                        "cachedReadTokens": 40,
                    },
                    "durationMs": 5,
                },
            )
        return {"stopReason": "end_turn"}
    if word == "quota":  # as Gemini CLI reports it: the answer's _meta.quota
        say("counted")
        return {
            "stopReason": "end_turn",
            "_meta": {
                "quota": {
                    "token_count": {"input_tokens": 300, "output_tokens": 20},
                    "model_usage": [
                        {"model": "gemini-a", "token_count": {"input_tokens": 200, "output_tokens": 15}},
                        {"model": "gemini-b", "token_count": {"input_tokens": 100, "output_tokens": 5}},
                    ],
                }
            },
        }
    if word == "write":
        path = os.path.join(cwd, rest)
        tc = {
            "toolCallId": "w1",
            "title": f"Write {rest}",
            "kind": "edit",
            "status": "pending",
            "locations": [{"path": path}],
            "content": [{"type": "diff", "path": path, "newText": "hello\n"}],
        }
        update("tool_call", **tc)
        chosen = ask(tc)
        if chosen == "yes":
            res = call("fs/write_text_file", {"sessionId": SESSION, "path": path, "content": "hello\n"})
            update("tool_call_update", toolCallId="w1", status="completed" if "result" in res else "failed")
        else:
            update("tool_call_update", toolCallId="w1", status="failed")
        say(f"permission: {chosen}")
        return {"stopReason": "end_turn"}
    if word == "rawwrite":
        res = call("fs/write_text_file", {"sessionId": SESSION, "path": os.path.join(cwd, rest), "content": "raw\n"})
        say("wrote" if "result" in res else f"error {res['error']['code']}: {res['error']['message']}")
        return {"stopReason": "end_turn"}
    if word == "read":
        res = call("fs/read_text_file", {"sessionId": SESSION, "path": os.path.join(cwd, rest)})
        say(f"content: {res['result']['content']!r}" if "result" in res else f"error {res['error']['code']}")
        return {"stopReason": "end_turn"}
    if word == "shell":
        tc = {"toolCallId": "x1", "title": rest, "kind": "execute", "status": "pending", "rawInput": {"command": rest}}
        update("tool_call", **tc)
        chosen = ask(tc)
        if chosen == "yes":
            subprocess.run(["/bin/sh", "-c", rest], cwd=cwd, check=False)
            if os.environ.get("FAKE_ALSO"):  # the agent writes a file itself while its command is open
                with open(os.path.join(cwd, os.environ["FAKE_ALSO"]), "w") as fh:
                    fh.write("the agent's own\n")
            if not os.environ.get("FAKE_NO_DONE"):  # else never says the call ended
                update("tool_call_update", toolCallId="x1", status="completed")
        say(f"permission: {chosen}")
        return {"stopReason": "end_turn"}
    if word == "garbage":
        say("before the garbage")
        sys.stdout.write("this is not json at all\n")
        sys.stdout.flush()
        time.sleep(3600)
    if word == "huge":
        say("before the huge line")
        update("agent_message_chunk", content={"type": "text", "text": "x" * (10 * 1024 * 1024)})
        time.sleep(3600)
    if word == "silent":
        say("then nothing")
        time.sleep(3600)
    if word == "crash":
        say("about to crash")
        sys.stderr.write("fake agent: segfault in the model\n")
        sys.stderr.flush()
        os._exit(3)
    if word == "unknown":
        weird = call("weird/method", {"sessionId": SESSION})
        vendor = call("_vendor/thing", {"sessionId": SESSION})
        other = call("fs/delete_text_file", {"sessionId": SESSION, "path": "x"})
        say(f"codes {weird['error']['code']} {vendor['error']['code']} {other['error']['code']}")
        return {"stopReason": "end_turn"}
    if word in ("term", "askterm"):  # run REST in a terminal monkey runs (after asking first, for askterm)
        argv = rest.split()
        if word == "askterm":
            tc = {
                "toolCallId": "t1",
                "title": rest,
                "kind": "execute",
                "status": "pending",
                "rawInput": {"command": rest},
            }
            update("tool_call", **tc)
            say(f"permission: {ask(tc)}; ")
        made = call(
            "terminal/create",
            {
                "sessionId": SESSION,
                "command": argv[0],
                "args": argv[1:],
                "cwd": cwd,
                "outputByteLimit": int(os.environ.get("FAKE_LIMIT", "100000")),
            },
        )
        if "error" in made:
            say(f"refused: {made['error']['message']}")
            return {"stopReason": "end_turn"}
        tid = made["result"]["terminalId"]
        waited = call("terminal/wait_for_exit", {"sessionId": SESSION, "terminalId": tid})["result"]
        out = call("terminal/output", {"sessionId": SESSION, "terminalId": tid})["result"]
        call("terminal/release", {"sessionId": SESSION, "terminalId": tid})
        gone = call("terminal/output", {"sessionId": SESSION, "terminalId": tid})
        say(json.dumps({"wait": waited, "output": out, "after_release": "error" in gone}))
        return {"stopReason": "end_turn"}
    if word == "termbad":  # an unknown terminal id, a working directory outside, variables set
        bogus = call("terminal/output", {"sessionId": SESSION, "terminalId": "no-such-terminal"})
        outside = call(
            "terminal/create", {"sessionId": SESSION, "command": "python3", "args": ["tool.py", "0"], "cwd": "/"}
        )
        made = call(
            "terminal/create",
            {
                "sessionId": SESSION,
                "command": "python3",
                "args": ["tool.py", "0"],
                "env": [{"name": "FAKE_VAR", "value": "set by the agent"}],
            },
        )
        waited = (
            call("terminal/wait_for_exit", {"sessionId": SESSION, "terminalId": made["result"]["terminalId"]})
            if "result" in made
            else made
        )
        say(json.dumps({"bogus": bogus.get("error"), "outside": outside.get("error"), "env": waited}))
        return {"stopReason": "end_turn"}
    if word == "termkill":  # start REST, wait until it wrote its pid to started.txt, kill it
        argv = rest.split()
        made = call("terminal/create", {"sessionId": SESSION, "command": argv[0], "args": argv[1:]})
        tid = made["result"]["terminalId"]
        while not os.path.exists(os.path.join(cwd, "started.txt")):
            time.sleep(0.05)
        before = call("terminal/output", {"sessionId": SESSION, "terminalId": tid})["result"]
        call("terminal/kill", {"sessionId": SESSION, "terminalId": tid})
        waited = call("terminal/wait_for_exit", {"sessionId": SESSION, "terminalId": tid})["result"]
        after = call("terminal/output", {"sessionId": SESSION, "terminalId": tid})["result"]
        say(json.dumps({"before": before, "wait": waited, "after": after}))
        return {"stopReason": "end_turn"}
    if word in ("termleft", "termhold"):  # start REST; end the turn without waiting (monkey stops it), or hang
        argv = rest.split()
        made = call("terminal/create", {"sessionId": SESSION, "command": argv[0], "args": argv[1:]})
        say(json.dumps(made.get("result")))
        while not os.path.exists(os.path.join(cwd, "started.txt")):
            time.sleep(0.05)
        if word == "termhold":
            time.sleep(3600)
        return {"stopReason": "end_turn"}
    say(f"unknown scenario {word}")
    return {"stopReason": "end_turn"}


def main() -> None:
    modes = [m for m in os.environ.get("FAKE_MODES", "").split(",") if m]
    auth = [m for m in os.environ.get("FAKE_AUTH", "").split(",") if m]
    while True:
        message = _inbox.pop(0) if _inbox else read()
        if message is None:
            return
        method, rid = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if method == "initialize":
            write(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "result": {
                        "protocolVersion": 1,
                        "agentCapabilities": {
                            "loadSession": bool(os.environ.get("FAKE_LOAD")),
                            "mcpCapabilities": {"http": bool(os.environ.get("FAKE_MCP_HTTP"))},
                        },
                        "authMethods": [{"id": a, "name": a} for a in auth],
                    },
                }
            )
        elif method == "authenticate":
            write({"jsonrpc": "2.0", "id": rid, "result": {}})
        elif method == "session/new":
            result: dict = {"sessionId": SESSION}
            if modes:
                result["modes"] = {"currentModeId": modes[0], "availableModes": [{"id": m, "name": m} for m in modes]}
            write({"jsonrpc": "2.0", "id": rid, "result": result})
        elif method == "session/load":  # replays the stored session as updates, then answers
            if params.get("sessionId") not in os.environ.get("FAKE_KNOWN", SESSION).split(","):
                write({"jsonrpc": "2.0", "id": rid, "error": {"code": -32002, "message": "Resource not found"}})
                continue
            update("user_message_chunk", content={"type": "text", "text": "REPLAYED the earlier prompt"})
            write({"jsonrpc": "2.0", "id": rid, "result": {}})
            say("REPLAYED the earlier answer")  # after its answer, as Gemini CLI does
        elif method == "session/set_mode":
            write({"jsonrpc": "2.0", "id": rid, "result": {}})
        elif method == "session/prompt":
            text = "".join(b.get("text", "") for b in params.get("prompt", []))
            if text.startswith("early"):
                write({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})
                say("after the answer")
                continue
            write({"jsonrpc": "2.0", "id": rid, "result": prompt(text)})
        elif method == "session/cancel":
            pass
        elif rid is not None:
            write({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "method not found"}})


if __name__ == "__main__":
    main()
