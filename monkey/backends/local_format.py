"""The reply format of the local model: one JSON object per model call, and its streaming.

A local model has no native tool-call format, so monkey constrains its output with a
grammar made from one JSON schema: an ``anyOf`` with one object per tool,
``{"name": <const tool name>, "arguments": <the tool's schema>}``, plus the pseudo-tool
``final_answer`` whose ``answer`` string is the text shown to the person. This module holds
the pure parts of that format (no llama.cpp import): the schema, the system-prompt section
that explains it, the conversation rendered in it, the incremental scanner that streams
a final answer's text while the JSON is still being written, and a guard that notices a
reply stuck repeating itself.
"""

from __future__ import annotations

import functools
import json
import re
from importlib import resources
from typing import Any

from monkey.backends.convert import images_note
from monkey.messages import Message, ModelRequest, ToolSpec

__all__ = [
    "FINAL_ANSWER",
    "JsonStringDecoder",
    "RepetitionGuard",
    "ReplyScanner",
    "call_json",
    "chat_messages",
    "reply_schema",
    "tools_prompt",
]

FINAL_ANSWER = "final_answer"
"""The pseudo-tool the model calls to answer the person and end its turn."""

_FINAL_ANSWER_ARGS: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}


def reply_schema(tools: list[ToolSpec]) -> dict[str, Any]:
    """The JSON schema every reply must match: one call of one tool, or the final answer.

    ``name`` comes before ``arguments`` so that the model commits to a tool before it
    writes arguments, and so that a final answer can be streamed as soon as it starts.
    """
    branches = [_call_schema(t.name, t.parameters) for t in tools if t.name != FINAL_ANSWER]
    branches.append(_call_schema(FINAL_ANSWER, _FINAL_ANSWER_ARGS))
    return {"anyOf": branches}


def _call_schema(name: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"name": {"const": name}, "arguments": parameters},
        "required": ["name", "arguments"],
        "additionalProperties": False,
    }


def tools_prompt(tools: list[ToolSpec]) -> str:
    """The system-prompt section that lists the tools and explains the reply format.

    The text is ``local_prompt.md`` beside this module, written for a tiny model: short
    sentences, each tool in one line, and worked examples from ``local_examples.json``.
    Small models copy examples closely, so the examples are concrete requests with concrete
    replies, unlike any real task (an example with placeholder values gets its placeholders
    copied), and a file the examples write holds real code, not a sentence.
    """
    offered = [t for t in tools if t.name != FINAL_ANSWER]
    listed = [f"- {t.name}({_params_summary(t.parameters)}): {_first_sentence(t.description)}" for t in offered]
    listed.append(f"- {FINAL_ANSWER}(answer: string): Answer the user and end your turn.")
    examples: list[str] = []
    for request, name, arguments in _example_calls(offered)[: _examples()["listed"]]:
        examples += [f"User: {request}", call_json(name, arguments), ""]
    question = _examples()["question"]
    examples += [f"User: {question['request']}", call_json(FINAL_ANSWER, {"answer": question["answer"]})]
    template = resources.files(__package__).joinpath("local_prompt.md").read_text(encoding="utf-8")
    return template.replace("{tools}", "\n".join(listed)).replace("{examples}", "\n".join(examples)).strip()


