"""Diagnostics after edits: the language servers monkey asks about a file it just wrote.

:mod:`monkey.lsp.servers` reads ``[lsp.NAME]`` and the built-ins (used only when their program is
installed); :mod:`monkey.lsp.diagnostics` keeps one server per language per session, started at the
first edit of one of its files, and says what an edit newly broke; :mod:`monkey.lsp.client` is the
connection to one server (pygls's client and lsprotocol's types, imported only when a server starts).
"""
