"""Agent performance metrics, computed from the session store (``monkey stats``, ``/stats``).

- :mod:`~monkey.metrics.since`: what ``--since`` accepts (``7d``, ``12h``, ``2026-11-01`` ...);
- :mod:`~monkey.metrics.figures`: the figures of a set of sessions and percentiles;
- :mod:`~monkey.metrics.query`: the figures of a scope (one session and its sub-agents, a
  workspace, every workspace; since a time), in total and grouped by day, model, backend,
  tool or session, read from the summary rows the recorder keeps
  (:mod:`monkey.store.tally`).

Nothing here calls a model or imports a front end.
"""