@functools.cache
def _examples() -> dict[str, Any]:
    text = resources.files(__package__).joinpath("local_examples.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def demonstration(tools: list[ToolSpec]) -> list[dict[str, str]]:
    """Whole worked exchanges, shown before the conversation: request, call, result, answer.

    Small models learn the cycle from them, above all that a successful result is followed
    by ``final_answer`` rather than by the same call again, and that a question about a file
    is answered after reading it. The first ``demonstrations`` examples of
    ``local_examples.json`` whose tools are offered are shown this way (measured with
    SmolLM2-135M by ``python tools/bench.py local_tasks``).
    """
    offered = {t.name: t for t in tools if t.name != FINAL_ANSWER}
    data = _examples()
    out: list[dict[str, str]] = []
    shown = 0
    for example in data["calls"]:
        if shown >= data["demonstrations"]:
            break
        if not _fits(offered.get(example["name"]), example["arguments"]):
            continue
        shown += 1
        out += [
            {"role": "user", "content": example["request"]},
            {"role": "assistant", "content": call_json(example["name"], example["arguments"])},
            {"role": "user", "content": f"Result of {example['name']} (ok):\n{example['result']}"},
            {"role": "assistant", "content": call_json(FINAL_ANSWER, {"answer": example["answer"]})},
        ]
    return out


def _fits(tool: ToolSpec | None, arguments: dict[str, Any]) -> bool:
    """Whether ``arguments`` are a call of ``tool`` (its required names, no unknown ones)."""
    if tool is None:
        return False
    props = tool.parameters.get("properties", {})
    return set(tool.parameters.get("required", [])) <= set(arguments) and set(arguments) <= set(props)


def _example_calls(tools: list[ToolSpec]) -> list[tuple[str, str, dict[str, Any]]]:
    """Requests and the calls that answer them, with the tools of this set.

    The canned examples whose tool is offered; with none of those, one call of the first
    tool made from its schema.
    """
    by_name = {t.name: t for t in tools}
    calls = [
        (e["request"], e["name"], e["arguments"])
        for e in _examples()["calls"]
        if _fits(by_name.get(e["name"]), e["arguments"])
    ]
    if calls or not tools:
        return calls
    tool = tools[0]
    return [(f"Use {tool.name}", tool.name, _example_args(tool.parameters))]


_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


def _first_sentence(text: str, limit: int = 200) -> str:
    """The first sentence of a description: a tiny model reads one line per tool best."""
    sentence = _SENTENCE_END.split(_first_paragraph(text, 10_000), maxsplit=1)[0]
    return sentence if len(sentence) <= limit else sentence[: limit - 1].rstrip() + "…"


def _first_paragraph(text: str, limit: int = 400) -> str:
    para = text.strip().split("\n\n", 1)[0]
    para = " ".join(para.split())
    return para if len(para) <= limit else para[: limit - 1].rstrip() + "…"


def _type_name(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " | ".join(_type_name(s) for s in schema[key])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(str(k) for k in kind)
    if kind == "array" and isinstance(schema.get("items"), dict):
        return f"array of {_type_name(schema['items'])}"
    return str(kind) if kind else "any"


def _params_summary(parameters: dict[str, Any]) -> str:
    props: dict[str, Any] = parameters.get("properties", {})
    required = set(parameters.get("required", []))
    parts = []
    for name, schema in props.items():
        part = f"{name}: {_type_name(schema)}"
        if name not in required:
            part += " (optional)"
        parts.append(part)
    return ", ".join(parts)


def _example_args(parameters: dict[str, Any]) -> dict[str, Any]:
    props: dict[str, Any] = parameters.get("properties", {})
    required = parameters.get("required", [])
    samples = {"string": "...", "integer": 1, "number": 1, "boolean": True, "array": [], "object": {}}
    return {name: samples.get(props[name].get("type"), "...") for name in required if name in props}


# -- the conversation ---------------------------------------------------------------------


def call_json(name: str, arguments: dict[str, Any]) -> str:
    """One reply object as the model writes it."""
    return json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)


def chat_messages(request: ModelRequest) -> list[dict[str, str]]:
    """The request as chat messages for the model's own chat template.

    With tools offered, earlier assistant messages are shown as the JSON objects the format
    asks for (a tool call, or a ``final_answer``), so the model sees its own format back.
    Tool results become user messages (``Result of file_write (ok): ...``): small chat
    templates such as SmolLM2's ChatML know no ``tool`` role. Without tools the model
    writes plain text and the history is plain text.
    """
    with_tools = bool(request.tools)
    system = request.system.strip()
    if with_tools:
        system = f"{system}\n\n{tools_prompt(request.tools)}" if system else tools_prompt(request.tools)
    # an empty system message would replace the template's default one
    out: list[dict[str, str]] = [{"role": "system", "content": system}] if system else []
    if with_tools:
        out += demonstration(request.tools)
    names: dict[str, str] = {}
    for msg in request.messages:
        if msg.role == "user":
            out.append({"role": "user", "content": images_note(msg, "the local model reads only text")})
        elif msg.role == "assistant":
            out.append({"role": "assistant", "content": _assistant_content(msg, with_tools, names)})
        else:
            name = msg.name or names.get(msg.tool_call_id, "tool")
            status = "error" if msg.is_error else "ok"
            text = images_note(msg, "the local model reads only text")
            out.append({"role": "user", "content": f"Result of {name} ({status}):\n{text}"})
    return out


def _assistant_content(msg: Message, with_tools: bool, names: dict[str, str]) -> str:
    for call in msg.tool_calls:
        names[call.id] = call.name
    if msg.tool_calls:
        return "\n".join(call_json(c.name, c.arguments) for c in msg.tool_calls)
    if with_tools:
        return call_json(FINAL_ANSWER, {"answer": msg.content})
    return msg.content


# -- streaming ----------------------------------------------------------------------------

_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_PLAIN = re.compile(r'[^"\\]+')
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
_LOW_ESCAPE = re.compile(r"\\u[dD][c-fC-F][0-9a-fA-F]{2}")


def _may_become_low_escape(s: str) -> bool:
    """Whether ``s`` (fewer than 6 characters) can still grow into ``\\uDC00``-``\\uDFFF``."""
    pattern = ("\\", "u", "dD", "cdefCDEF", "0123456789abcdefABCDEF", "0123456789abcdefABCDEF")
    return all(c in allowed for c, allowed in zip(s, pattern, strict=False))


class JsonStringDecoder:
    """Decodes the inside of a JSON string literal that arrives in arbitrary pieces.

    Feed it what follows the opening quote. Each :meth:`feed` returns the characters that
    are certain so far; an escape cut in the middle (``\\u00``) is held back until it is
    complete, and a high surrogate escape waits for its low half. After the closing quote
    :attr:`done` is set and the text after the quote is kept in :attr:`rest`.
    Lone surrogates become U+FFFD, so the output can always be encoded as UTF-8.
    """

    def __init__(self) -> None:
        self._pending = ""
        self.done = False
        """The closing quote was seen."""
        self.rest = ""
        """What came after the closing quote."""

    def feed(self, chunk: str) -> str:
        """Decode one more piece; returns the new characters of the string."""
        if self.done:
            self.rest += chunk
            return ""
        buf = self._pending + chunk
        self._pending = ""
        out: list[str] = []
        i, n = 0, len(buf)
        while i < n:
            m = _PLAIN.match(buf, i)
            if m:
                out.append(m.group())
                i = m.end()
                continue
            if buf[i] == '"':
                self.done = True
                self.rest = buf[i + 1 :]
                break
            # a backslash escape
            if i + 1 >= n:
                self._pending = buf[i:]
                break
            esc = buf[i + 1]
            if esc != "u":
                out.append(_ESCAPES.get(esc, esc))
                i += 2
                continue
            if i + 6 > n:
                self._pending = buf[i:]
                break
            digits = buf[i + 2 : i + 6]
            if not _HEX4.fullmatch(digits):  # not valid JSON; keep it as written
                out.append(buf[i : i + 6])
                i += 6
                continue
            code = int(digits, 16)
            if 0xD800 <= code < 0xDC00:
                tail = buf[i + 6 : i + 12]
                if len(tail) < 6 and _may_become_low_escape(tail):
                    self._pending = buf[i:]
                    break
                if _LOW_ESCAPE.fullmatch(tail):
                    low = int(tail[2:], 16)
                    out.append(chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)))
                    i += 12
                    continue
                out.append("\ufffd")
            elif 0xDC00 <= code < 0xE000:
                out.append("\ufffd")
            else:
                out.append(chr(code))
            i += 6
        return "".join(out)


