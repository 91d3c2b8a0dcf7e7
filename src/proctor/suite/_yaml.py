"""A fast YAML 1.2 reader for suite files that load cleanly.

Suite files are read twice only when something is wrong: first with libyaml (PyYAML's C loader, about
10x faster than a pure-Python round-trip parser) into plain values; if parsing or validation fails, the
loader re-reads the file with ruamel.yaml to locate every problem by line and column. For the two
readers to agree, this one resolves scalars by the YAML 1.2 core schema (as ruamel.yaml and Lobu's
JavaScript YAML do), not PyYAML's YAML 1.1 defaults: `yes`, `on` and `010` stay a string and a decimal.

Before either reader builds anything, `prescan` walks libyaml's event stream (iterative: no recursion,
nothing constructed) and turns what would crash or hang a reader into located problems: control
characters and malformed YAML, nesting deeper than `MAX_DEPTH`, aliases that expand to more than
`MAX_NODES` values (a "billion laughs" file is a few hundred bytes), tags outside the safe set (the
`!!python/...` family above all) and integers no reader can hold.

yaml-rs reads most clean files alone; PyYAML (`proctor.suite._libyaml`: the reference reader, the located
reader and the scan) loads only when a text needs it.
"""

from __future__ import annotations

import functools
import re
import sys
from typing import Any

import yaml_rs

from proctor.suite._yaml_common import (
    CORE_TAG,
    MAX_DEPTH,
    MAX_INT_DIGITS,
    MAX_NODES,
    SAFE_TAGS,
    DuplicateKeyError,
    Positions,
    YamlProblem,
    syntax_mark,
    syntax_message,
)

__all__ = [
    "CORE_TAG",
    "MAX_DEPTH",
    "MAX_NODES",
    "SAFE_TAGS",
    "DuplicateKeyError",
    "Positions",
    "YamlProblem",
    "fast_load",
    "located_load",
    "or_pyyaml_error",
    "prescan",
    "pyyaml_load",
    "rs_load",
    "syntax_mark",
    "syntax_message",
]


def fast_load(text: str) -> Any:
    """Parse YAML text into plain Python values: `rs_load` when it can, else `pyyaml_load` (same values).

    Raises:
        yaml.YAMLError: The text is not valid YAML.
        DuplicateKeyError: A mapping repeats a key.
    """
    value = rs_load(text)
    return pyyaml_load(text) if value is DEFER else value


def pyyaml_load(text: str) -> Any:
    """Parse YAML text with libyaml and the YAML 1.2 core schema: the reference reader (`_libyaml.pyyaml_load`).

    Raises:
        yaml.YAMLError: The text is not valid YAML.
        DuplicateKeyError: A mapping repeats a key.
    """
    from proctor.suite import _libyaml  # must stay fast: PyYAML loads for a text yaml-rs leaves to it

    return _libyaml.pyyaml_load(text)


def located_load(text: str, *, max_depth: int = MAX_DEPTH) -> tuple[Any, Positions, Positions] | None:
    """The document with where each value and key stands, or `None` (see `_libyaml.located_load`)."""
    from proctor.suite import _libyaml  # must stay fast: see `pyyaml_load`

    return _libyaml.located_load(text, max_depth=max_depth)


def prescan(text: str) -> list[YamlProblem]:
    """What in a YAML text would crash or hang a reader, located (see `_libyaml.prescan`)."""
    from proctor.suite import _libyaml  # must stay fast: see `pyyaml_load`

    return _libyaml.prescan(text)


def or_pyyaml_error(*others: type[BaseException]) -> tuple[type[BaseException], ...]:
    """`others` and, once PyYAML is loaded, `yaml.YAMLError` (nothing raises it before): for `except` clauses."""
    module = sys.modules.get("yaml")
    return others if module is None else (*others, module.YAMLError)


DEFER: Any = object()
"""What `rs_load` returns for a text it leaves to `pyyaml_load`."""


