"""``monkey acp``: monkey as an Agent Client Protocol agent over stdio, for editors.

A third front end of the session layer, beside the app and the line REPL: it parses what the
editor sends (prompts, cancels, permission answers) and renders monkey's events as ACP
``session/update`` notifications. Every tool call still runs through monkey's own loop,
permission rules and checkpoints; every event is stored before it is sent.

Modules: :mod:`~monkey.acp.server` (the ACP ``Agent``: initialize, sessions, prompts),
:mod:`~monkey.acp.session` (one conversation and its store), :mod:`~monkey.acp.updates`
(events to updates), :mod:`~monkey.acp.prompt` (prompt blocks to a message),
:mod:`~monkey.acp.approver` (approvals through ``session/request_permission``),
:mod:`~monkey.acp.replies` (slash command replies as text). The SDK
(``agent-client-protocol``, import ``acp``) is imported only by these modules.
"""
