#!/usr/bin/env python3
"""An Ollama agent plugin in the seed's style, written for monkey's tests from the seed's
protocol description (the seed's own example is kept aside as an independent check, so it
is not reproduced here): stdlib only, one request per stdin line, responses and stream
notifications on stdout with flush=True, OLLAMA_MODEL from the manifest's env, OLLAMA_HOST
for the server (Ollama's own variable; default http://localhost:11434)."""

import json
import os
import sys
import urllib.error
import urllib.request

OLLAMA_HOST = os.environ.get("OLLAMA_HOST", "http://localhost:11434").rstrip("/")
MODEL = os.environ.get("OLLAMA_MODEL", "codellama:13b")


def send(obj):
    print(json.dumps(obj), flush=True)


def stream(kind, data):
    send({"jsonrpc": "2.0", "method": "stream", "params": {"type": kind, "data": data}})


def handle_init(params):
    global MODEL
    MODEL = (params.get("config") or {}).get("model") or MODEL
    return {"name": "ollama", "model": MODEL, "capabilities": ["streaming", "tool_use"]}


def handle_available(params):
    try:
        urllib.request.urlopen(OLLAMA_HOST + "/api/tags", timeout=5).read()
        return {"available": True}
    except (urllib.error.URLError, OSError):
        return {"available": False, "reason": "Ollama server not running"}


def handle_run(params):
    body = json.dumps({"model": MODEL, "prompt": params.get("prompt", ""), "stream": True}).encode()
    req = urllib.request.Request(OLLAMA_HOST + "/api/generate", data=body, headers={"Content-Type": "application/json"})
    tokens = 0
    with urllib.request.urlopen(req) as resp:
        for line in resp:
            if not line.strip():
                continue
            chunk = json.loads(line)
            if chunk.get("response"):
                stream("text", chunk["response"])
            if chunk.get("done"):
                usage = {"input_tokens": chunk.get("prompt_eval_count", 0), "output_tokens": chunk.get("eval_count", 0)}
                tokens = usage["input_tokens"] + usage["output_tokens"]
                stream("usage", usage)
    stream("complete", None)
    return {"status": "complete", "tokens_used": tokens}


HANDLERS = {"agent.init": handle_init, "agent.available": handle_available, "agent.run": handle_run}


def main():
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        request = json.loads(line)
        handler = HANDLERS.get(request.get("method"))
        if handler is None:
            if "id" in request:
                send({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": "Method not found"}})
            continue
        try:
            result = handler(request.get("params") or {})
            send({"jsonrpc": "2.0", "id": request["id"], "result": result})
        except Exception as exc:
            send({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32000, "message": str(exc)}})


if __name__ == "__main__":
    main()
