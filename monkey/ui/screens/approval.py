"""The approval dialog: one dangerous tool call, what it would do, and the person's answer.

The agent asks its :class:`~monkey.permissions.requests.Approver`; the app's approver pushes an
:class:`ApprovalScreen` and awaits the :class:`~monkey.permissions.requests.Decision` it is
dismissed with. Every piece of text here came from the model or the workspace, so it is
rendered as plain :class:`~rich.text.Text` (never Rich markup) and already escaped.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Input, Static

from monkey.permissions.requests import STOP_REASON, Decision, stopped_by_user
from monkey.permissions.rules import SHELL_TOOL
from monkey.safe_text import escape_controls
from monkey.ui.screens.diff_text import diff_text
from monkey.ui.screens.guarded import GUARD_SECONDS, GuardedDialog

__all__ = ["ApprovalScreen", "STOP_REASON", "GUARD_SECONDS"]

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


class ApprovalScreen(GuardedDialog):
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
    ANSWER_ACTIONS = frozenset({"approve_once", "approve_session", "approve_always", "deny"})

    @property
    def asking_reason(self) -> bool:
        """Whether the reason input is showing (``n`` was pressed)."""
        return self.typing

    def keys_text(self) -> Text:
        keys = (
            "y approve once   "
            + ("a approve for session   " if self.request.grant else "")
            + ("f approve for good   " if self._for_good else "")
        )
        return Text(keys + "n deny   Esc deny and stop")

    def title_text(self) -> Text:
        return Text.assemble(("Approve ", "bold"), (escape_controls(self.request.tool), "bold reverse"), ("?", "bold"))

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
            yield self.heading()
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
            grant = (
                Text.assemble(("a", "bold"), " approves for this session: ", escape_controls(request.grant))
                if request.grant
                else Text("no session grant possible: this call needs a fresh answer each time")
            )
            if self._for_good:
                rules = ", ".join(escape_controls(rule, keep_newlines=False) for rule in request.rules)
                grant.append_text(
                    Text.assemble("\n", ("f", "bold"), " approves for good, saving to your config: ", rules)
                )
            if request.unsandboxed:
                grant.append_text(Text("\napproved here, this command runs again OUTSIDE the sandbox", style="bold"))
            yield Static(grant, id="grant")
            yield Input(placeholder="why not? (sent to the model; Enter with nothing stops the turn)", id="reason")
            yield self.keys_line()

    def on_resize(self) -> None:
        self.call_after_refresh(self.fit_to_screen)

    def fit_to_screen(self) -> None:
        """Shrink the diff (or command line) box so the grant lines and the answer keys stay on
        screen; the box scrolls what does not fit (the dialog may take 90% of the screen)."""
        try:
            dialog = self.query_one("#dialog")
            box = self.query_one("#command-box" if self.is_shell else "#diff-box")
        except Exception:  # not composed yet
            return
        cap = 8 if self.is_shell else 20
        room = int(self.size.height * 0.9) - dialog.styles.gutter.height
        for child in dialog.children:
            if child is not box and child.display:
                room -= child.outer_size.height + child.styles.margin.top + child.styles.margin.bottom
        height = max(3, min(cap, room))
        if box.styles.max_height is None or box.styles.max_height.value != height:
            box.styles.max_height = height

    def offers(self, action: str) -> bool:
        """``a`` needs a grant, ``f`` rules to save."""
        if action == "approve_session":
            return bool(self.request.grant)
        if action == "approve_always":
            return self._for_good
        return True

    def action_approve_once(self) -> None:
        """Run this call, once."""
        self.dismiss(Decision(approved=True, by="user"))

    def action_approve_session(self) -> None:
        """Run this call and every call the grant covers, for the rest of the session."""
        self.dismiss(
            Decision(
                approved=True, scope="session", by="user", reason=f"approved for this session: {self.request.grant}"
            )
        )

    def action_approve_always(self) -> None:
        """Run this call, grant it for the session, and save its rules to the user's config."""
        self.dismiss(
            Decision(
                approved=True, scope="always", by="user", reason=f"approved for good: {', '.join(self.request.rules)}"
            )
        )

    def action_deny(self) -> None:
        """Show the reason input; the answer is sent when Enter is pressed in it."""
        self.typing = True
        reason = self.query_one("#reason", Input)
        reason.display = True
        reason.focus()
        self.call_after_refresh(self.fit_to_screen)
        self.query_one("#keys", Static).update(Text("Enter send the reason   Esc deny and stop"))

    def action_stop(self) -> None:
        """Deny and stop the turn."""
        self.dismiss(stopped_by_user())

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Deny with the typed reason, or stop the turn when none was typed."""
        event.stop()
        reason = event.value.strip()
        if not reason:
            self.action_stop()
            return
        self.dismiss(Decision(approved=False, by="user", reason=f"the user said: {reason}"))
