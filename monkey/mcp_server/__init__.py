"""monkey as an MCP server (``monkey serve``): monkey's tools for an MCP client, over stdio or HTTP.

A front end like :mod:`monkey.acp`: every call runs through the agent loop's own path
(:meth:`monkey.agent.loop.Agent.run_tool`) and is recorded as a monkey session. The ``mcp``
SDK is imported only here, and only when ``monkey serve`` runs.
"""
