r"""Translate the Kotlin idioms of Embabel's object-context assertions into Python expression syntax.

Embabel evaluates assertions as Kotlin scripts; Proctor evaluates Python expressions in a sandbox. The
idioms its examples use translate token by token, so both of these work as written:

| Kotlin | Python it becomes |
|---|---|
| `xs.any { it.type == "R" }` | `any([(it.type == "R") for it in (xs)])` |
| `xs.all { ... }`, `xs.none { ... }` | `all([...])`, `(not any([...]))` |
| `xs.count { ... }` | `len([it for it in (xs) if (...)])` |
| `xs.filter { ... }`, `xs.filterNot { ... }` | `[it for it in (xs) if (...)]`, `... if not (...)` |
| `xs.map { ... }`, `xs.sumOf { ... }` | `[(...) for it in (xs)]`, `sum([...])` |
| `xs.first { ... }`, `firstOrNull`, `find` | the first match, or `None` |
| `{ r -> r.type == "R" }` | the lambda's parameter is named `r` instead of `it` |
| `&&`, `\|\|`, `!x`, `null`, `true`, `false` | `and`, `or`, `not x`, `None`, `True`, `False` |

`xs.size`, `s.length`, `xs.isEmpty()`, `xs.first()` and the like are resolved when the expression runs
(see `proctor.checks._expression`). Python expressions pass through unchanged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["LAMBDA_OPERATIONS", "KotlinSyntaxError", "Translation", "translate"]

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
   |(?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
   |(?P<num>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)(?P<suffix>[LlFf](?![\w]))?
   |(?P<name>[A-Za-z_]\w*)
   |(?P<op>->|&&|\|\||==|!=|<=|>=|\?\.|\?:|\*\*|//|[-+*/%<>()\[\]{},.:;=?!@~^&|])
    """,
    re.VERBOSE,
)
_KEYWORDS = frozenset({"and", "or", "not", "in", "is", "if", "else", "for", "lambda", "None", "True", "False"})
_CONSTANTS = {"null": "None", "true": "True", "false": "False"}
_OPENERS = {")": "(", "]": "[", "}": "{"}

LAMBDA_OPERATIONS = (
    "any",
    "all",
    "none",
    "count",
    "filter",
    "filterNot",
    "map",
    "sumOf",
    "first",
    "firstOrNull",
    "find",
    "maxOf",
    "minOf",
)
"""Kotlin collection functions that take a trailing lambda `{ ... }`."""


