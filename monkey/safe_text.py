"""Make untrusted text inert before it reaches a terminal or a person's judgement.

Model output and tool output must never drive the terminal (clear the screen, set the
clipboard with OSC 52, forge links with OSC 8, change the title) and a command shown
for approval must show every invisible character it contains.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["escape_controls", "invisible_warnings", "for_stream", "has_hidden", "printable"]

# C0 controls except tab and newline, DEL, C1 controls, and the format characters that
# reorder or hide text (bidi overrides and isolates, zero-width characters, BOM).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")
_NAMES = {"\x1b": "escape (ESC)", "\r": "carriage return", "\x08": "backspace", "\x07": "bell"}


def _escape_char(match: re.Match[str]) -> str:
    ch = match.group()
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cs", "Zl", "Zp"})
"""Controls, format characters (bidi, zero-width, tag characters), private use, surrogates,
line and paragraph separators: never shown as they are."""
_FILLERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")
"""Letters that draw as blank space (Hangul fillers, the empty Braille pattern)."""

_OTHER_DEFAULT_IGNORABLE = (
    (0x034F, 0x034F),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x2065, 0x2065),
    (0x3164, 0x3164),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0xE0000, 0xE0000),
    (0xE0002, 0xE001F),
    (0xE0080, 0xE00FF),
    (0xE01F0, 0xE0FFF),
)
"""Unicode's ``Other_Default_Ignorable_Code_Point`` (PropList.txt): the combining grapheme joiner,
the Hangul fillers, the Khmer inherent vowels, and code points reserved to be ignorable."""
_VARIATION_SELECTORS = ((0x180B, 0x180D), (0x180F, 0x180F), (0xFE00, 0xFE0F), (0xE0100, 0xE01EF))
"""Unicode's ``Variation_Selector`` (PropList.txt)."""
_IGNORABLE_RANGES = _OTHER_DEFAULT_IGNORABLE + _VARIATION_SELECTORS


def _default_ignorable(ch: str) -> bool:
    """Whether ``ch`` is a ``Default_Ignorable_Code_Point`` (DerivedCoreProperties.txt: ``Other_Default_
    Ignorable_Code_Point + Cf + Variation_Selector``, less white space and a few Cf characters that show;
    every Cf character is hidden anyway, so the ranges above are the rest of the definition)."""
    code = ord(ch)
    return any(lo <= code <= hi for lo, hi in _IGNORABLE_RANGES)


def _hidden(ch: str, strict: bool) -> bool:
    if ch in "\t\n":
        return False
    category = unicodedata.category(ch)
    if category in _HIDDEN_CATEGORIES:
        return True
    return strict and ((category == "Zs" and ch != " ") or ch in _FILLERS or _default_ignorable(ch))


_ASCII_HIDDEN = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
"""What :func:`_hidden` finds in ASCII text: the controls (every other hidden character is beyond ASCII)."""


def has_hidden(text: str) -> bool:
    """Whether ``text`` holds a character a person would not see as it is (tabs and newlines aside)."""
    if text.isascii():  # the common case, without a look-up per character
        return _ASCII_HIDDEN.search(text) is not None
    return any(_hidden(ch, strict=True) for ch in text)


def _escape_text(text: str, strict: bool) -> str:
    if text.isascii():
        return _UNSAFE.sub(_escape_char, text)
    return "".join(_escape_one(ch) if _hidden(ch, strict) else ch for ch in text)


def _escape_one(ch: str) -> str:
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def escape_controls(text: str, *, keep_newlines: bool = True, strict: bool = False) -> str:
    """``text`` with every control and invisible formatting character written as an escape.

    Escaped: controls, format characters (bidi overrides, zero-width and tag characters),
    private-use characters, surrogates, line and paragraph separators. ``strict`` (a
    command shown for approval) also escapes every space other than U+0020, the letters
    that draw as blank (Hangul fillers) and every other default-ignorable code point
    (variation selectors, the combining grapheme joiner, the Khmer inherent vowels). Tabs stay; newlines stay unless
    ``keep_newlines``
    is false. The result cannot move the cursor, change colours or hide characters on any
    terminal.
    """
    out = _escape_text(text, strict)
    if not keep_newlines:
        out = out.replace("\n", "\\n")
    return out


def invisible_warnings(text: str) -> list[str]:
    """Human-readable warnings for every kind of hidden or look-alike character in ``text``."""
    found: dict[str, int] = {}
    for ch in text:
        if not _hidden(ch, strict=True):
            continue
        name = _NAMES.get(ch)
        if name is None:
            try:
                name = f"{unicodedata.name(ch).lower()} (U+{ord(ch):04X})"
            except ValueError:
                name = f"{'control' if ord(ch) < 0x100 else 'unnamed'} character U+{ord(ch):04X}"
        found[name] = found.get(name, 0) + 1
    if "\n" in text:
        found["newline (several lines)"] = text.count("\n")
    return [f"contains {name}" + (f" ({n}x)" if n > 1 else "") for name, n in found.items()]


def for_stream(text: str, stream) -> str:  # a text stream
    """``text`` as it may be written to ``stream``: made inert for a terminal, as it is (with
    undecodable bytes replaced) for a file or a pipe, where a diff must stay appliable."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError, OSError):
        tty = False
    return escape_controls(text) if tty else printable(text)


def _json_escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def json_for_terminal(line: str) -> str:
    """A JSON text with every hidden character (inside its strings: the JSON itself is ASCII)
    written as a ``\\uXXXX`` escape, so it stays the same JSON but cannot drive a terminal."""
    if line.isascii() and _ASCII_HIDDEN.search(line) is None:  # JSON escapes every control but DEL
        return line
    return "".join(_json_escape(ch) if _hidden(ch, strict=False) else ch for ch in line)


def printable(text: str) -> str:
    """Text safe to show or encode: surrogates from undecodable bytes become U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="replace")
    return text
