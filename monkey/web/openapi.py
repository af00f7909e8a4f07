"""The OpenAPI description of the monitor's API (served at ``/api/openapi.json``)."""

from __future__ import annotations

from typing import Any

__all__ = ["spec"]

_SESSION = {
    "type": "object",
    "required": ["id", "title", "workspace", "backend", "model", "state", "turns", "tokens", "cost_usd", "updated"],
    "properties": {
        "id": {"type": "string"},
        "title": {"type": "string"},
        "workspace": {"type": "string", "description": "the folder the session works in"},
        "backend": {"type": "string"},
        "model": {"type": "string"},
        "state": {
            "type": "string",
            "enum": ["running", "waiting", "idle", "ended"],
            "description": "waiting: an approval waits for a person",
        },
        "status": {"type": "string", "description": "as stored: active, completed, error, ..."},
        "parent": {"type": ["string", "null"], "description": "the session that started this sub-agent"},
        "turns": {"type": "integer"},
        "events": {"type": "integer", "description": "the number of the last stored event"},
        "input_tokens": {"type": "integer"},
        "output_tokens": {"type": "integer"},
        "tokens": {"type": "integer"},
        "cost_usd": {"type": "number"},
        "created": {"type": "number", "description": "seconds since the epoch"},
        "updated": {"type": "number", "description": "the last activity, seconds since the epoch"},
        "pending": {
            "type": "array",
            "items": {"$ref": "#/components/schemas/Event"},
            "description": "the approval_requested events nobody answered yet",
        },
    },
}

_ERROR = {
    "description": "an error",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
}
_CP = {
    "name": "checkpoint",
    "in": "path",
    "required": True,
    "schema": {"type": "string"},
    "description": "a checkpoint id or a unique prefix",
}
_ID = {"name": "session_id", "in": "path", "required": True, "schema": {"type": "string"}}
_REQUEST = {
    "type": "object",
    "required": ["id", "session", "state", "action"],
    "properties": {
        "id": {"type": "string"},
        "session": {"type": "string", "description": "the session tree's root: its process does it"},
        "state": {
            "type": "string",
            "enum": ["stored", "done", "refused", "dropped"],
            "description": "stored: not taken yet; dropped: the process that ran the session ended first",
        },
        "action": {"type": "string", "enum": ["cancel", "mode"]},
        "mode": {"type": "string"},
        "by": {"type": "string", "enum": ["web"]},
        "message": {"type": "string", "description": "what the session did, or why not"},
    },
}
_STEER = (
    "Stored in the store for the process that runs the session (a sub-agent's: its root's), which does it "
    "within about 100 ms through the session's own path and stores what came of it "
    "(GET .../requests/{id}); the transcript says it came from the browser. A request outlives this "
    "server; one left by a process that ended is never done by the next process to open the session."
)
_STORED = {
    "description": "stored",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Request"}}},
}
_NOT_RUNNING = {
    "description": "no monkey process runs the session now",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
}


