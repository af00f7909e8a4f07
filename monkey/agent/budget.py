"""Budgets: how many model responses, dollars, tokens and seconds a run may spend.

A :class:`Budget` holds its :class:`Limits` and what was used. The loop charges it from every
``usage`` event (tokens and cost: the price table's for API backends, what Claude Code and
Codex report for themselves) and with one turn per model response, and checks it after every
model response and before every tool call; the first limit reached ends the run with reason
``budget`` and a :class:`~monkey.events.BudgetReached` event naming the budget, the amount
used and the limit.

A sub-agent's budget is a :meth:`Budget.child` of its parent's: whatever the child spends is
charged to every budget above it too, and a check looks up the chain, so a child stops when
its own limits or any ancestor's are reached, and the root's limits bound the whole tree.
Once reached, a budget stays reached (every agent sharing it stops at its next check).

A root budget's :attr:`Limits.scope` says what it counts: ``session`` (the default) the whole
stored session, so a resumed session starts from what it and its sub-agents spent before
(:meth:`Budget.restart`, given :func:`monkey.store.spent.session_spent`); ``run`` only this run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Limits", "Budget", "Exceeded", "BUDGETS", "SCOPES", "SUBTYPES", "parse_limits", "parse_scope"]

BUDGETS = ("max_turns", "max_budget_usd", "max_tokens", "max_wall")
"""The budgets' names, as flags (``--max-turns`` ...), config keys and event fields say them."""

SCOPES = ("session", "run")
"""What a root budget counts: the whole stored session (earlier runs included), or this run only."""

SUBTYPES = {name: f"error_{name}" for name in BUDGETS}
"""The ``subtype`` of ``--output-format json`` for each budget, in the style of Claude Code's
``error_max_turns`` / ``error_max_budget_usd``."""


@dataclass(frozen=True)
class Limits:
    """The limits of one budget; 0 means no limit."""

    max_turns: int = 0
    """Model responses (Claude Code's "turns"), over every turn of the run."""
    max_budget_usd: float = 0.0
    """US dollars."""
    max_tokens: int = 0
    """Input plus output tokens, cumulative."""
    max_wall: float = 0.0
    """Seconds of wall-clock time since the budget started."""
    scope: str = "session"
    """What the limits bound when they are the root's: ``session`` or ``run`` (see :data:`SCOPES`)."""

    def __bool__(self) -> bool:
        return any(getattr(self, name) for name in BUDGETS)

    def tighter(self, other: Limits) -> Limits:
        """The smaller of each limit (0, no limit, loses to any number)."""

        def pick(a: float, b: float) -> float:
            return min(a, b) if a and b else a or b

        return Limits(
            max_turns=int(pick(self.max_turns, other.max_turns)),
            max_budget_usd=pick(self.max_budget_usd, other.max_budget_usd),
            max_tokens=int(pick(self.max_tokens, other.max_tokens)),
            max_wall=pick(self.max_wall, other.max_wall),
            scope=self.scope,
        )


def parse_scope(value: str, origin: str) -> str:
    """``value`` if it is one of :data:`SCOPES`; raises ValueError naming ``origin``."""
    if value not in SCOPES:
        raise ValueError(f"{origin} must be session or run, got {value!r}")
    return value


def parse_limits(values: dict[str, object], origin: str) -> Limits:
    """Limits from a mapping (a config table, an agent definition); raises ValueError naming ``origin``."""
    out: dict[str, float] = {}
    for name in BUDGETS:
        value = values.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ValueError(f"{origin}: {name} must be a number of 0 or more, got {value!r}")
        if name in ("max_turns", "max_tokens") and int(value) != value:
            raise ValueError(f"{origin}: {name} must be a whole number, got {value!r}")
        out[name] = value
    return Limits(
        max_turns=int(out.get("max_turns", 0)),
        max_budget_usd=float(out.get("max_budget_usd", 0)),
        max_tokens=int(out.get("max_tokens", 0)),
        max_wall=float(out.get("max_wall", 0)),
    )


@dataclass(frozen=True)
class Exceeded:
    """A budget that was reached."""

    budget: str
    """One of :data:`BUDGETS`."""
    used: float
    limit: float
    owner: str = ""
    """Whose budget (an agent's label: ``main``, or a sub-agent's name and session)."""
    scope: str = "run"
    """``session``: ``used`` counts the stored session's earlier runs too; ``run``: this run only."""
    earlier: float = 0.0
    """How much of ``used`` earlier runs of the session spent."""

    @property
    def subtype(self) -> str:
        """``error_max_turns``, ``error_max_budget_usd`` ... (see :data:`SUBTYPES`)."""
        return SUBTYPES[self.budget]

    def describe(self) -> str:
        """One line for a person: which budget, how much was used, the limit."""
        if self.budget == "max_budget_usd":
            amounts = f"${self.used:.4f} of ${self.limit:.4f}"
        elif self.budget == "max_wall":
            amounts = f"{self.used:.1f}s of {self.limit:g}s"
        elif self.budget == "max_tokens":
            amounts = f"{int(self.used):,} of {int(self.limit):,} tokens"
        else:
            amounts = f"{int(self.used)} of {int(self.limit)} model responses"
        whose = f" of {self.owner}" if self.owner and self.owner != "main" else ""
        if self.earlier:
            amounts += f" in this session ({_amount(self.budget, self.earlier)} before this run)"
        return f"budget {self.budget}{whose} reached: {amounts}"


def _amount(budget: str, value: float) -> str:
    """``value`` of ``budget`` in few characters: ``$0.2500``, ``12.0s``, ``1,200``."""
    if budget == "max_budget_usd":
        return f"${value:.4f}"
    if budget == "max_wall":
        return f"{value:.1f}s"
    return f"{int(value):,}"


