"""Text checks: substrings, patterns and equality on the reply text."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, TypeAdapter

from proctor.checks._registry import CheckContext, CheckFunction, CheckType, Outcome, registry
from proctor.suite import AssertionSpec

__all__ = ["excerpt"]


def excerpt(text: str, limit: int = 80) -> str:
    """Quote `text` for a reason, shortened to `limit` characters."""
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[: limit - 1] + "…")


def _reply(context: CheckContext) -> str:
    if context.reply is None:
        raise ValueError("this check needs a turn's reply")
    return context.reply.text


def _fold(spec: AssertionSpec, default: bool) -> bool:
    flag = spec.options.case_insensitive
    return default if flag is None else flag


def _contains(spec: AssertionSpec, context: CheckContext, insensitive_default: bool) -> Outcome:
    text, needle = _reply(context), str(spec.value)
    folded = _fold(spec, insensitive_default)
    where = (text.lower().find(needle.lower())) if folded else text.find(needle)
    how = " (ignoring case)" if folded else ""
    if where >= 0:
        return Outcome(True, f"to contain {needle!r}{how}", f"found it at offset {where}")
    return Outcome(False, f"to contain {needle!r}{how}", f"it is not in the reply {excerpt(text)}")


def _check_contains(spec: AssertionSpec, context: CheckContext) -> Outcome:
    return _contains(spec, context, False)


def _check_icontains(spec: AssertionSpec, context: CheckContext) -> Outcome:
    return _contains(spec, context, True)


def _found(spec: AssertionSpec, context: CheckContext) -> tuple[str, list[str], list[str]]:
    text = _reply(context)
    needles: list[str] = spec.value
    if _fold(spec, False):
        lowered = text.lower()
        hits = [n for n in needles if n.lower() in lowered]
    else:
        hits = [n for n in needles if n in text]
    return text, hits, [n for n in needles if n not in hits]


def _check_contains_any(spec: AssertionSpec, context: CheckContext) -> Outcome:
    text, hits, _ = _found(spec, context)
    expectation = f"to contain any of {spec.value!r}"
    if hits:
        return Outcome(True, expectation, f"found {hits!r}")
    return Outcome(False, expectation, f"none is in the reply {excerpt(text)}")


def _check_contains_all(spec: AssertionSpec, context: CheckContext) -> Outcome:
    text, hits, missing = _found(spec, context)
    expectation = f"to contain all of {spec.value!r}"
    score = len(hits) / len(spec.value) if spec.value else 1.0
    if not missing:
        return Outcome(True, expectation, "found every one", score=score)
    return Outcome(
        False,
        expectation,
        f"missing {missing!r} in the reply {excerpt(text)}",
        score=score,
        details={"missing": missing},
    )


@lru_cache(maxsize=1024)
def _compile(pattern: str, flags: int) -> re.Pattern[str]:
    return re.compile(pattern, flags)


def _valid_pattern(pattern: str) -> str:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"invalid regular expression: {exc}") from None
    return pattern


def _check_regex(spec: AssertionSpec, context: CheckContext) -> Outcome:
    text = _reply(context)
    folded = _fold(spec, True)  # Lobu: regex is case-insensitive unless told otherwise
    match = _compile(spec.value, re.IGNORECASE if folded else 0).search(text)
    expectation = f"to match /{spec.value}/{'i' if folded else ''}"
    if match:
        return Outcome(True, expectation, f"matched {excerpt(match.group(0), 40)} at offset {match.start()}")
    return Outcome(False, expectation, f"no match in the reply {excerpt(text)}")


def _check_equals(spec: AssertionSpec, context: CheckContext) -> Outcome:
    text = _reply(context).strip()
    expected = str(spec.value).strip()
    folded = _fold(spec, False)
    ok = text.lower() == expected.lower() if folded else text == expected
    return Outcome(ok, f"to equal {excerpt(expected)}", f"the reply was {excerpt(text)}")


def _check_starts_with(spec: AssertionSpec, context: CheckContext) -> Outcome:
    text = _reply(context).lstrip()
    prefix = str(spec.value)
    folded = _fold(spec, False)
    ok = text.lower().startswith(prefix.lower()) if folded else text.startswith(prefix)
    return Outcome(ok, f"to start with {prefix!r}", f"it starts with {excerpt(text[: len(prefix) + 20])}")


def _split_commas(value: object) -> object:
    """Accept one comma-separated string for a list (as promptfoo does)."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


_TEXT = TypeAdapter(str)
_PATTERN = TypeAdapter(Annotated[str, AfterValidator(_valid_pattern)])
_TEXT_LIST = TypeAdapter(
    Annotated[list[str], BeforeValidator(_split_commas, json_schema_input_type=list[str] | str), Field(min_length=1)]
)

_BUILTINS: list[tuple[str, CheckFunction, str, TypeAdapter[Any]]] = [
    ("contains", _check_contains, "Reply contains a substring (`options.case_insensitive`).", _TEXT),
    ("icontains", _check_icontains, "Reply contains a substring, ignoring case.", _TEXT),
    ("equals", _check_equals, "Reply equals the value (surrounding whitespace ignored).", _TEXT),
    ("starts-with", _check_starts_with, "Reply starts with the value.", _TEXT),
    ("contains-any", _check_contains_any, "Reply contains at least one of a list of substrings.", _TEXT_LIST),
    (
        "contains-all",
        _check_contains_all,
        "Reply contains every one of a list of substrings (partial score: the fraction found).",
        _TEXT_LIST,
    ),
    (
        "regex",
        _check_regex,
        "Reply matches a regular expression (case-insensitive unless `options.case_insensitive: false`).",
        _PATTERN,
    ),
]
for _name, _fn, _description, _adapter in _BUILTINS:
    registry.register(CheckType(_name, "text", _description, _fn, value=_adapter))
