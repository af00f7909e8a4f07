"""The agent's local tools: files, shell, search, the workspace guard and the registry.

Import the concrete modules (``monkey.tools.registry``, ``monkey.tools.shell``...); this
package module stays empty so that importing one tool does not import them all.
"""
