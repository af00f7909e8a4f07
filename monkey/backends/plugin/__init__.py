"""Agent plugins: programs that speak JSON-RPC 2.0 on stdio and run as a monkey backend.

- :mod:`~monkey.backends.plugin.manifest`: ``plugin.yaml``, read safely and checked field by field;
- :mod:`~monkey.backends.plugin.discovery`: where plugins are found, ``[plugins.NAME]`` settings and
  ``[agents.NAME]`` aliases;
- :mod:`~monkey.backends.plugin.rpc`: the JSON-RPC framing (one message a line);
- :mod:`~monkey.backends.plugin.host`: one running plugin (its process, environment and requests);
- :mod:`~monkey.backends.plugin.handover`: the conversation as ``agent.run``'s params.

The backend itself is :mod:`monkey.backends.plugin.backend`; ``monkey plugins`` is
:mod:`monkey.commands.plugins`; the plugin shipped with monkey is in ``examples/``.
"""
