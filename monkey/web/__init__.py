"""``monkey web``: every session of the monkey home, live, in a browser (Starlette, sse-starlette, uvicorn).

- :mod:`~monkey.web.guard`: the one-time token traded for a cookie, ``Host`` and ``Origin`` checks.
- :mod:`~monkey.web.api`: the JSON API and the events as Server-Sent Events, read from the store.
- :mod:`~monkey.web.control`: answering a pending approval (stored; the session's process picks it up).
- :mod:`~monkey.web.undo`: a checkpoint's preview and undo, with ``monkey undo``'s code.
- :mod:`~monkey.web.openapi`: the API's OpenAPI description (``/api/openapi.json``).
- :mod:`~monkey.web.server`: the app, its pages (``static/``) and the uvicorn server;
  :mod:`~monkey.web.beside`: the same on a thread (``monkey agent --web``).
"""
