"""A lenient JSON reader that repairs how a model quoted its answer, and never what it answered.

Models write almost-JSON: single quotes, unquoted keys, Python's `True`/`None`, trailing or missing
commas, comments, raw newlines or stray double quotes inside strings. Those are fixed here. What is never
fixed is a value: a number cut off (`0.`), an object or string that never closes (the answer was
truncated), a bare word where a value belongs. Each of those raises `LenientJSONError`, because a repair
that completes a number or closes an object would make up a verdict the model never gave (a judge cut off
at `"score": 0.` must be an error, not a score of 0.0).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["LenientJSONError", "loads_lenient"]

_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_NUMBERISH = re.compile(r"[-+.\w]+")
_WORD = re.compile(r"[A-Za-z_$][\w$-]*")
_LITERALS: dict[str, Any] = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}
_ESCAPES = {'"': '"', "'": "'", "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_CLOSERS = ",}]:"
_NEXT_KEY = re.compile(r"""\s*(?:"[^"\n]*"|'[^'\n]*')\s*:""")


class LenientJSONError(ValueError):
    """The text is not JSON even after fixing its quoting; `truncated` when it was cut off."""

    def __init__(self, message: str, *, truncated: bool = False) -> None:
        super().__init__(message)
        self.truncated = truncated


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0

    def cut_off(self, what: str) -> LenientJSONError:
        return LenientJSONError(f"the JSON is cut off ({what} never ends)", truncated=True)

    def skip(self) -> None:
        text = self.text
        while self.at < len(text):
            char = text[self.at]
            if char.isspace():
                self.at += 1
            elif text.startswith("//", self.at) or char == "#":
                end = text.find("\n", self.at)
                self.at = len(text) if end < 0 else end
            elif text.startswith("/*", self.at):
                end = text.find("*/", self.at + 2)
                self.at = len(text) if end < 0 else end + 2
            else:
                return

    def peek(self) -> str:
        self.skip()
        return self.text[self.at] if self.at < len(self.text) else ""

    def value(self, what: str) -> Any:
        char = self.peek()
        if not char:
            raise self.cut_off(what)
        if char == "{":
            return self.obj()
        if char == "[":
            return self.array()
        if char in "\"'":
            return self.string()
        word = _WORD.match(self.text, self.at)
        if word is not None and word.group(0) in _LITERALS:
            self.at = word.end()
            return _LITERALS[word.group(0)]
        return self.number()

    def number(self) -> Any:
        token = _NUMBERISH.match(self.text, self.at)
        found = _NUMBER.match(self.text, self.at)
        if token is None:
            raise LenientJSONError(f"unexpected {self.text[self.at]!r} where a value belongs, at offset {self.at}")
        if found is None or found.end() != token.end():
            if token.end() == len(self.text):
                raise self.cut_off(f"the number {token.group(0)!r}")
            raise LenientJSONError(f"{token.group(0)!r} at offset {self.at} is not a JSON value")
        self.at = found.end()
        text = found.group(0)
        return float(text) if any(c in text for c in ".eE") else int(text)

    def string(self) -> str:
        quote = self.text[self.at]
        self.at += 1
        out: list[str] = []
        text = self.text
        while self.at < len(text):
            char = text[self.at]
            self.at += 1
            if char == "\\":
                if self.at >= len(text):
                    break
                escaped = text[self.at]
                self.at += 1
                if escaped == "u" and self.at + 4 <= len(text):
                    out.append(chr(int(text[self.at : self.at + 4], 16)))
                    self.at += 4
                else:
                    out.append(_ESCAPES.get(escaped, escaped))
            elif char == quote and self._closes():
                return "".join(out)
            else:
                out.append(char)  # raw newlines, and a stray quote inside the text, are kept as text
        raise self.cut_off("a string")

    def _closes(self) -> bool:
        """Whether the quote just read ends the string.

        It does when what follows is the end, a separator, or the next key (a missing comma).
        """
        rest = self.text[self.at :].lstrip()
        return not rest or rest[0] in _CLOSERS or _NEXT_KEY.match(self.text, self.at) is not None

    def key(self) -> str:
        if self.peek() in ("'", '"'):
            return self.string()
        word = _WORD.match(self.text, self.at)
        if word is None:
            raise LenientJSONError(f"expected a key at offset {self.at}")
        self.at = word.end()
        return word.group(0)

    def obj(self) -> dict[str, Any]:
        self.at += 1
        out: dict[str, Any] = {}
        while True:
            char = self.peek()
            if not char:
                raise self.cut_off("an object")
            if char == "}":
                self.at += 1
                return out
            if char == ",":  # a trailing or doubled comma
                self.at += 1
                continue
            name = self.key()
            if self.peek() != ":":
                if not self.peek():
                    raise self.cut_off("an object")
                raise LenientJSONError(f"expected ':' after key {name!r} at offset {self.at}")
            self.at += 1
            out[name] = self.value(f"the value of {name!r}")

    def array(self) -> list[Any]:
        self.at += 1
        out: list[Any] = []
        after_item = False
        while True:
            char = self.peek()
            if not char:
                raise self.cut_off("an array")
            if char == "]":
                self.at += 1
                return out
            if char == ",":
                if not after_item:  # `[1,,2]` or `[,1]`: an item is missing, and is not made up or dropped
                    raise LenientJSONError(f"an array item is missing at offset {self.at}")
                self.at += 1
                after_item = False
                continue
            out.append(self.value("an array item"))
            after_item = True


def loads_lenient(text: str) -> Any:
    """Decode JSON written loosely, fixing quoting and punctuation but never a value.

    Args:
        text: One JSON value, possibly followed by other text (which is ignored).

    Returns:
        The decoded value.

    Raises:
        LenientJSONError: The value is cut off (`truncated`), or holds something that is not a JSON value.
    """
    return _Reader(text).value("the value")
