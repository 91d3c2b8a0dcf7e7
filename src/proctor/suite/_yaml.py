"""A fast YAML 1.2 reader for suite files that load cleanly.

Suite files are read twice only when something is wrong: first with libyaml (PyYAML's C loader, about
10x faster than a pure-Python round-trip parser) into plain values; if parsing or validation fails, the
loader re-reads the file with ruamel.yaml to locate every problem by line and column. For the two
readers to agree, this one resolves scalars by the YAML 1.2 core schema (as ruamel.yaml and Lobu's
JavaScript YAML do), not PyYAML's YAML 1.1 defaults: `yes`, `on` and `010` stay a string and a decimal.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

__all__ = ["DuplicateKeyError", "fast_load"]

_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class DuplicateKeyError(ValueError):
    """A mapping repeats a key (YAML forbids it; PyYAML would silently keep the last)."""


class _Core12Loader(_BaseLoader):  # type: ignore[misc]
    """Safe loader with YAML 1.2 core-schema scalars and duplicate-key detection."""

    yaml_implicit_resolvers: dict[Any, Any] = {}

    def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
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
_Core12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", ""]
)


def _int(loader: Any, node: Any) -> int:
    text = loader.construct_scalar(node)
    if text.startswith("0o"):
        return int(text[2:], 8)
    if text.startswith("0x"):
        return int(text[2:], 16)
    return int(text)


_Core12Loader.add_constructor("tag:yaml.org,2002:int", _int)


def fast_load(text: str) -> Any:
    """Parse YAML text into plain Python values.

    Raises:
        yaml.YAMLError: The text is not valid YAML.
        DuplicateKeyError: A mapping repeats a key.
    """
    return yaml.load(text, Loader=_Core12Loader)  # a SafeLoader subclass


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