class KotlinSyntaxError(ValueError):
    """The expression cannot be translated; `position` is a 0-based offset into it."""

    def __init__(self, reason: str, position: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.position = position


@dataclass(slots=True)
class _Item:
    kind: str  # ws, str, num, name, op, open, close, chunk
    parts: list[tuple[str, int]]  # text pieces with the offset in the source they came from

    @property
    def text(self) -> str:
        return "".join(text for text, _ in self.parts)


@dataclass(slots=True)
class Translation:
    """A translated expression and how to map its offsets back to the source."""

    source: str
    """The expression as written."""
    python: str
    """The Python expression."""
    anchors: list[tuple[int, int]] = field(default_factory=list)
    """`(offset in python, offset in source)` pairs, in order."""

    def source_offset(self, python_offset: int) -> int:
        """The source offset that produced the text at `python_offset` (0-based)."""
        found = 0
        for translated, original in self.anchors:
            if translated > python_offset:
                break
            found = original
        return found


def _tokens(source: str) -> list[_Item]:
    items: list[_Item] = []
    index = 0
    while index < len(source):
        match = _TOKEN.match(source, index)
        if match is None:
            char = source[index]
            reason = "unterminated string" if char in "\"'" else f"unexpected character {char!r}"
            raise KotlinSyntaxError(reason, index)
        kind = match.lastgroup or "op"
        text = match.group(kind if kind != "suffix" else "num")
        if kind == "suffix":  # 1L, 2.5f: Kotlin's number suffixes
            kind = "num"
        if kind == "op" and text in "([{":
            kind = "open"
        elif kind == "op" and text in ")]}":
            kind = "close"
        items.append(_Item(kind, [(text, index)]))
        index = match.end()
    return items


def translate(source: str) -> Translation:
    """Translate Kotlin collection idioms and operators in `source` into Python syntax.

    Raises:
        KotlinSyntaxError: An idiom is malformed or not supported (with the offset where).
    """
    items = _translate(_tokens(source))
    translation = Translation(source, "")
    pieces: list[str] = []
    length = 0
    for item in items:
        for text, origin in item.parts:
            translation.anchors.append((length, origin))
            pieces.append(text)
            length += len(text)
    translation.python = "".join(pieces)
    return translation


def _previous(out: list[_Item], index: int) -> int | None:
    index -= 1
    while index >= 0 and out[index].kind == "ws":
        index -= 1
    return index if index >= 0 else None


def _matching_open(out: list[_Item], index: int) -> int:
    closer = out[index].text
    depth = 0
    while index >= 0:
        text = out[index].text
        if out[index].kind == "close" and text == closer:
            depth += 1
        elif out[index].kind == "open" and text == _OPENERS[closer]:
            depth -= 1
            if depth == 0:
                return index
        index -= 1
    raise KotlinSyntaxError(f"unbalanced {closer!r}", out[0].parts[0][1] if out else 0)


def _receiver_start(out: list[_Item], at: int) -> int:
    """Where the postfix expression ending at `out[-1]` begins (`xs`, `a.b[0]`, `f(x).y`, `(...)`)."""
    index = _previous(out, len(out))
    if index is None:
        raise KotlinSyntaxError("a collection is needed before this function", at)
    while True:
        item = out[index]
        if item.kind == "close":
            index = _matching_open(out, index)
            before = _previous(out, index)
            if (
                before is not None
                and out[before].kind in ("name", "close", "str", "chunk")
                and out[before].text not in _KEYWORDS
            ):
                index = before  # a call or a subscript: its callee is part of the receiver
                continue
            return index
        if item.kind in ("name", "str", "num", "chunk") and item.text not in _KEYWORDS:
            before = _previous(out, index)
            if before is not None and out[before].text == ".":
                target = _previous(out, before)
                if target is None:
                    raise KotlinSyntaxError("'.' with nothing before it", out[before].parts[0][1])
                index = target
                continue
            return index
        raise KotlinSyntaxError("a collection is needed before this function", at)


def _lambda(tokens: list[_Item], start: int) -> tuple[list[str], list[_Item], int]:
    """Parse `{ [params ->] body }` from `tokens[start]` (the `{`); return params, body and the index after."""
    depth, index = 0, start
    while index < len(tokens):
        item = tokens[index]
        if item.kind == "open" and item.text == "{":
            depth += 1
        elif item.kind == "close" and item.text == "}":
            depth -= 1
            if depth == 0:
                break
        index += 1
    else:
        raise KotlinSyntaxError("'{' is never closed", tokens[start].parts[0][1])
    body = tokens[start + 1 : index]
    arrow = next((i for i, item in enumerate(body) if item.text == "->"), None)
    params = ["it"]
    if arrow is not None:
        names = [item for item in body[:arrow] if item.kind != "ws" and item.text != ","]
        if not names or any(item.kind != "name" for item in names):
            where = (names or body)[0].parts[0][1]
            raise KotlinSyntaxError("lambda parameters must be names, e.g. { r -> r.done }", where)
        params = [item.text for item in names]
        body = body[arrow + 1 :]
    if not any(item.kind != "ws" for item in body):
        raise KotlinSyntaxError("the lambda has no body", tokens[start].parts[0][1])
    return params, body, index + 1


def _translate(tokens: list[_Item]) -> list[_Item]:
    out: list[_Item] = []
    index = 0
    while index < len(tokens):
        item = tokens[index]
        at = item.parts[0][1]
        text = item.text
        if item.kind == "open" and text == "{":
            operation = _previous(out, len(out))
            dot = _previous(out, operation) if operation is not None else None
            if operation is None or dot is None or out[dot].text != "." or out[operation].kind != "name":
                out.append(item)  # a Python dict or set literal
                index += 1
                continue
            name = out[operation].text
            where = out[operation].parts[0][1]
            if name not in LAMBDA_OPERATIONS:
                supported = ", ".join(LAMBDA_OPERATIONS)
                raise KotlinSyntaxError(f"unsupported collection function {name!r}; supported: {supported}", where)
            del out[dot:]
            begin = _receiver_start(out, where)
            receiver = out[begin:]
            del out[begin:]
            params, body, index = _lambda(tokens, index)
            out.append(_chunk(name, params, receiver, _translate(body), where))
            continue
        if item.kind == "name" and text in _CONSTANTS:
            before = _previous(out, len(out))
            if before is None or out[before].text != ".":
                item = _Item("name", [(_CONSTANTS[text], at)])
        elif item.kind == "op" and text in ("&&", "||"):
            item = _Item("name", [(" and " if text == "&&" else " or ", at)])
        elif item.kind == "op" and text == "!":
            item = _Item("name", [(" not ", at)])
        elif item.kind == "op" and text in ("?.", "?:"):
            what = "safe calls (?.) are" if text == "?." else "the elvis operator (?:) is"
            raise KotlinSyntaxError(f"{what} not supported; test for null explicitly (x != null && ...)", at)
        elif item.kind == "op" and text == "->":
            raise KotlinSyntaxError("'->' outside a lambda", at)
        out.append(item)
        index += 1
    return out


def _chunk(name: str, params: list[str], receiver: list[_Item], body: list[_Item], at: int) -> _Item:
    target = params[0] if len(params) == 1 else "(" + ", ".join(params) + ")"
    body_parts = [part for item in body for part in item.parts]
    receiver_parts = [part for item in receiver for part in item.parts]

    def seq(*pieces: str | list[tuple[str, int]]) -> list[tuple[str, int]]:
        out: list[tuple[str, int]] = []
        for piece in pieces:
            out.extend([(piece, at)] if isinstance(piece, str) else piece)
        return out

    loop = seq(f" for {target} in (", receiver_parts, ")")
    mapped = seq("[(", body_parts, ")", loop, "]")
    matching = seq(f"[{target}", loop, " if (", body_parts, ")]")
    parts = {
        "any": seq("any(", mapped, ")"),
        "all": seq("all(", mapped, ")"),
        "none": seq("(not any(", mapped, "))"),
        "count": seq("len(", matching, ")"),
        "filter": matching,
        "filterNot": seq(f"[{target}", loop, " if not (", body_parts, ")]"),
        "map": mapped,
        "sumOf": seq("sum(", mapped, ")"),
        "first": seq("(", matching, " or [None])[0]"),
        "firstOrNull": seq("(", matching, " or [None])[0]"),
        "find": seq("(", matching, " or [None])[0]"),
        "maxOf": seq("max(", mapped, ")"),
        "minOf": seq("min(", mapped, ")"),
    }[name]
    return _Item("chunk", parts)
