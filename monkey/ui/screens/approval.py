"""The approval dialog: one dangerous tool call, what it would do, and the person's answer.

The agent asks its :class:`~monkey.agent.approval.Approver`; the app's approver pushes an
:class:`ApprovalScreen` and awaits the :class:`~monkey.agent.approval.Decision` it is
dismissed with. Every piece of text here came from the model or the workspace, so it is
rendered as plain :class:`~rich.text.Text` (never Rich markup) and already escaped.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from monkey.agent.approval import SHELL_TOOL, ApprovalRequest, Decision
from monkey.safe_text import escape_controls
from monkey.ui.screens.diff_text import diff_text

__all__ = ["ApprovalScreen", "STOP_REASON", "GUARD_SECONDS"]

GUARD_SECONDS = 0.4
"""How long a new dialog ignores its answer keys. A person typing while the agent works
does not see the dialog appear between two keys; what they type next must not answer it."""

STOP_REASON = "the user stopped the turn"
"""The reason of a denial that stops the turn (Esc, or ``n`` with no reason typed)."""

_LONG_ARGUMENTS = frozenset({"command", "content", "old_string", "new_string"})
"""Arguments the command line or the diff already shows in full."""


def argument_lines(arguments: dict[str, Any], *, width: int = 100) -> Text:
    """The call's other arguments, one ``name: value`` per line, escaped and shortened."""
    out = Text()
    for name, value in arguments.items():
        if name in _LONG_ARGUMENTS:
            continue
        shown = escape_controls(str(value), keep_newlines=False)
        if len(shown) > width:
            shown = shown[: width - 1] + "…"
        if out:
            out.append("\n")
        out.append(f"{escape_controls(str(name))}: ", style="bold")
        out.append(shown)
    return out


