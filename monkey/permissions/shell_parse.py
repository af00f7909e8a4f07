"""Shell lines as the permission engine sees them: the simple commands inside, as argv tokens.

A line is parsed with a real shell grammar (tree-sitter with ``tree-sitter-bash``) into
the simple commands it runs, across ``&&``, ``||``, ``;``, pipes, newlines, subshells,
groups and control structures. Each command's argv is given with its wrappers unwrapped
(``env``, ``sh -c``, ``bash -lc``, ``timeout``, ``nice``, ``nohup``, ``xargs``,
``command``, ``time``, a full path to a binary), so a rule for ``curl`` sees
``env X=1 /usr/bin/curl`` and ``sh -c 'curl ...'`` as ``curl``.

A line that needs no shell (:func:`monkey.tools.command_line.read_line` gives its argv) is
not parsed again: its commands are built from that argv, the one ``shell_execute`` runs, so
the grammar and the runner can never read its words differently. Only a line that needs a
shell (which then runs, approved by a person, through ``/bin/sh -c`` as written) is parsed
by the grammar.

What the grammar cannot vouch for is *unsafe*, and a person must look: a parse error or a
node the walk does not know, command or process substitution, ``eval``/``source``/``exec``,
a command name that is not a plain word, and output redirected to anything but
``/dev/null``. Unsafe lines are never allowed by a rule; deny rules still see every command
the walk found. Among them, what may run code the walk cannot see at all (*blind*: a command named
by a variable, ``eval``, bash's arithmetic on a variable's value whose array subscript runs a command
substitution, ``${x@P}``, ``${!x}``, builtins that take variable names) is not run by ``auto`` mode either.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from monkey.permissions.shell_runners import inner_commands
from monkey.permissions.shell_words import QUOTED_ESCAPE, UNQUOTED_ESCAPE, expands, unescape
from monkey.safe_text import has_hidden
from monkey.tools.command_line import read_line

__all__ = ["Origin", "ParsedLine", "parse_line"]


@dataclass(frozen=True)
class Origin:
    """How one simple command was named and run, for checks that need more than its argv."""

    program: str
    """The program as written (``./cat``, ``/usr/bin/cat``, ``cat``), before it is reduced to its name."""
    wrappers: tuple[str, ...] = ()
    """The wrappers it runs under, outermost first (``timeout``, ``xargs``, ``sh``...)."""
    env: tuple[str, ...] = ()
    """Variables set for it (``X=1 cmd``, ``env X=1 cmd``)."""


@dataclass
class ParsedLine:
    """The simple commands of a shell line, and why a person must look at it (if they must)."""

    commands: list[list[str]] = field(default_factory=list)
    """The argv of each simple command, wrappers unwrapped, in order."""
    wrappers: list[str] = field(default_factory=list)
    """The wrapper commands taken off (``env``, ``sh``, ``timeout``...): deny rules see them too."""
    unsafe: list[str] = field(default_factory=list)
    """Reasons no rule may allow the line (empty: the commands are all it runs)."""
    origins: list[Origin] = field(default_factory=list)
    """How each command of :attr:`commands` was named and run (the same order)."""
    blind: list[str] = field(default_factory=list)
    """The reasons among :attr:`unsafe` that the line may run code the walk cannot see (a command
    named by a variable, ``eval``, bash's arithmetic on a variable's value, ``${x@P}``...): no mode,
    ``auto`` included, runs such a line without a person."""
    writes: list[str] = field(default_factory=list)
    """The files output is redirected to, as written (``/dev/null`` left out)."""
    reads: list[str] = field(default_factory=list)
    """The files input is redirected from (``< FILE``), as written (``"\\0dynamic"``: known at run time)."""


@lru_cache(maxsize=1)
def _parser() -> Any:
    import tree_sitter_bash
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_bash.language()))


_PASS_THROUGH = frozenset(
    "program list pipeline subshell compound_statement negated_command if_statement elif_clause else_clause"
    " while_statement do_group for_statement c_style_for_statement case_statement case_item redirected_statement".split()
)
"""Nodes whose children are walked for the commands inside."""
_PUNCTUATION = frozenset(
    {
        "&&",
        "||",
        ";",
        ";;",
        "|",
        "|&",
        "&",
        "(",
        ")",
        "{",
        "}",
        "!",
        "if",
        "then",
        "else",
        "elif",
        "fi",
        "while",
        "until",
        "do",
        "done",
        "for",
        "in",
        "case",
        "esac",
        "comment",
        "\n",
    }
)
_RUNS_ITS_ARGUMENT = frozenset({"eval", "source", ".", "exec", "trap"})
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh"})


@lru_cache(maxsize=256)
def parse_line(line: str) -> ParsedLine:
    """The simple commands of ``line`` and the reasons it is unsafe, if any.

    Cached: one decision asks about the same line several times (each deny rule, the allow
    rules, the grant it would make). Callers must not change the result.
    """
    out = ParsedLine()
    if has_hidden(line):  # what a person approves must be what they saw
        out.unsafe.append("it contains hidden characters")
    _walk_line(line, out, depth=0)
    out.unsafe = list(dict.fromkeys(out.unsafe))
    out.blind = list(dict.fromkeys(out.blind))
    return out


def _blind(out: ParsedLine, reason: str) -> None:
    """``reason`` makes the line unsafe, and it may run code no check sees."""
    out.unsafe.append(reason)
    out.blind.append(reason)


_CODE_IN_ARITHMETIC = re.compile(r"[A-Za-z_$`]")
"""What in an arithmetic context makes bash evaluate a variable's value as an expression, whose array
subscripts run command substitutions (``a='x[$(cmd)]'; echo $((a))``)."""
_ARITHMETIC_TEST = re.compile(r"(?:^|\s)-(?:eq|ne|lt|le|gt|ge|v)(?:\s|$)")


def _evaluates(node: Any) -> str | None:
    """Why an expansion node makes bash evaluate text as code at run time (None: it does not).

    Bash evaluates arithmetic (``$((a))``, ``$[a]``, ``${x:a}``, an indexed array's subscript
    ``${arr[a]}``, ``[[ a -eq b ]]``, ``[[ -v a ]]``) on a variable's *value*, where an array
    subscript runs a command substitution; ``${!x}`` expands a name held in a variable (subscript
    included) and ``${x@P}`` expands a value as a prompt, command substitutions included.
    """
    kind = node.type
    if kind == "arithmetic_expansion":
        inner = node.text.decode("utf-8", errors="replace")[2:]
        return "arithmetic expansion evaluates variables as code" if _CODE_IN_ARITHMETIC.search(inner) else None
    if kind == "subscript":
        index = node.child_by_field_name("index")
        text = (index.text if index is not None else node.text.partition(b"[")[2]).decode("utf-8", "replace")
        return "an array subscript is evaluated as code" if _CODE_IN_ARITHMETIC.search(text.strip("[]@*")) else None
    if kind == "expansion":
        types = [c.type for c in node.children]
        if types[1:2] == ["!"]:
            return "${!name} expands a name only known at run time"
        if "@" in types and types[types.index("@") + 1 : types.index("@") + 2] == ["P"]:
            return "${name@P} expands a value as a prompt, running its command substitutions"
        if ":" in types:
            offset = b"".join(c.text for c in node.children[types.index(":") + 1 : -1]).decode("utf-8", "replace")
            if _CODE_IN_ARITHMETIC.search(offset):
                return "a substring offset is evaluated as code"
        return None
    if kind == "test_command" and _ARITHMETIC_TEST.search(node.text.decode("utf-8", errors="replace")):
        return "[[ ]] evaluates its operands as arithmetic code"
    return None


_PLAIN = re.compile(r"[A-Za-z0-9_./,:+= -]*")
"""A line of plain words only: no quoting, expansion, pattern, operator or redirection."""
_RESERVED = frozenset(
    "if then else elif fi case esac for select while until do done in function time coproc declare typeset export"
    " readonly local unset unsetenv".split()
)
"""First words the grammar reads as syntax of its own (a keyword, a declaration)."""


def _plain_words(line: str) -> list[str] | None:
    """The words of a line with nothing for the shell to interpret (``git status -s``), else None.

    For such a line the grammar gives exactly one command made of these words (a test checks
    that on the benchmark's corpus), so the parser is not needed: most lines an agent runs
    are like this. A first word holding ``=`` (an assignment) or a reserved word goes to the parser.
    """
    if _PLAIN.fullmatch(line) is None:
        return None
    words = line.split(" ")
    words = [w for w in words if w]
    if words and ("=" in words[0] or words[0] in _RESERVED):
        return None
    return words


def _walk_line(line: str, out: ParsedLine, depth: int) -> None:
    if depth > 3:
        _blind(out, "shells nested too deep to check")
        return
    words = _plain_words(line)
    if words is not None:
        if words:
            _unwrapped(words, out, depth)
        return
    read = read_line(line)
    if read.argv is not None and read.argv[0] not in _RESERVED and "=" not in read.argv[0]:
        _unwrapped(list(read.argv), out, depth)  # the very argv shell_execute runs: decided is what runs
        return
    data = line.encode("utf-8", errors="surrogateescape")
    tree = _parser().parse(data)
    if tree.root_node.has_error:
        _blind(out, "the line cannot be parsed as a shell command")
    _walk(tree.root_node, out, depth)


def _walk(node: Any, out: ParsedLine, depth: int) -> None:
    kind = node.type
    if kind == "command":
        _command(node, out, depth)
    elif kind in _PASS_THROUGH:
        for child in node.children:
            if child.type in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
                _redirect(child, out, depth)
            elif child.is_named and child.type not in ("comment",):
                _walk(child, out, depth)
            elif not child.is_named and child.type not in _PUNCTUATION:
                _blind(out, f"shell syntax the check does not know: {child.type!r}")
    elif kind in (
        "variable_assignment",
        "test_command",
        "word",
        "string",
        "raw_string",
        "number",
        "concatenation",
        "simple_expansion",
        "expansion",
        "variable_name",
        "extglob_pattern",
    ):  # (a case pattern runs nothing)
        _words_only(node, out, depth)
    elif kind in ("command_substitution", "process_substitution"):
        out.unsafe.append(f"{kind.replace('_', ' ')} runs a command inside an argument")
        _walk_children(node, out, depth)
    elif kind == "ERROR":
        _blind(out, "the line cannot be parsed as a shell command")
    else:
        _blind(out, f"shell syntax the check does not know: {kind}")
        _walk_children(node, out, depth)


def _walk_children(node: Any, out: ParsedLine, depth: int) -> None:
    for child in node.children:
        if child.is_named:
            _walk(child, out, depth)


def _words_only(node: Any, out: ParsedLine, depth: int) -> None:
    """A node that runs nothing itself; any substitution inside it does, and so may bash's
    evaluation of an expansion (:func:`_evaluates`)."""
    why = _evaluates(node)
    if why is not None:
        _blind(out, why)
    for child in node.children:
        if child.type in ("command_substitution", "process_substitution"):
            _walk(child, out, depth)
        elif child.child_count:
            _words_only(child, out, depth)


def _redirect(node: Any, out: ParsedLine, depth: int) -> None:
    if node.type != "file_redirect":
        _words_only(node, out, depth)  # a here-document or here-string feeds input
        return
    operator = next((c.type for c in node.children if not c.is_named), "")
    target = node.child_by_field_name("destination") or (node.children[-1] if node.children else None)
    text = _word(target, out, depth) if target is not None else None
    if operator in ("<", "<&", "<<<"):
        if operator == "<":
            out.reads.append(text if text is not None else "\0dynamic")
        return
    if operator in (">&", "<&") and text is not None and (text.isdigit() or text == "-"):
        return  # 2>&1: a descriptor, not a file
    if text == "/dev/null":
        return
    if text is not None:
        out.writes.append(text)
    out.unsafe.append(f"writes its output to {text or 'a file it names at run time'} ({operator})")


def _word(node: Any, out: ParsedLine, depth: int) -> str | None:
    """The literal text of a word node, or None when it is only known at run time."""
    kind = node.type
    text = node.text.decode("utf-8", errors="replace")
    if kind == "word" and expands(text):
        return None  # a glob or a brace expansion: the shell decides the words at run time
    if kind in ("word", "number"):
        return UNQUOTED_ESCAPE.sub(unescape, text) if "\\" in text else text
    if kind == "raw_string":
        return text[1:-1]
    if kind == "string":
        parts = []
        for child in node.children:
            if child.type == "string_content":
                content = child.text.decode("utf-8", errors="replace")
                parts.append(QUOTED_ESCAPE.sub(unescape, content) if "\\" in content else content)
            elif child.type == '"':
                continue
            else:
                _words_only(node, out, depth)
                return None
        return "".join(parts)
    if kind == "concatenation":
        if expands(
            "".join(c.text.decode("utf-8", errors="replace") if c.type == "word" else "\0" for c in node.children)
        ):
            _words_only(node, out, depth)
            return None
        pieces = [_word(child, out, depth) for child in node.children]
        return None if any(p is None for p in pieces) else "".join(pieces)  # type: ignore[arg-type]
    if kind in ("command_substitution", "process_substitution"):
        _walk(node, out, depth)
        return None
    _words_only(node, out, depth)
    return None


def _command(node: Any, out: ParsedLine, depth: int) -> None:
    argv: list[str | None] = []
    env: list[str] = []
    for child in node.children:
        kind = child.type
        if kind == "variable_assignment":
            name = child.child_by_field_name("name")
            env.append(name.text.decode("utf-8", errors="replace") if name is not None else "")
            _words_only(child, out, depth)
        elif kind in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
            _redirect(child, out, depth)
        elif kind == "command_name":
            name = child.children[0] if child.children else child
            argv.append(_word(name, out, depth))
        elif child.is_named:
            argv.append(_word(child, out, depth))
    if not argv:
        return
    if argv[0] is None:
        _blind(out, "the command's name is only known at run time")
        return
    _unwrapped([a if a is not None else "\0dynamic" for a in argv], out, depth, tuple(env))


def _unwrapped(
    argv: list[str], out: ParsedLine, depth: int, env: tuple[str, ...] = (), outer: tuple[str, ...] = ()
) -> None:
    """Record ``argv`` with its wrapper commands taken off (recursing into ``sh -c`` and runners)."""
    wrappers: list[str] = list(outer)
    _check_env(env, out)
    while argv:
        program = argv[0]
        argv = [posixpath.basename(program) if "/" in program else program, *argv[1:]]
        name = argv[0]
        record = _recorder(out, program, wrappers, env)
        if name.startswith("\0"):
            _blind(out, "the command's name is only known at run time")
            return
        why = _assigns_by_name(name, argv[1:])
        if why is not None:
            _blind(out, why)
        if name in _RUNS_ITS_ARGUMENT:
            _blind(out, f"{name} runs code the check cannot see")
            record(argv)
            return
        if name in _SHELLS:
            script = _shell_script(argv)
            if script is None:
                if "xargs" in wrappers or not any(not a.startswith("-") for a in argv[1:]):
                    _blind(out, f"{name} reads commands from its input")  # echo rm x | sh
                record(argv)  # a shell reading a script file: its own rule decides
                return
            out.wrappers.append(name)
            if script.startswith("\0"):
                _blind(out, "a shell runs a script only known at run time")
                return
            _walk_line(script, out, depth + 1)
            return
        inner = inner_commands(argv)
        if inner is not None:
            record(argv)  # a command of its own (a rule must allow it) that runs others, checked too
            for _kind, value in inner:
                if isinstance(value, str):
                    if "\0" in value:
                        _blind(out, f"{name} runs a command only known at run time")
                    else:
                        _walk_line(value, out, depth + 1)
                else:
                    _unwrapped(value, out, depth, env, (*wrappers, name))
            return
        if name in _PRIVILEGED:
            record(argv)  # a command of its own (a rule must allow it) that also runs another
        rest = _strip_wrapper(argv, out)
        if rest is None:
            if name not in _PRIVILEGED:
                record(argv)
            return
        if name == "env":
            added = tuple(a.split("=", 1)[0] for a in argv[1 : len(argv) - len(rest)] if "=" in a and a[0] != "-")
            _check_env(added, out)
            env = env + added
        out.wrappers.append(name)  # a deny rule may name the wrapper itself
        wrappers.append(name)
        argv = rest


_NAME_TAKERS = frozenset("read unset mapfile readarray getopts wait declare typeset local export readonly".split())
"""Bash builtins that take variable names, where an array element's subscript is evaluated as code."""


def _assigns_by_name(name: str, args: list[str]) -> str | None:
    """Why bash would evaluate one of a builtin's arguments as code (``let``, ``printf -v 'a[$(cmd)]'``,
    ``test -v "$name"``, ``read 'a[$(cmd)]'``), or None."""
    if name == "let" and args:
        return "let evaluates its arguments as arithmetic code"
    if name in ("printf", "test", "[") and "-v" in args:
        named = args[args.index("-v") + 1 : args.index("-v") + 2]
        return (
            f"{name} -v takes a variable name only known at run time"
            if not named or any("\0" in a or "[" in a for a in named)
            else None
        )
    if name in _NAME_TAKERS and any("\0" in a or "[" in a for a in args):
        return f"{name} takes a variable name whose subscript bash evaluates as code"
    return None


def _recorder(out: ParsedLine, program: str, wrappers: list[str], env: tuple[str, ...]) -> Any:
    def record(argv: list[str]) -> None:
        out.commands.append(argv)
        out.origins.append(Origin(program, tuple(wrappers), env))

    return record


_PRIVILEGED = frozenset({"sudo", "doas"})
"""Wrappers that change who runs a command: the wrapper needs a rule of its own."""
_CODE_VARIABLES = re.compile(
    r"^(LD_\w*|DYLD_\w*|BASH_ENV|ENV|PATH|IFS|PS4|SHELLOPTS|BASHOPTS|PROMPT_COMMAND|BASH_FUNC_\w*"
    r"|GIT_(?!AUTHOR_|COMMITTER_)\w*|HOME|XDG_\w*|ZDOTDIR|\w*PAGER|\w*ASKPASS|EDITOR|VISUAL|BROWSER|PYTHON\w*"
    r"|NODE_OPTIONS|NODE_PATH|PERL5\w*|PERLLIB|RUBY\w*|GCONV_PATH|LESSOPEN|LESSCLOSE|GEM_\w*|JAVA_TOOL_OPTIONS"
    r"|_JAVA_OPTIONS|RIPGREP_CONFIG_PATH)$"
)
"""Variables through which a command's environment makes it load or run other code."""


def _check_env(names: tuple[str, ...], out: ParsedLine) -> None:
    for name in names:
        if _CODE_VARIABLES.match(name):
            _blind(out, f"it sets {name}, which can make a program run other code")


def _shell_script(argv: list[str]) -> str | None:
    """The script of ``sh -c SCRIPT`` (``-lc``, ``-ec``... too), or None."""
    for i, arg in enumerate(argv[1:], 1):
        if arg.startswith("-") and not arg.startswith("--") and "c" in arg[1:]:
            return argv[i + 1] if i + 1 < len(argv) else ""
        if not arg.startswith("-"):
            return None
    return None


def _strip_wrapper(argv: list[str], out: ParsedLine) -> list[str] | None:
    """The command a wrapper runs (``env X=1 cmd`` -> ``cmd``), or None when ``argv`` is no wrapper."""
    name, args = argv[0], argv[1:]
    i = 0
    if name == "env":
        while i < len(args) and (args[i].startswith("-") or "=" in args[i]):
            if args[i].startswith(("-S", "--split-string")) or (
                args[i].startswith("-") and args[i][1:2] != "-" and "S" in args[i]
            ):
                _blind(out, "env -S splits a string into a command the check cannot see")
            i += 2 if args[i] in ("-u", "--unset", "-C", "--chdir", "-S", "--split-string") else 1
        return args[i:] or None
    if name in ("sudo", "doas"):
        takes_value = {
            "-u",
            "-g",
            "-C",
            "-D",
            "-h",
            "-p",
            "-r",
            "-t",
            "-U",
            "-T",
            "--user",
            "--group",
            "--chdir",
            "--host",
            "--prompt",
            "--role",
            "--type",
            "--other-user",
            "--command-timeout",
            "--close-from",
        }
        while i < len(args) and args[i].startswith("-"):
            i += 2 if args[i] in takes_value else 1
        while i < len(args) and "=" in args[i]:  # sudo VAR=value cmd
            i += 1
        return args[i:] or None
    if name == "command":
        leading = args[: next((k for k, a in enumerate(args) if not a.startswith("-")), len(args))]
        if any(a[1:2] != "-" and ("v" in a or "V" in a) for a in leading):
            return None  # command -v NAME looks a name up; it runs nothing
    if name in ("nice", "ionice"):
        while i < len(args) and args[i].startswith("-"):
            i += 2 if args[i] in ("-n", "-c", "-p") else 1
        return args[i:] or None
    if name == "timeout":
        while i < len(args) and args[i].startswith("-"):
            i += 2 if args[i] in ("-s", "--signal", "-k", "--kill-after") else 1
        return args[i + 1 :] or None  # the duration, then the command
    if name in ("nohup", "time", "command", "builtin", "stdbuf", "setsid", "chronic"):
        while i < len(args) and args[i].startswith("-"):
            i += 1
        return args[i:] or None
    if name == "xargs":
        takes_value = {
            "-a",
            "-d",
            "-E",
            "-e",
            "-I",
            "-i",
            "-L",
            "-l",
            "-n",
            "-P",
            "-s",
            "--arg-file",
            "--delimiter",
            "--max-args",
            "--max-procs",
            "--max-chars",
            "--replace",
        }
        while i < len(args) and args[i].startswith("-"):
            i += 2 if args[i] in takes_value else 1
        return args[i:] or ["echo"]
    return None
