"""What both YAML readers share: limits, the problems they report, integers, syntax errors' words.

`proctor.suite._yaml` (yaml-rs, and the entry points) and `proctor.suite._libyaml` (PyYAML, loaded on first
use) both import it; `_yaml` re-exports its names.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "CORE_TAG",
    "MAX_DEPTH",
    "MAX_INT_DIGITS",
    "MAX_NODES",
    "SAFE_TAGS",
    "DuplicateKeyError",
    "Loc",
    "Positions",
    "YamlProblem",
    "parse_int",
    "syntax_mark",
    "syntax_message",
]

MAX_DEPTH = 100
"""Deepest nesting of sequences and mappings a suite file may have."""
MAX_NODES = 1_000_000
"""Most values a file may hold once every alias is expanded."""
MAX_INT_DIGITS = 1_000
"""Longest integer, in digits."""
CORE_TAG = "tag:yaml.org,2002:"
"""The prefix of YAML's core-schema tags (`!!str` is `tag:yaml.org,2002:str`)."""
SAFE_TAGS = frozenset(
    {"!", *(CORE_TAG + name for name in ("str", "int", "float", "bool", "null", "seq", "map", "merge"))}
)
"""The only explicit tags a suite file may carry: YAML's core schema."""

Loc = tuple[str | int, ...]
Positions = dict[Loc, tuple[int, int]]


class YamlProblem(ValueError):
    """What makes a YAML text unreadable, and where (1-based line and column, when known)."""

    def __init__(self, line: int | None, column: int | None, message: str, *, syntax: bool = False) -> None:
        super().__init__(message)
        self.line = line
        self.column = column
        self.message = message
        self.syntax = syntax
        """A syntax error: the text is not YAML at all (the round-trip reader words these better)."""


class DuplicateKeyError(ValueError):
    """A mapping repeats a key (YAML forbids it; PyYAML would silently keep the last)."""


def parse_int(text: str) -> int:
    """Read a YAML integer: decimal, `0o` octal, `0x` hex or (with an explicit `!!int`) `0b` binary.

    Raises:
        ValueError: It is none of these, or longer than `MAX_INT_DIGITS`.
    """
    if len(text) > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(text):,} characters (at most {MAX_INT_DIGITS:,})")
    sign = -1 if text.startswith("-") else 1
    digits = text.lstrip("+-")
    for prefix, base in (("0o", 8), ("0x", 16), ("0b", 2)):
        if digits.startswith(prefix):
            return sign * int(digits[2:], base)
    return sign * int(digits)


def syntax_mark(exc: Any) -> Any:
    """Where a YAML syntax error starts (PyYAML's or ruamel.yaml's marked error; `None` when unknown).

    A reader that runs off the end of the text (an unclosed quote, bracket or brace), or meets the next
    lines still inside a bracket opened lines earlier, reports where it noticed; the construct it was
    reading (its `context_mark`) is where the user's mistake is. Any other error is where it stopped.
    """
    return (
        exc.context_mark
        if _left_open(exc)
        else getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    )


def _left_open(exc: Any) -> bool:
    """Whether the error is a construct left open: the text ended, or a flow collection ran on past its line."""
    problem = str(getattr(exc, "problem", "") or "")
    context = str(getattr(exc, "context", "") or "")
    start, stop = getattr(exc, "context_mark", None), getattr(exc, "problem_mark", None)
    if start is None:
        return False
    if "end of stream" in problem or "<stream end>" in problem:
        return True
    return context.startswith("while parsing a flow") and stop is not None and stop.line > start.line


def syntax_message(exc: Any) -> str:
    """The words for a YAML syntax error, naming the construct left open when it was."""
    problem = str(getattr(exc, "problem", "") or "")
    context = str(getattr(exc, "context", "") or "")
    if not _left_open(exc):
        return f"invalid YAML: {problem or context}"
    what = context.removeprefix("while scanning ").removeprefix("while parsing ")
    if "end of stream" in problem or "<stream end>" in problem:
        return f"invalid YAML: {what} starts here and is not closed before the end of the file ({problem})"
    stop = exc.problem_mark
    return f"invalid YAML: {what} starts here and is not closed ({problem}, line {stop.line + 1})"
