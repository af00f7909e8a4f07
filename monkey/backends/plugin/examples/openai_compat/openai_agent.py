#!/usr/bin/env python3
"""An agent plugin for monkey: any OpenAI-compatible chat completions server as the model.

It speaks JSON-RPC 2.0 on stdin/stdout, one message per line (see docs/plugins.md):
``agent.init`` (``config.model`` and ``config.base_url`` override the environment),
``agent.available`` (the server answers ``GET /models``), and ``agent.run``, which streams
``text`` notifications as the model writes, asks monkey to run each tool call with a
``tool_use`` notification and waits for monkey's ``agent.tool_result``, then sends
``usage``, ``complete`` and the final response. monkey runs the tools (asking the person,
taking checkpoints); this program never touches the workspace itself.

Standard library only. Settings (the manifest's env): OPENAI_COMPAT_BASE_URL,
OPENAI_COMPAT_MODEL, OPENAI_COMPAT_API_KEY, OPENAI_COMPAT_MAX_STEPS. Diagnostics go to
stderr; stdout carries only the protocol. When stdin closes (monkey cancelled the run, or
is done with it), the plugin exits at once.
"""

import json
import os
import queue
import sys
import threading
import urllib.error
import urllib.request
from typing import Any

NAME = "openai-compat"
CAPABILITIES = ["streaming", "tool_use"]

settings: dict[str, Any] = {
    "base_url": os.environ.get("OPENAI_COMPAT_BASE_URL", "http://127.0.0.1:8080/v1"),
    "model": os.environ.get("OPENAI_COMPAT_MODEL", "default"),
    "api_key": os.environ.get("OPENAI_COMPAT_API_KEY", ""),
    "max_steps": int(os.environ.get("OPENAI_COMPAT_MAX_STEPS", "20") or "20"),
}
inbox: queue.Queue = queue.Queue()
write_lock = threading.Lock()


class RunError(Exception):
    """The run cannot go on (the server failed); said in the error response."""


def send(message):
    with write_lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def respond(rid, result):
    send({"jsonrpc": "2.0", "id": rid, "result": result})


def respond_error(rid, code, message):
    send({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})


def notify(kind, data):
    send({"jsonrpc": "2.0", "method": "stream", "params": {"type": kind, "data": data}})


def read_stdin():
    """Each request into the inbox; at EOF the plugin exits (a cancelled run stops here too)."""
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            message = json.loads(line)
        except ValueError:
            respond_error(None, -32700, "parse error: a line that is not JSON")
            continue
        inbox.put(message)
    sys.stdout.flush()
    os._exit(0)


def http(path, body=None, timeout=600):
    url = settings["base_url"].rstrip("/") + path
    headers = {"Content-Type": "application/json"}
    if settings["api_key"]:
        headers["Authorization"] = "Bearer " + settings["api_key"]
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers=headers, method="POST" if data else "GET")
    return urllib.request.urlopen(req, timeout=timeout)


def available():
    try:
        with http("/models", timeout=5) as resp:
            resp.read()
    except urllib.error.HTTPError as exc:
        return {"available": False, "reason": "the server at {} answered {}".format(settings["base_url"], exc.code)}
    except (OSError, ValueError) as exc:
        return {"available": False, "reason": "no server at {} ({})".format(settings["base_url"], exc)}
    return {"available": True}


def chat(messages, tools):
    """One streamed model call: its text (streamed as it comes), tool calls and usage."""
    body = {"model": settings["model"], "messages": messages, "stream": True, "stream_options": {"include_usage": True}}
    if tools:
        body["tools"] = tools
    text: list[str] = []
    calls: dict[Any, dict] = {}
    usage: dict[str, Any] = {}
    try:
        resp = http("/chat/completions", body)
    except urllib.error.HTTPError as exc:
        raise RunError(
            "the server answered {}: {}".format(exc.code, exc.read()[:300].decode("utf-8", "replace"))
        ) from exc
    except OSError as exc:
        raise RunError("cannot reach {}: {}".format(settings["base_url"], exc)) from exc
    with resp:
        for raw in resp:
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("data:"):
                continue
            payload = line[5:].strip()
            if payload == "[DONE]":
                break
            chunk = json.loads(payload)
            usage = chunk.get("usage") or usage
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") or {}
                if delta.get("reasoning_content"):
                    notify("thinking", delta["reasoning_content"])
                if delta.get("content"):
                    text.append(delta["content"])
                    notify("text", delta["content"])
                for part in delta.get("tool_calls") or []:
                    call = calls.setdefault(part.get("index", 0), {"id": "", "name": "", "arguments": ""})
                    call["id"] = part.get("id") or call["id"]
                    function = part.get("function") or {}
                    call["name"] += function.get("name") or ""
                    call["arguments"] += function.get("arguments") or ""
    return "".join(text), [calls[i] for i in sorted(calls)], usage