def rs_load(text: str) -> Any:
    """Parse YAML text with yaml-rs (Rust, about 8x faster than libyaml here), or `DEFER`.

    yaml-rs reads YAML 1.2 as `pyyaml_load` does, but not identically: it reads `1_000`, `0b1`, `-0x1`
    and `.NaN`-like spellings as numbers, accepts any tag, builds merge keys (`<<`) as plain keys,
    collection keys as tuples, several documents as a list, tabs and multi-line flow keys libyaml refuses,
    holds integers of any length and recurses without limit. So it reads only texts `_rs_safe` finds free
    of all that (a text with any of it, and any text yaml-rs refuses, is `DEFER`red), and duplicate keys
    are an error in both. `tests/suite/test_yaml_rs.py` proves the two agree on every file of the project
    and on a generated corpus.
    """
    if not _rs_safe(text):
        return DEFER
    try:
        return yaml_rs.loads(text, parse_datetime=False, duplicate_key_policy=yaml_rs.DuplicateKeyPolicy.Error)
    except (yaml_rs.YAMLDecodeError, ValueError, TypeError, OverflowError):
        return DEFER  # libyaml says why (or, where libyaml reads it, what it holds)


def _byte_classes() -> bytes:
    """A `bytes.translate` table: hex digits to `0`, space and `-` to `-`, tab and control bytes to NUL."""
    table = bytearray(b"." * 256)
    for byte in b"0123456789abcdefABCDEF":
        table[byte] = ord("0")
    table[ord(" ")] = table[ord("-")] = ord("-")
    table[ord("\n")] = ord("\n")
    for byte in (*range(0x09), 0x09, 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F):
        table[byte] = 0
    return bytes(table)


_CLASSES = _byte_classes()
_SPELLING_CLASSES = bytes(
    ord("Z")
    if byte == ord("0")
    else ord("P")
    if byte in b"xXoObB"
    else ord("Q")
    if byte in b"iInN"
    else byte
    if byte == ord(".")
    else ord(" ")
    for byte in range(256)
)
"""A `bytes.translate` table that finds `0x`-like prefixes (`ZP`) and `.inf`-like words (`.Q`) fast."""
_LONG_NUMBER = b"0" * (MAX_INT_DIGITS - 10)  # a run of hex digits that may be an integer PyYAML refuses
_DEEP = b"-" * 100  # a line indented (or `- - -` nested) this deep: yaml-rs recursion is unbounded


@functools.cache
def _non_ascii_unsafe() -> re.Pattern[str]:
    """Characters libyaml refuses or reads as YAML 1.1 line breaks (NEL, LS, PS), and the byte-order mark.

    Compiled on first use (by a text that is not ASCII): its ranges cost ~10 ms to compile.
    """
    return re.compile("[^\n\r\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]")


_INDICATOR = re.compile(r"[\s\[{,:][!&*?%]|[\[{,][ ]*[|>@`]|[\s\[{,:][|>](?![-+1-9]*[ \r]*(?:#[^\n]*)?$)", re.MULTILINE)
"""Where a node starts: a tag, anchor, alias, complex key or directive; a `|` or `>` that starts no block
scalar (in a flow, or followed by text); `@` or a backtick in a flow."""
_COLON = re.compile(r":(?:(?<=[\s\[{,:\]}]:)|(?<=[\"']:)(?![ \r\n]|$))")
"""An empty key, a key that is a flow collection, or a `"key":value` with no space: read differently."""
_UNDERSCORE = re.compile(r"_(?:(?<=[-+.0-9]_)|(?=[-+.0-9]))")
"""A `_` next to a digit: yaml-rs reads `1_000` and `_1` as numbers."""
_NUMBER_SPELLING = re.compile(r"0[xXoObB](?<![\w.]0[xXoObB])|\.(?!inf|Inf|INF|nan|NaN|NAN)[iInN][nNaA][fFnN]")
"""Prefixed integers (yaml-rs also reads `0b1`, `0X1`, `-0x1`) and `.inf`/`.nan` spellings PyYAML does not."""
_DOCUMENT = re.compile(r"^(?:---|\.\.\.)(?=\s|$)", re.MULTILINE)
_MARKER_LINE = re.compile(r"\n(?:---|\.\.\.)")
"""A line that starts with `---` or `...` (found from line break to line break: 2x sooner than two `in`)."""
_COMMENTS = re.compile(r"(?:[ \r]*(?:#[^\n]*)?\n)*")
_FIRST_TOKEN = re.compile(r"(?:[ \r]*(?:#[^\n]*)?\n)*[ ]*(\S)")
_BARE_MARKER = re.compile(r"---[ \r]*(?:#[^\n]*)?")
"""A `---` line with nothing after it: the one document marker both readers read alike (after comments)."""
_DOUBLE_QUOTED = re.compile(r"\"[^\"\\\n]*(?:\\.[^\"\\\n]*)*\"")
_SINGLE_QUOTED = re.compile(r"'[^'\n]*(?:''[^'\n]*)*'")
"""Quoted scalars that end on their line."""
_COMMENT = re.compile(r"#(?<=[ \n]#)[^\n]*")
_SEQUENCE = re.compile(r"\[[^\[\]{}\n]*\]")
_MAPPING = re.compile(r"\{[^\[\]{}\n]*\}")
"""Flow collections on one line with none inside them."""