class Budget:
    """Limits and what was spent against them; shared by reference (children charge their root).

    Args:
        limits: the limits (none: only counts).
        parent: the budget a sub-agent's spending is charged to as well.
        owner: a label for messages (``main``, ``explore s-1234``).
        clock: where seconds come from (tests may move it).
    """

    def __init__(
        self,
        limits: Limits | None = None,
        *,
        parent: Budget | None = None,
        owner: str = "main",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limits = limits or Limits()
        self.parent = parent
        self.owner = owner
        self.clock = clock
        self.started: float | None = None
        """When the running turn began (:meth:`start`); None between turns, when the wall clock stops."""
        self.banked = 0.0
        """Seconds of this run's turns that ended (:meth:`pause`)."""
        self.turns = 0
        """Model responses charged (this budget's and its children's)."""
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost_usd = 0.0
        self.reached: Exceeded | None = None
        """The first limit found reached (sticky: every later check returns it)."""
        self.earlier: dict[str, float] = {}
        """What earlier runs of the session spent, by budget name (:meth:`restart`); empty: none."""

    @property
    def scope(self) -> str:
        """``session`` or ``run`` (a sub-agent's budget always counts its own run)."""
        return self.limits.scope if self.parent is None else "run"

    def restart(
        self, *, turns: int = 0, input_tokens: int = 0, output_tokens: int = 0, cost_usd: float = 0.0, wall: float = 0.0
    ) -> None:
        """Count again from what the session spent before this run (all 0: a new session); the
        wall clock starts again at the next turn, ``wall`` seconds already used."""
        self.turns, self.input_tokens, self.output_tokens, self.cost_usd = turns, input_tokens, output_tokens, cost_usd
        self.started = None
        self.banked = 0.0
        self.reached = None
        spent = {
            "max_turns": turns,
            "max_budget_usd": cost_usd,
            "max_tokens": input_tokens + output_tokens,
            "max_wall": wall,
        }
        self.earlier = {name: value for name, value in spent.items() if value}

    @property
    def tokens(self) -> int:
        """Input plus output tokens charged."""
        return self.input_tokens + self.output_tokens

    def start(self) -> None:
        """A turn starts: the wall clock runs (a call while it runs changes nothing)."""
        if self.started is None:
            self.started = self.clock()

    def pause(self) -> None:
        """The turn ended: its seconds are banked and the wall clock stops until the next turn
        (time a person takes between turns is not the agent's)."""
        if self.started is not None:
            self.banked += self.clock() - self.started
            self.started = None

    @property
    def wall(self) -> float:
        """Seconds of turns: the session's earlier runs', this run's ended turns' and the running one's."""
        running = 0.0 if self.started is None else self.clock() - self.started
        return self.earlier.get("max_wall", 0.0) + self.banked + running

    def child(self, limits: Limits | None = None, *, owner: str = "") -> Budget:
        """A budget for a sub-agent: its own ``limits``, and everything charged here too."""
        return Budget(limits, parent=self, owner=owner or self.owner, clock=self.clock)

    def charge(self, *, turns: int = 0, input_tokens: int = 0, output_tokens: int = 0, cost_usd: float = 0.0) -> None:
        """Add spending to this budget and every budget above it."""
        budget: Budget | None = self
        while budget is not None:
            budget.turns += turns
            budget.input_tokens += input_tokens
            budget.output_tokens += output_tokens
            budget.cost_usd += cost_usd
            budget = budget.parent

    def charge_usage(self, event: object) -> None:
        """Charge a :class:`~monkey.events.Usage` event (anything else is ignored)."""
        if getattr(event, "type", "") == "usage":
            self.charge(
                input_tokens=getattr(event, "input_tokens", 0),
                output_tokens=getattr(event, "output_tokens", 0),
                cost_usd=getattr(event, "cost_usd", 0.0),
            )

    def _own(self, starting: bool) -> Exceeded | None:
        lim = self.limits
        for name, used, limit in (
            ("max_budget_usd", self.cost_usd, lim.max_budget_usd),
            ("max_tokens", self.tokens, lim.max_tokens),
            ("max_turns", self.turns, lim.max_turns),
            ("max_wall", self.wall, lim.max_wall),
        ):
            if not limit:
                continue
            # N turns allow N model responses: the limit is reached when one more would start
            if used >= limit if (name != "max_turns" or starting) else used > limit:
                return Exceeded(
                    name,
                    round(used, 6) if isinstance(used, float) else used,
                    limit,
                    self.owner,
                    scope=self.scope,
                    earlier=round(self.earlier.get(name, 0), 6),
                )
        return None

    def check(self, *, starting: bool = False) -> Exceeded | None:
        """The budget reached, here or above (the nearest first); None while every one has room.

        ``starting``: a model call is about to start (then ``max_turns`` used up counts as reached;
        after a response the run may still run that response's tool calls)."""
        budget: Budget | None = self
        while budget is not None:
            if budget.reached is None:
                budget.reached = budget._own(starting)
            if budget.reached is not None:
                return budget.reached
            budget = budget.parent
        return None

    def deadline(self) -> float | None:
        """The soonest moment (on :attr:`clock`) a wall-clock limit here or above runs out; None: none."""
        times = []
        budget: Budget | None = self
        while budget is not None:
            if budget.limits.max_wall and budget.started is not None:
                used = budget.earlier.get("max_wall", 0.0) + budget.banked
                times.append(budget.started + budget.limits.max_wall - used)
            budget = budget.parent
        return min(times) if times else None

    def root(self) -> Budget:
        """The budget at the top of the chain."""
        budget = self
        while budget.parent is not None:
            budget = budget.parent
        return budget
