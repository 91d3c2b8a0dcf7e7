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
"""

from __future__ import annotations

import re
from typing import Any

import yaml
import yaml_rs

__all__ = [
    "MAX_DEPTH",
    "MAX_NODES",
    "DuplicateKeyError",
    "YamlProblem",
    "fast_load",
    "located_load",
    "prescan",
    "pyyaml_load",
    "rs_load",
    "syntax_mark",
    "syntax_message",
]

_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

MAX_DEPTH = 100
"""Deepest nesting of sequences and mappings a suite file may have."""
MAX_NODES = 1_000_000
"""Most values a file may hold once every alias is expanded."""
MAX_INT_DIGITS = 1_000
"""Longest integer, in digits."""
_CORE = "tag:yaml.org,2002:"
SAFE_TAGS = frozenset({"!", *(_CORE + name for name in ("str", "int", "float", "bool", "null", "seq", "map", "merge"))})
"""The only explicit tags a suite file may carry: YAML's core schema."""
_STR = _CORE + "str"
_INT = re.compile(r"^[-+]?(?:[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+|0b[01]+)$")


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


class _Core12Loader(_BaseLoader):  # type: ignore[misc]
    """Safe loader with YAML 1.2 core-schema scalars and duplicate-key detection."""

    yaml_implicit_resolvers: dict[Any, Any] = {}

    def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == _CORE + "merge":
                continue  # `<<: *defaults`: merged by the base constructor; explicit keys win
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise DuplicateKeyError(f"duplicate key {key!r}")
            seen.add(key)
        return dict(super().construct_mapping(node, deep=deep))


_Core12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)
_Core12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:int",
    re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"),
    list("-+0123456789"),
)
_Core12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+0123456789."),
)
_Core12Loader.add_implicit_resolver("tag:yaml.org,2002:merge", re.compile(r"^(?:<<)$"), ["<"])
_Core12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", ""]
)


def _int(loader: Any, node: Any) -> int:
    return parse_int(loader.construct_scalar(node))


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


_Core12Loader.add_constructor("tag:yaml.org,2002:int", _int)


def fast_load(text: str) -> Any:
    """Parse YAML text into plain Python values: `rs_load` when it can, else `pyyaml_load` (same values).

    Raises:
        yaml.YAMLError: The text is not valid YAML.
        DuplicateKeyError: A mapping repeats a key.
    """
    value = rs_load(text)
    return pyyaml_load(text) if value is DEFER else value


def pyyaml_load(text: str) -> Any:
    """Parse YAML text with libyaml and the YAML 1.2 core schema (`_Core12Loader`): the reference reader.

    Raises:
        yaml.YAMLError: The text is not valid YAML.
        DuplicateKeyError: A mapping repeats a key.
    """
    return yaml.load(text, Loader=_Core12Loader)  # a SafeLoader subclass


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
_NON_ASCII_UNSAFE = re.compile(
    "[^\n\r\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]"
)
"""Characters libyaml refuses or reads as YAML 1.1 line breaks (NEL, LS, PS), and the byte-order mark."""
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
    if not text.isascii() and _NON_ASCII_UNSAFE.search(text):
        return False
    classes = text.encode("utf-8").translate(_CLASSES)
    if b"\x00" in classes or _LONG_NUMBER in classes or b"\n" + _DEEP in classes or classes.startswith(_DEEP):
        return False
    if text[:1] in ("!", "&", "*", "?", "%", ":") or "<<" in text:
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
    if "\n---" not in text and "\n..." not in text and not text.startswith(("---", "...")):
        return True
    markers = list(_DOCUMENT.finditer(text))
    if len(markers) != 1 or markers[0].group() != "---":
        return False
    start = markers[0].start()
    end = text.find("\n", start)
    line = text[start : len(text) if end < 0 else end]
    return _COMMENTS.fullmatch(text, 0, start) is not None and _BARE_MARKER.fullmatch(line) is not None


