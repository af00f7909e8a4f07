"""Workflows: a task run in stages on one agent (``--workflow tpdr``, ``/workflow tpdr``).

The Think/Plan/Do/Reflect workflow (:mod:`monkey.workflow.runner`) runs Think once, then
Plan, Do and Reflect until Reflect says the task is done or a cap ends it; each stage has
its own prompt (``prompts/*.md``), tool set and mode (:mod:`monkey.workflow.stages`), hands
its result to the next as a :class:`~monkey.workflow.handoff.Handoff`, emits
``stage_started`` / ``stage_completed`` and writes one line to the trace
(:mod:`monkey.workflow.trace`).
"""

from __future__ import annotations

__all__ = ["WORKFLOWS"]

WORKFLOWS = {"tpdr": "think, plan, do, reflect: plan in plan mode, do it, check it, and loop until done"}
"""The workflows monkey knows, by name."""