_NAME = re.compile(r'\s*\{\s*"name"\s*:\s*"([^"\\]*)"')
_ANSWER_KEY = re.compile(r'\s*,\s*"arguments"\s*:\s*\{\s*"answer"\s*:\s*"')


class ReplyScanner:
    """Follows one reply object as it streams and yields the text of a final answer.

    The grammar fixes the key order (``name``, then ``arguments``), so the scanner learns
    the tool's name first; for ``final_answer`` it then decodes the ``answer`` string
    incrementally. Tool calls are not streamed: they are parsed whole at the end.
    """

    def __init__(self) -> None:
        self.raw = ""
        """Everything the model wrote."""
        self.name: str | None = None
        """The tool's name, once it is complete."""
        self.answer = ""
        """The final answer's text decoded so far."""
        self._scan = 0
        self._decoder: JsonStringDecoder | None = None

    @property
    def is_final_answer(self) -> bool:
        """Whether the reply is a final answer (known once the name is complete)."""
        return self.name == FINAL_ANSWER

    def feed(self, chunk: str) -> str:
        """Take one more piece of the reply; returns new final-answer text, if any."""
        self.raw += chunk
        if self._decoder is not None:
            return self._decode(chunk)
        if self.name is None:
            m = _NAME.match(self.raw)
            if m is None:
                return ""
            self.name = m.group(1)
            self._scan = m.end()
        if self.name != FINAL_ANSWER:
            return ""
        m = _ANSWER_KEY.match(self.raw, self._scan)
        if m is None:
            return ""
        self._decoder = JsonStringDecoder()
        return self._decode(self.raw[m.end() :])

    def _decode(self, piece: str) -> str:
        assert self._decoder is not None
        text = self._decoder.feed(piece)
        self.answer += text
        return text

    @property
    def answer_complete(self) -> bool:
        """Whether the closing quote of the answer was seen."""
        return self._decoder is not None and self._decoder.done


class RepetitionGuard:
    """Notices a reply stuck in a loop: its last ``span`` characters repeat a short unit.

    Small models sometimes write the same line again and again until ``max_tokens`` (a
    file's content that never ends). Output whose last 512 characters are one unit of at
    most 32 characters over and over (16 times or more) is taken to be such a loop; real
    text rarely is.
    """

    def __init__(self, span: int = 512, max_period: int = 32, every: int = 8) -> None:
        self.span = span
        self.max_period = max_period
        self.every = every
        self._tail = ""
        self._fed = 0

    def feed(self, text: str) -> bool:
        """Take one more piece of output; returns whether the output now loops."""
        self._tail = (self._tail + text)[-self.span :]
        self._fed += 1
        if len(self._tail) < self.span or self._fed % self.every:
            return False
        tail = self._tail
        return any(tail[p:] == tail[:-p] for p in range(1, self.max_period + 1))