Loc = tuple[str | int, ...]
Positions = dict[Loc, tuple[int, int]]


class _Unlocated(Exception):
    """A construct `located_load` leaves to the round-trip reader (merge or collection keys, a repeated key)."""


def located_load(text: str, *, max_depth: int = MAX_DEPTH) -> tuple[Any, Positions, Positions] | None:
    """Parse YAML text into plain values with where each value and each key stands (1-based line, column).

    libyaml composes the nodes (with their marks) and `_Core12Loader` builds the scalars, so the values are
    those of `fast_load`; it is about 20x faster than ruamel.yaml's round trip, which the loader keeps for
    what this leaves to it (`None`): syntax errors (ruamel words them better), merge keys, keys that are
    collections, repeated keys. A value met again through an alias is built once and shared.
    Run it only on a text `prescan` passed, or one `fast_load` read that has no aliases; a document nested
    deeper than `max_depth` is `None` too (for `prescan` to report).

    Returns:
        The document, the positions of values and of keys by location (`("cases", 0, "name")`), or `None`.
    """
    if "<<" in text:
        return None
    loader = _Core12Loader(text)
    try:
        node = loader.get_single_node()
        positions: Positions = {}
        key_positions: Positions = {}
        data = None if node is None else _located(loader, node, (), positions, key_positions, {}, max_depth)
    except (yaml.YAMLError, _Unlocated, ValueError, TypeError, RecursionError):
        return None
    finally:
        loader.dispose()
    return data, positions, key_positions


def _at(node: Any) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def _located(
    loader: Any,
    node: Any,
    loc: Loc,
    positions: Positions,
    key_positions: Positions,
    seen: dict[int, Any],
    max_depth: int,
) -> Any:
    if id(node) in seen:
        return seen[id(node)]
    if len(loc) >= max_depth and isinstance(node, yaml.CollectionNode):
        raise _Unlocated
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _CORE + "merge":
                raise _Unlocated
            key = key_node.value if key_node.tag == _STR else loader.construct_object(key_node)
            key = key if isinstance(key, str | int | float | bool) else str(key)
            if key in out:
                raise _Unlocated
            child = (*loc, str(key))
            key_positions[child] = _at(key_node)
            positions[child] = _at(value_node)
            out[key] = _located(loader, value_node, child, positions, key_positions, seen, max_depth)
        seen[id(node)] = out
        return out
    if isinstance(node, yaml.SequenceNode):
        items: list[Any] = []
        for index, value_node in enumerate(node.value):
            child = (*loc, index)
            positions[child] = key_positions[child] = _at(value_node)
            items.append(_located(loader, value_node, child, positions, key_positions, seen, max_depth))
        seen[id(node)] = items
        return items
    return node.value if node.tag == _STR else loader.construct_object(node)


_TOP_KEY = re.compile(r"^(?![\s#-])([^:#\n]+?)\s*:(?:[ \t]|$)", re.MULTILINE)


def top_level_keys(text: str) -> set[str] | None:
    """The keys of a block-style YAML mapping's first level, read without parsing (`None`: cannot tell).

    For telling file kinds apart cheaply (a configuration file from a suite) before a full parse; a
    flow-style document (`{...}`) or one with several documents gives `None`.
    """
    body = text.lstrip()
    if body.startswith(("{", "[", "---", "%")):
        return None
    return {match.group(1).strip().strip("'\"") for match in _TOP_KEY.finditer(text)}


