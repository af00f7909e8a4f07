"""What one stage of a workflow hands the next: its result as a small structured object.

The same object is stored with the ``stage_completed`` event (as JSON), written to the
trace, and given to the next stage's prompt as a short text (:meth:`Handoff.for_prompt`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["Handoff"]

_LIMIT = 4000
"""Characters of any one text a prompt is given (the whole is in the stored event)."""


def _cut(text: str, limit: int = _LIMIT) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 20] + "\n[… cut]"


@dataclass
class Handoff:
    """One stage's result."""

    stage: str
    iteration: int
    outcome: str
    """How the stage's turn ended (``completed``, ``denied``, ``error``, ``max_iterations``, ``cancelled``)."""
    summary: str = ""
    """The stage's final answer (Think: what it found; Do: what it did; Reflect: its reasoning)."""
    plan: str = ""
    """Plan: the plan (what ``exit_plan_mode`` proposed, else the stage's answer)."""
    plan_outcome: str = ""
    """Plan: what the person (or the headless policy) answered: approved, recorded, rejected, sent_back."""
    mode: str = ""
    """Plan: the mode an approved plan goes on in (Do runs in it)."""
    files_changed: list[str] = field(default_factory=list)
    """Do: the paths its checkpoints recorded."""
    verdict: str = ""
    """Reflect: ``done`` or ``not_done``."""
    reason: str = ""
    """Reflect: why; any stage: why it failed."""
    verify_command: str = ""
    verify_ok: bool | None = None
    """Reflect: whether the verify command passed (None: none configured, or it did not run)."""
    verify_output: str = ""

    def to_json(self) -> dict[str, Any]:
        """The handoff as a JSON object (stored with ``stage_completed``)."""
        data = asdict(self)
        for key in ("summary", "plan", "verify_output"):
            data[key] = _cut(data[key], 20_000)
        return data

    def for_prompt(self) -> str:
        """The handoff as the next stage's prompt shows it."""
        lines = [f"<handoff from {self.stage}, iteration {self.iteration}: {self.outcome}>"]
        if self.plan:
            lines += ["Plan:", _cut(self.plan)]
        elif self.summary:
            lines += ["Result:", _cut(self.summary)]
        if self.files_changed:
            lines.append("Files changed: " + ", ".join(self.files_changed))
        if self.verdict:
            lines.append(f"Verdict: {self.verdict} — {self.reason}")
        if self.verify_command:
            state = "passed" if self.verify_ok else "FAILED" if self.verify_ok is not None else "did not run"
            lines.append(f"Verify command `{self.verify_command}` {state}:")
            lines.append(_cut(self.verify_output, 3000) or "(no output)")
        lines.append("</handoff>")
        return "\n".join(lines)
