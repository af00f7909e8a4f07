"""The session layer: what a running conversation offers every front end.

A session is started one way (:mod:`monkey.session.setup`: a typed request in, a checked setup
out) and driven one way (:class:`monkey.session.session.Session`: the one pump that stores each
event before the front end shows it, and the one ``close()``). The app, the ``--plain`` REPL,
``--task``, editors over ACP and ``monkey serve`` parse what they are sent and render what comes
back; the behaviour of every slash command lives here, once (:mod:`monkey.session.commands`),
and answers with typed replies (:mod:`monkey.session.replies`). Nothing here prints or imports a UI.
"""
