"""The session layer: what a running conversation offers every front end.

The app, the ``--plain`` REPL (and, next, editors over ACP) parse what a person types and
render what comes back; the behaviour of every slash command lives here, once
(:mod:`monkey.session.commands`), and answers with typed replies
(:mod:`monkey.session.replies`). Nothing here prints or imports a UI.
"""