def _rs_safe(text: str) -> bool:
    """Whether `rs_load` may read `text`: nothing in it that yaml-rs reads otherwise than libyaml.

    Conservative: a false alarm costs only speed (the text goes to libyaml).
    """
    if not text.isascii() and _non_ascii_unsafe().search(text):
        return False
    classes = text.encode("utf-8").translate(_CLASSES)
    if b"\x00" in classes or _LONG_NUMBER in classes or b"\n" + _DEEP in classes or classes.startswith(_DEEP):
        return False
    if text[:1] in ("!", "&", "*", "?", "%", ":") or ("<" in text and "<<" in text):  # one character: ~80x sooner
        return False
    if any(char in text for char in "!&*?%|>@`") and _INDICATOR.search(text):
        return False
    start = _FIRST_TOKEN.match(text)
    if start is not None and start.group(1) in ("|", ">"):
        return False  # a block scalar for the whole document: libyaml and yaml-rs indent it differently
    if _COLON.search(text) or ("_" in text and _UNDERSCORE.search(text)):
        return False
    spelling = text.encode("utf-8").translate(_SPELLING_CLASSES)
    if (b"ZP" in spelling or b".Q" in spelling) and _NUMBER_SPELLING.search(text):
        return False
    last = text[text.rfind("\n") + 1 :]
    if last and not last.strip(" \r"):
        return False  # a last line of spaces: block scalars keep them differently
    return _one_document(text) and not _open_flow(text)


def _open_flow(text: str) -> bool:
    """Whether a flow collection (`[...]`, `{...}`) may run over lines (where libyaml and yaml-rs part).

    With quoted scalars and comments set aside, collections closed on their line are removed from the
    inside out (4 levels); a bracket left over may be a collection left open (or a plain `[`: no matter).
    """
    if "[" not in text and "{" not in text:
        return False
    rest = _DOUBLE_QUOTED.sub("", text) if '"' in text else text
    rest = _SINGLE_QUOTED.sub("", rest) if "'" in rest else rest
    rest = _COMMENT.sub("", rest) if "#" in rest else rest
    if rest.startswith("#"):
        rest = rest[rest.find("\n") + 1 if "\n" in rest else len(rest) :]
    for _ in range(4):
        rest, sequences = _SEQUENCE.subn("", rest) if "[" in rest else (rest, 0)
        rest, mappings = _MAPPING.subn("", rest) if "{" in rest else (rest, 0)
        if not sequences + mappings:
            break
    return any(bracket in rest for bracket in "[]{}")


def _one_document(text: str) -> bool:
    """No document markers, or one bare `---` line before any content (several documents are a list in yaml-rs)."""
    if _MARKER_LINE.search(text) is None and not text.startswith(("---", "...")):
        return True
    markers = list(_DOCUMENT.finditer(text))
    if len(markers) != 1 or markers[0].group() != "---":
        return False
    start = markers[0].start()
    end = text.find("\n", start)
    line = text[start : len(text) if end < 0 else end]
    return _COMMENTS.fullmatch(text, 0, start) is not None and _BARE_MARKER.fullmatch(line) is not None


_TOP_KEY = re.compile(r"\n(?![\s#-])([^:#\n]+?)\s*:(?:[ \t]|$)", re.MULTILINE)
"""A key at the start of a line, found after its line break (the text gets one in front): a literal first
character lets the regex engine skip from line break to line break, ~6x sooner than `^` tried everywhere."""


def top_level_keys(text: str) -> set[str] | None:
    """The keys of a block-style YAML mapping's first level, read without parsing (`None`: cannot tell).

    For telling file kinds apart cheaply (a configuration file from a suite) before a full parse; a
    flow-style document (`{...}`) or one with several documents gives `None`.
    """
    body = text.lstrip()
    if body.startswith(("{", "[", "---", "%")):
        return None
    return {match.group(1).strip().strip("'\"") for match in _TOP_KEY.finditer("\n" + text)}