def prescan(text: str) -> list[YamlProblem]:
    """Check a YAML text for what would crash or hang a reader, without building it.

    Returns:
        The problems found (at most a few: the scan stops at the first one that makes the rest moot).
    """
    problems: list[YamlProblem] = []
    sizes: dict[str, int] = {}
    stack: list[tuple[int, str | None]] = []  # per open collection: values inside it so far, its anchor
    total = 0
    try:
        for event in yaml.parse(text, Loader=_BaseLoader):
            mark = event.start_mark
            tag = getattr(event, "tag", None)
            if tag is not None and tag not in SAFE_TAGS:
                problems.append(_problem(mark, f"tag {_short_tag(tag)} is not allowed{_TAG_HINT}"))
            count = 0
            if isinstance(event, yaml.CollectionStartEvent):
                if len(stack) >= MAX_DEPTH:
                    problems.append(_problem(mark, f"nested more than {MAX_DEPTH} levels deep"))
                    return problems
                stack.append((0, event.anchor))
                continue
            if isinstance(event, yaml.CollectionEndEvent):
                inside, anchor = stack.pop()
                count = inside + 1
                if anchor is not None:
                    sizes[anchor] = count
            elif isinstance(event, yaml.ScalarEvent):
                count = 1
                problem = _scalar_problem(event)
                if problem:
                    problems.append(_problem(mark, problem))
                if event.anchor is not None:
                    sizes[event.anchor] = 1
            elif isinstance(event, yaml.AliasEvent):
                if event.anchor not in sizes:  # undefined, or an anchor still open: a recursive alias
                    problems.append(_problem(mark, f"alias *{event.anchor} refers to no finished anchor"))
                    return problems
                count = sizes[event.anchor]
                total += count
            if stack and count:
                stack[-1] = (stack[-1][0] + count, stack[-1][1])
            total += 1 if not isinstance(event, yaml.AliasEvent) else 0
            if total > MAX_NODES:
                problems.append(_problem(mark, f"aliases expand this file to more than {MAX_NODES:,} values"))
                return problems
    except yaml.MarkedYAMLError as exc:
        mark = syntax_mark(exc)
        if "nesting depth" in str(exc.problem):  # libyaml's own limit, met while scanning ahead of ours
            problems.append(_problem(mark, f"nested more than {MAX_DEPTH} levels deep"))
        else:
            problems.append(_problem(mark, syntax_message(exc), syntax=True))
    except yaml.reader.ReaderError as exc:
        line, column = _position(text, exc.position)
        problems.append(YamlProblem(line, column, f"invalid YAML: {_reader_reason(exc)}"))
    except yaml.YAMLError as exc:
        problems.append(YamlProblem(None, None, f"invalid YAML: {exc}"))
    return problems


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


_TAG_HINT = "; a suite file is data: only the core tags !!str, !!int, !!float, !!bool, !!null, !!seq, !!map"


def _short_tag(tag: str) -> str:
    return "!!" + tag[len(_CORE) :] if tag.startswith(_CORE) else tag


def _scalar_problem(event: Any) -> str | None:
    value: str = event.value
    explicit_int = event.tag == _CORE + "int"
    plain = not event.style and event.tag is None
    if explicit_int or (plain and _INT.match(value) and "0b" not in value):
        try:
            parse_int(value)
        except ValueError as exc:
            return f"cannot read {value[:40]!r} as an integer: {exc}"
    return None


def _problem(mark: Any, message: str, *, syntax: bool = False) -> YamlProblem:
    if mark is None:
        return YamlProblem(None, None, message, syntax=syntax)
    return YamlProblem(mark.line + 1, mark.column + 1, message, syntax=syntax)


def _position(text: str, offset: int) -> tuple[int, int]:
    """Line and column of a libyaml offset (libyaml counts UTF-8 bytes; the pure reader characters)."""
    if _BaseLoader is yaml.SafeLoader:
        before = text[:offset]
    else:
        before = text.encode("utf-8")[:offset].decode("utf-8", "replace")
    return before.count("\n") + 1, len(before) - (before.rfind("\n") + 1) + 1


def _reader_reason(exc: Any) -> str:
    character = exc.character
    if isinstance(character, int):
        return f"control character #x{character:04x} is not allowed (escape it in a double-quoted string)"
    return f"{exc.reason}"