def wait_tool_result(tool_id):
    """monkey's answer to our tool_use (it may have asked a person first)."""
    while True:
        message = inbox.get()
        if message.get("method") == "agent.tool_result":
            params = message.get("params") or {}
            if "id" in message:
                respond(message["id"], {"received": True})
            if params.get("tool_id") == tool_id:
                return str(params.get("result", "")), bool(params.get("is_error"))
        elif "id" in message and "method" in message:
            respond_error(message["id"], -32601, "busy with agent.run: {}".format(message["method"]))


def conversation(params):
    context = params.get("context") or {}
    messages = []
    if context.get("instructions"):
        messages.append({"role": "system", "content": context["instructions"]})
    for entry in context.get("history") or []:
        role = entry.get("role")
        if role == "user":
            messages.append({"role": "user", "content": entry.get("content", "")})
        elif role == "assistant":
            said = entry.get("content", "")
            for call in entry.get("tool_calls") or []:
                said += "\n(called {} with {})".format(call.get("name"), json.dumps(call.get("input")))
            messages.append({"role": "assistant", "content": said.strip()})
        elif role == "tool":
            messages.append(
                {"role": "user", "content": "(result of {}: {})".format(entry.get("name"), entry.get("content"))}
            )
    messages.append({"role": "user", "content": params.get("prompt", "")})
    return messages


def run(params):
    messages = conversation(params)
    tools = [
        {
            "type": "function",
            "function": {
                "name": t["name"],
                "description": t.get("description", ""),
                "parameters": t.get("input_schema") or {"type": "object"},
            },
        }
        for t in params.get("tools") or []
    ]
    spent = {"input_tokens": 0, "output_tokens": 0}
    for _ in range(settings["max_steps"]):
        text, calls, usage = chat(messages, tools)
        spent["input_tokens"] += usage.get("prompt_tokens", 0)
        spent["output_tokens"] += usage.get("completion_tokens", 0)
        if not calls:
            notify("usage", spent)
            notify("complete", None)
            return spent["input_tokens"] + spent["output_tokens"]
        messages.append(
            {
                "role": "assistant",
                "content": text or None,
                "tool_calls": [
                    {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                    for c in calls
                ],
            }
        )
        for call in calls:
            try:
                arguments = json.loads(call["arguments"] or "{}")
            except ValueError:
                result = "the arguments are not JSON: {}".format(call["arguments"][:200])
            else:
                notify("tool_use", {"id": call["id"], "name": call["name"], "input": arguments})
                result, _failed = wait_tool_result(call["id"])
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    notify("error", {"code": 1, "message": f"stopped after {settings['max_steps']} model calls"})
    notify("usage", spent)
    notify("complete", None)
    return spent["input_tokens"] + spent["output_tokens"]


def handle(message):
    method, rid, params = message.get("method"), message.get("id"), message.get("params") or {}
    if method == "agent.init":
        config = params.get("config") or {}
        settings["model"] = config.get("model") or settings["model"]
        settings["base_url"] = config.get("base_url") or settings["base_url"]
        respond(rid, {"name": NAME, "model": settings["model"], "capabilities": CAPABILITIES})
    elif method == "agent.available":
        respond(rid, available())
    elif method == "agent.run":
        try:
            tokens = run(params)
        except RunError as exc:
            respond_error(rid, -32000, str(exc))
        except Exception as exc:  # a server's odd answer: said, never a silent crash
            respond_error(rid, -32603, f"internal error: {type(exc).__name__}: {exc}")
        else:
            respond(rid, {"status": "complete", "tokens_used": tokens})
    elif method == "agent.tool_result" and rid is not None:
        respond(rid, {"received": True})
    elif rid is not None:
        respond_error(rid, -32601, f"method not found: {method}")


def main():
    threading.Thread(target=read_stdin, daemon=True).start()
    while True:
        handle(inbox.get())


if __name__ == "__main__":
    main()
