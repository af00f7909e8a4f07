"""Subcommands of the ``monkey`` CLI, each imported only when run."""
