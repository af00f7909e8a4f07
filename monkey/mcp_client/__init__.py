"""monkey as an MCP client: servers from ``.mcp.json`` and ``[mcp_servers]``, their tools in the
agent's registry under the one permission engine (see :mod:`monkey.mcp_client.manager`).

Nothing here imports the ``mcp`` SDK until a server connects, so ``monkey --version`` stays fast.
"""
