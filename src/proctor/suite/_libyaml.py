"""libyaml (PyYAML's C loader), for what the fast reader leaves to it: loaded on first use.

`proctor.suite._yaml` answers most suite files with yaml-rs alone; this module holds what needs PyYAML
(about a tenth of a `proctor run`'s start-up to import): the YAML 1.2 core-schema loader, the located
reader and the safety scan. `_yaml` re-exports `pyyaml_load`, `located_load` and `prescan`, importing
this module only when one of them runs.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from proctor.suite._yaml_common import (
    CORE_TAG,
    MAX_DEPTH,
    MAX_NODES,
    SAFE_TAGS,
    DuplicateKeyError,
    Loc,
    Positions,
    YamlProblem,
    parse_int,
    syntax_mark,
    syntax_message,
)

__all__ = ["located_load", "prescan", "pyyaml_load"]

_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_CORE = CORE_TAG
_STR = _CORE + "str"
_INT = re.compile(r"^[-+]?(?:[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+|0b[01]+)$")


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


_Core12Loader.add_constructor("tag:yaml.org,2002:int", _int)


def pyyaml_load(text: str) -> Any:
    """Parse YAML text with libyaml and the YAML 1.2 core schema (`_Core12Loader`): the reference reader.

    Raises:
        yaml.YAMLError: The text is not valid YAML.
        DuplicateKeyError: A mapping repeats a key.
    """
    return yaml.load(text, Loader=_Core12Loader)  # a SafeLoader subclass


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