def spec() -> dict[str, Any]:
    """The OpenAPI 3.1 document."""
    from monkey import __version__

    return {
        "openapi": "3.1.0",
        "info": {
            "title": "monkey web",
            "version": __version__,
            "description": "Every session of the monkey home, live. Open the printed link "
            "(?token=...) once: its one-time token is traded for a cookie "
            "every request needs; a request changing something must come from "
            "the same origin.",
        },
        "components": {
            "schemas": {
                "Session": _SESSION,
                "Event": {
                    "type": "object",
                    "required": ["type"],
                    "properties": {
                        "type": {"type": "string"},
                        "ts": {"type": "number"},
                        "session_id": {"type": "string"},
                    },
                    "description": "an event exactly as stored (monkey's stream-json line)",
                },
                "Error": {"type": "object", "properties": {"error": {"type": "string"}}},
                "Request": _REQUEST,
            },
            "securitySchemes": {"cookie": {"type": "apiKey", "in": "cookie", "name": "monkey_web"}},
        },
        "security": [{"cookie": []}],
        "paths": {
            "/api/sessions": {
                "get": {
                    "summary": "every session of every workspace, sub-agents included, most recently active first",
                    "parameters": [
                        {"name": "workspace", "in": "query", "schema": {"type": "string"}},
                        {
                            "name": "state",
                            "in": "query",
                            "schema": {"type": "string", "enum": ["running", "waiting", "idle", "ended"]},
                        },
                    ],
                    "responses": {
                        "200": {
                            "description": "the sessions",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "properties": {
                                            "sessions": {
                                                "type": "array",
                                                "items": {"$ref": "#/components/schemas/Session"},
                                            }
                                        },
                                    }
                                }
                            },
                        },
                        "401": _ERROR,
                        "403": _ERROR,
                    },
                }
            },
            "/api/sessions/{session_id}": {
                "get": {
                    "summary": "one session, with its sub-agents (children)",
                    "parameters": [_ID],
                    "responses": {
                        "200": {
                            "description": "the session",
                            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Session"}}},
                        },
                        "404": _ERROR,
                    },
                }
            },
            "/api/sessions/{session_id}/events": {
                "get": {
                    "summary": "the session's events as Server-Sent Events: replayed from the store, then live",
                    "description": "Each SSE event's id is the event's sequence number and its data the "
                    "stored event. A reconnect with Last-Event-ID (or ?after=N) gets exactly "
                    "the events numbered above it, then the live ones.",
                    "parameters": [
                        _ID,
                        {"name": "Last-Event-ID", "in": "header", "schema": {"type": "integer"}},
                        {"name": "after", "in": "query", "schema": {"type": "integer", "minimum": 0}},
                        {
                            "name": "types",
                            "in": "query",
                            "schema": {"type": "string"},
                            "description": "comma-separated event types to keep",
                        },
                        {
                            "name": "format",
                            "in": "query",
                            "schema": {"type": "string", "enum": ["json"]},
                            "description": "json: the events stored so far in one answer, not a stream",
                        },
                    ],
                    "responses": {
                        "200": {
                            "description": "an event stream (with format=json: the events stored so far)",
                            "content": {
                                "text/event-stream": {"schema": {"type": "string"}},
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "properties": {
                                            "last": {"type": "integer"},
                                            "events": {
                                                "type": "array",
                                                "items": {"type": "array", "description": "[seq, event]"},
                                            },
                                        },
                                    }
                                },
                            },
                        },
                        "400": _ERROR,
                        "404": _ERROR,
                    },
                }
            },
            "/api/sessions/{session_id}/approvals/{call_id}": {
                "post": {
                    "summary": "answer an approval the session waits for (the session of its approval_requested event)",
                    "description": "Stored in the store; the process that runs the session takes it within about "
                    "100 ms. The first answer wins, here or at the session's own front end. The "
                    "permission engine holds it as a person's answer there: a protected call is "
                    "approved once, never granted; a scope the question does not offer is once. "
                    "A denial's reason is given to the model; without one the turn stops.",
                    "parameters": [
                        _ID,
                        {"name": "call_id", "in": "path", "required": True, "schema": {"type": "string"}},
                    ],
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["choice"],
                                    "properties": {
                                        "choice": {"type": "string", "enum": ["once", "session", "always", "deny"]},
                                        "reason": {"type": "string"},
                                    },
                                }
                            }
                        },
                    },
                    "responses": {
                        "200": {
                            "description": "this answer holds",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "properties": {
                                            "choice": {"type": "string"},
                                            "reason": {"type": "string"},
                                            "by": {"type": "string", "enum": ["web"]},
                                        },
                                    }
                                }
                            },
                        },
                        "400": _ERROR,
                        "403": _ERROR,
                        "404": _ERROR,
                        "409": {
                            "description": "answered first elsewhere (by: here), or nothing waits for it",
                            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
                        },
                    },
                }
            },
            "/api/sessions/{session_id}/cancel": {
                "post": {
                    "summary": "cancel the running turn (as Esc or Ctrl-C at the session's own front end)",
                    "description": _STEER,
                    "parameters": [_ID],
                    "responses": {"202": _STORED, "403": _ERROR, "404": _ERROR, "409": _NOT_RUNNING},
                }
            },
            "/api/sessions/{session_id}/mode": {
                "post": {
                    "summary": "switch the permission mode (as /mode NAME at the session's own front end)",
                    "description": _STEER + " The browser never switches a session to auto that did not start in it "
                    "(refused; /mode auto at the session's own terminal does).",
                    "parameters": [_ID],
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["mode"],
                                    "properties": {
                                        "mode": {"type": "string", "enum": ["default", "accept-edits", "plan", "auto"]}
                                    },
                                }
                            }
                        },
                    },
                    "responses": {"202": _STORED, "400": _ERROR, "403": _ERROR, "404": _ERROR, "409": _NOT_RUNNING},
                }
            },
            "/api/sessions/{session_id}/requests/{request_id}": {
                "get": {
                    "summary": "what came of a cancel or mode request",
                    "parameters": [
                        _ID,
                        {"name": "request_id", "in": "path", "required": True, "schema": {"type": "string"}},
                    ],
                    "responses": {
                        "200": {
                            "description": "the request and its state",
                            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Request"}}},
                        },
                        "404": _ERROR,
                    },
                }
            },
            "/api/sessions/{session_id}/checkpoints/{checkpoint}": {
                "get": {
                    "summary": "a checkpoint of the session (or its sub-agents): the preview of undoing it",
                    "parameters": [_ID, _CP],
                    "responses": {
                        "200": {
                            "description": "the change's diff, as monkey checkpoints show prints it",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "properties": {"checkpoint": {"type": "string"}, "preview": {"type": "string"}},
                                    }
                                }
                            },
                        },
                        "404": _ERROR,
                    },
                }
            },
            "/api/sessions/{session_id}/checkpoints/{checkpoint}/undo": {
                "post": {
                    "summary": "undo every change from this checkpoint on (monkey undo --to, never --force)",
                    "parameters": [_ID, _CP],
                    "responses": {
                        "200": {
                            "description": "undone: the undo_applied event",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "properties": {
                                            "undone": {"$ref": "#/components/schemas/Event"},
                                            "notes": {"type": "array", "items": {"type": "string"}},
                                        },
                                    }
                                }
                            },
                        },
                        "403": _ERROR,
                        "404": _ERROR,
                        "409": {
                            "description": "refused: a file changed since (conflicts), or nothing to undo",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "properties": {
                                            "error": {"type": "string"},
                                            "conflicts": {
                                                "type": "array",
                                                "items": {
                                                    "type": "object",
                                                    "properties": {
                                                        "reason": {"type": "string"},
                                                        "diff": {"type": "string"},
                                                    },
                                                },
                                            },
                                        },
                                    }
                                }
                            },
                        },
                    },
                }
            },
            "/api/stats": {
                "get": {
                    "summary": "the figures monkey stats --json prints for the same scope (every workspace unless "
                    "session or workspace is given)",
                    "description": "From the store's summary rows (docs/metrics.md): totals, the groups of `by`, and "
                    "tokens and cost per day. Equal to `monkey stats --json --all --by BY` (or "
                    "`--session ID`, or `--cwd WORKSPACE`, and `--since`).",
                    "parameters": [
                        {
                            "name": "by",
                            "in": "query",
                            "schema": {"type": "string", "enum": ["day", "model", "backend", "tool", "session"]},
                        },
                        {
                            "name": "session",
                            "in": "query",
                            "schema": {"type": "string"},
                            "description": "a session id (or unique prefix): it and its sub-agents",
                        },
                        {"name": "workspace", "in": "query", "schema": {"type": "string"}},
                        {
                            "name": "since",
                            "in": "query",
                            "schema": {"type": "string"},
                            "description": "30m, 12h, 7d, 2w, today or a date (2026-11-01)",
                        },
                    ],
                    "responses": {
                        "200": {
                            "description": "the report",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "properties": {
                                            "scope": {"type": "object"},
                                            "totals": {"type": "object"},
                                            "groups": {"type": "array", "items": {"type": "object"}},
                                            "daily": {
                                                "type": "array",
                                                "items": {
                                                    "type": "object",
                                                    "properties": {
                                                        "day": {"type": "string"},
                                                        "tokens": {"type": "integer"},
                                                        "cost_micros": {"type": "integer"},
                                                    },
                                                },
                                            },
                                        },
                                    }
                                }
                            },
                        },
                        "400": _ERROR,
                        "404": _ERROR,
                    },
                }
            },
            "/api/openapi.json": {
                "get": {"summary": "this description", "responses": {"200": {"description": "OpenAPI 3.1"}}}
            },
        },
    }
