"""Agent plugins: programs that speak JSON-RPC 2.0 on stdio and run as a monkey backend.

- :mod:`~monkey.plugins.manifest`: ``plugin.yaml``, read safely and checked field by field;
- :mod:`~monkey.plugins.discovery`: where plugins are found, ``[plugins.NAME]`` settings and
  ``[agents.NAME]`` aliases;
- :mod:`~monkey.plugins.rpc`: the JSON-RPC framing (one message a line);
- :mod:`~monkey.plugins.host`: one running plugin (its process, environment and requests);
- :mod:`~monkey.plugins.handover`: the conversation as ``agent.run``'s params.

The backend itself is :mod:`monkey.backends.plugin`; ``monkey plugins`` is
:mod:`monkey.commands.plugins`; the plugin shipped with monkey is in ``examples/``.
"""
