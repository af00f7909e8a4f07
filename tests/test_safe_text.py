"""Untrusted text is made inert: nothing hidden or look-alike survives, and the approval
dialog names every such character with its code point."""

from __future__ import annotations

import functools
import unicodedata

from hypothesis import example, given
from hypothesis import strategies as st

from monkey.permissions.requests import build_request
from monkey.safe_text import escape_controls, invisible_warnings

HIDDEN = {"Cc", "Cf", "Co", "Cs", "Zl", "Zp"}


@given(st.text())
def test_nothing_hidden_survives_escaping(text: str) -> None:
    for strict in (False, True):
        out = escape_controls(text, strict=strict)
        for ch in out:
            assert ch in "\t\n" or unicodedata.category(ch) not in HIDDEN, (text, out)
            if strict:
                assert not (unicodedata.category(ch) == "Zs" and ch != " "), (text, out)


@given(st.text())
def test_escaping_keeps_ordinary_text(text: str) -> None:
    ordinary = "".join(ch for ch in text if ch == " " or unicodedata.category(ch)[0] in "LNPS")
    ordinary = ordinary.replace("\\", "")  # an escape introduces backslashes; plain text keeps its own
    assert escape_controls(ordinary) == ordinary


def test_the_approval_dialog_names_look_alike_characters() -> None:
    command = "rm\u00a0-rf /tmp/x \U000e0069\U000e0067 \u2028 \u3164 echo\u2003ok"
    request = build_request("c1", "shell_execute", {"command": command}, "")
    shown = request.summary
    for raw in ("\u00a0", "\U000e0069", "\u2028", "\u3164", "\u2003"):
        assert raw not in shown
    assert "\\xa0" in shown and "\\U000e0069" in shown and "\\u2028" in shown and "\\u3164" in shown
    warnings = " ".join(request.warnings)
    for name in (
        "no-break space (U+00A0)",
        "tag latin small letter i (U+E0069)",
        "line separator (U+2028)",
        "hangul filler (U+3164)",
        "em space (U+2003)",
    ):
        assert name in warnings, warnings


def test_prose_in_the_transcript_keeps_its_spaces() -> None:
    assert escape_controls("prix\u00a0: 10\u202f€") == "prix\u00a0: 10\u202f€"
    assert escape_controls("tag\U000e0041") == "tag\\U000e0041"
    assert invisible_warnings("plain") == []


@given(st.dictionaries(st.text(), st.text(), max_size=4))
@example({"": "\x7f"})  # DEL: JSON leaves it as it is
def test_json_for_terminal_is_the_same_json_with_nothing_hidden(value: dict[str, str]) -> None:
    import json

    from monkey.safe_text import json_for_terminal

    shown = json_for_terminal(json.dumps(value, ensure_ascii=False))
    assert json.loads(shown) == value
    assert not any(unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cs", "Zl", "Zp") for ch in shown)


@functools.cache
def _default_ignorable_points() -> list[int]:
    """Every Default_Ignorable_Code_Point, from the ``regex`` module's own Unicode tables (the
    property as DerivedCoreProperties.txt defines it), not from monkey's ranges. Computed when a
    test first needs it (a walk over every code point), not when the module is collected."""
    import regex

    prop = regex.compile(r"\p{Default_Ignorable_Code_Point}")
    return [cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF and prop.match(chr(cp))]


def test_the_oracle_knows_the_characters_of_the_issue() -> None:
    for cp in (0x034F, 0x17B4, 0x17B5, 0xFE0F, 0xE0100, 0x180B, 0x2065, 0xFFF0):
        assert cp in _default_ignorable_points()


@given(st.deferred(lambda: st.sampled_from(_default_ignorable_points())), st.text(alphabet="abc -", max_size=8))
@example(0x034F, "rm -rf x")
@example(0x17B4, "ls")
@example(0x17B5, "ls")
@example(0xFE0F, "echo")
@example(0xE01EF, "cat")
def test_every_default_ignorable_code_point_is_made_visible(cp: int, around: str) -> None:
    from monkey.safe_text import has_hidden

    ch = chr(cp)
    command = f"{around}{ch}{around}"
    assert has_hidden(command)
    assert ch not in escape_controls(command, strict=True)
    request = build_request("c1", "shell_execute", {"command": command}, "")
    assert ch not in request.summary
    assert any(f"U+{cp:04X}" in w for w in invisible_warnings(command))