class ApprovalScreen(ModalScreen[Decision]):
    """Asks a person about one tool call; dismissed with a :class:`Decision`.

    Keys: ``y`` approve once, ``a`` approve for the session (only when the request offers a
    grant), ``f`` approve for good (the request's rules saved to the user's config; only when
    it offers rules), ``n`` deny with a reason for the model, Esc deny and stop the turn.

    For ``guard`` seconds after it opens the dialog ignores ``y``, ``a`` and ``n`` (keys typed
    ahead, meant for the message box); Esc, which only denies, works at once.
    """

    CSS_PATH = "approval.tcss"
    AUTO_FOCUS = "#diff-box, #command-box"
    BINDINGS = [
        Binding("y", "approve_once", "approve once"),
        Binding("a", "approve_session", "approve for session"),
        Binding("f", "approve_always", "approve for good"),
        Binding("n", "deny", "deny"),
        Binding("escape", "stop", "deny and stop", priority=True),
    ]

    def __init__(self, request: ApprovalRequest, *, guard: float = GUARD_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.request = request
        """The call waiting for an answer."""
        self.asking_reason = False
        """Whether the reason input is showing (``n`` was pressed)."""
        self.guard = guard
        """Seconds after opening during which the answer keys are ignored."""
        self.clock = clock
        self.opened_at: float | None = None
        """When the dialog was first shown (by :attr:`clock`)."""

    @property
    def armed(self) -> bool:
        """Whether the answer keys work: the dialog has been on screen for :attr:`guard` seconds."""
        return self.opened_at is not None and self.clock() - self.opened_at >= self.guard

    def on_mount(self) -> None:
        self.opened_at = self.clock()
        if self.guard > 0:
            self._arming = self.set_interval(0.05, self._show_keys_when_armed)

    def _show_keys_when_armed(self) -> None:
        if not self.armed:
            return
        self._arming.stop()
        if not self.asking_reason:
            self.query_one("#keys", Static).update(self._keys_text())

    def _keys_text(self) -> Text:
        keys = ("y approve once   " + ("a approve for session   " if self.request.grant else "")
                + ("f approve for good   " if self._for_good else ""))
        return Text(keys + "n deny   Esc deny and stop")

    @property
    def _for_good(self) -> bool:
        return bool(self.request.grant and self.request.rules)

    @property
    def is_shell(self) -> bool:
        """Whether the call runs a command line."""
        return self.request.tool == SHELL_TOOL

    def compose(self) -> ComposeResult:
        request = self.request
        with Vertical(id="dialog"):
            yield Static(Text.assemble(("Approve ", "bold"), (escape_controls(request.tool), "bold reverse"),
                                       ("?", "bold")), id="title")
            args = argument_lines(request.arguments)
            if args:
                yield Static(args, id="arguments")
            if request.warnings:
                warning = Text("⚠ ", style="bold")
                warning.append("\n⚠ ".join(escape_controls(w, keep_newlines=False) for w in request.warnings))
                yield Static(warning, id="warnings")
            if self.is_shell:
                yield Static(Text("command line (exactly as it would run):", style="bold"), classes="label")
                with VerticalScroll(id="command-box"):
                    yield Static(Text(request.summary), id="command")
            else:
                yield Static(Text("change it would apply:", style="bold"), classes="label")
                with VerticalScroll(id="diff-box"):
                    yield Static(diff_text(request.summary), id="diff")
            grant = (Text.assemble(("a", "bold"), " approves for this session: ", escape_controls(request.grant))
                     if request.grant else Text("no session grant possible: this call needs a fresh answer each time"))
            if self._for_good:
                rules = ", ".join(escape_controls(rule, keep_newlines=False) for rule in request.rules)
                grant.append_text(Text.assemble("\n", ("f", "bold"), " approves for good, saving to your config: ",
                                                rules))
            if request.unsandboxed:
                grant.append_text(Text("\napproved here, this call runs as your own command: outside the sandbox",
                                       style="italic"))
            yield Static(grant, id="grant")
            yield Input(placeholder="why not? (sent to the model; Enter with nothing stops the turn)", id="reason")
            # while the guard lasts the answer keys are not offered, so none is shown before it works
            yield Static(self._keys_text() if self.guard <= 0 else
                         Text("look first: the answer keys work in a moment", style="italic"), id="keys")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Answer keys wait for the guard and stop working while a reason is typed; ``a`` needs a grant."""
        if action in ("approve_once", "approve_session", "approve_always", "deny") and (self.asking_reason or not self.armed):
            return False
        if action == "approve_session" and not self.request.grant:
            return False
        if action == "approve_always" and not self._for_good:
            return False
        return True

    def action_approve_once(self) -> None:
        """Run this call, once."""
        self.dismiss(Decision(approved=True, by="user"))

    def action_approve_session(self) -> None:
        """Run this call and every call the grant covers, for the rest of the session."""
        self.dismiss(Decision(approved=True, scope="session", by="user",
                              reason=f"approved for this session: {self.request.grant}"))

    def action_approve_always(self) -> None:
        """Run this call, grant it for the session, and save its rules to the user's config."""
        self.dismiss(Decision(approved=True, scope="always", by="user",
                              reason=f"approved for good: {', '.join(self.request.rules)}"))

    def action_deny(self) -> None:
        """Show the reason input; the answer is sent when Enter is pressed in it."""
        self.asking_reason = True
        reason = self.query_one("#reason", Input)
        reason.display = True
        reason.focus()
        self.query_one("#keys", Static).update(Text("Enter send the reason   Esc deny and stop"))

    def action_stop(self) -> None:
        """Deny and stop the turn."""
        self.dismiss(Decision(approved=False, by="user", reason=STOP_REASON, stop=True))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Deny with the typed reason, or stop the turn when none was typed."""
        event.stop()
        reason = event.value.strip()
        if not reason:
            self.action_stop()
            return
        self.dismiss(Decision(approved=False, by="user", reason=f"the user said: {reason}"))
