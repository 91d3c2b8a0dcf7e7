"""Prechecks: the Go Eval Agent's cheap heuristics on an answer, with its formulas.

* `length-checker`: ratio = UTF-8 bytes of the answer / UTF-8 bytes of the query; below 0.5 scores 0.0
  (too short), above 10 scores 0.5 (too long), else 1.0.
* `overlap-checker`: the share of the query's unique content words found in the answer, after
  lower-casing, stripping punctuation, dropping stop words and one-character tokens. A query with no
  content word cannot be measured: the check is `skipped` (the seed divided by zero).
* `format-checker`: an empty answer or one of fewer than 2 words scores 0.0; three or more of `!?.` in a
  row 0.5; else 1.0.

In a suite they check a turn's reply against the user message it answers and pass at
`options.threshold` (default 0.5). The online service runs them as its stage 1
(`proctor.service`), where the scores, not the pass/fail, feed the early exit and the confidence.

Text is handled as the Go code handles it (`eval-agent/internal/prechecks/`), so a score matches the Go
service's on any input: lengths are Go's `len` (UTF-8 bytes, so "é" counts 2); words are split and the
answer trimmed on Go's `unicode.IsSpace` (Python's `str.split` also splits on U+001C..U+001F, Go does
not); lower-casing is Go's `strings.ToLower`, a per-rune simple mapping (Python's `str.lower` turns
U+0130 "İ" into "i" + U+0307 and a word-final U+03A3 capital sigma into final sigma U+03C2; Go gives "i"
and U+03C3 small sigma). The one deliberate deviation:
a query with no content word skips the overlap check, where the Go code divided by zero.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from proctor.checks._registry import CheckContext, CheckType, registry
from proctor.checks._result import CheckResult, CheckStatus
from proctor.suite import AssertionSpec

__all__ = [
    "GO_SPACE",
    "PRECHECKS",
    "PrecheckScore",
    "format_score",
    "go_fields",
    "go_len",
    "go_lower",
    "go_trim_space",
    "length_score",
    "overlap_score",
]

DEFAULT_THRESHOLD = 0.5
"""In a suite, a precheck passes when its score reaches this (overridden by `options.threshold`)."""
MIN_RATIO = 0.5
"""Answers shorter than this share of the query's length score 0.0."""
MAX_RATIO = 10.0
"""Answers longer than this multiple of the query's length score 0.5."""

_STOP_WORDS = (
    "a an the is are was were be been being have has had do does did will would could should of at by for "
    "with about against between into through during before after to from in on"
)
STOP_WORDS = frozenset(_STOP_WORDS.split())
"""The Go Eval Agent's stop words, left out of the overlap."""

_PUNCTUATION = str.maketrans("", "", ".,!?;:()[]{}\"'")
_REPEATED = re.compile(r"[!?.]{3,}")

PrecheckScore = tuple[float | None, str]
"""A precheck's score (`None`: could not be measured) and the reason."""

GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"
"""Go's `unicode.IsSpace` set (Unicode White_Space): Python's `str.isspace` minus U+001C..U+001F."""
_GO_SPLIT = re.compile(f"[{re.escape(GO_SPACE)}]+")
_GO_LOWER_SPECIAL = str.maketrans({"\u0130": "i", "\u03a3": "\u03c3"})
"""The only runes whose Python `str.lower` differs from Go's simple mapping: U+0130 (full mapping
"i" + U+0307) and "Σ" (final sigma in context)."""


def go_len(text: str) -> int:
    """Go's `len` of a string: its UTF-8 bytes (a lone surrogate counts 3, as Go's U+FFFD would)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def go_fields(text: str) -> list[str]:
    """Go's `strings.Fields`: the runs of non-space runes, split on `unicode.IsSpace`."""
    return [word for word in _GO_SPLIT.split(text) if word]


def go_trim_space(text: str) -> str:
    """Go's `strings.TrimSpace`: leading and trailing `unicode.IsSpace` runes removed."""
    return text.strip(GO_SPACE)


def go_lower(text: str) -> str:
    """Go's `strings.ToLower`: each rune mapped by `unicode.ToLower` (no context, one rune for one)."""
    return text.lower() if text.isascii() else text.translate(_GO_LOWER_SPECIAL).lower()


def length_score(query: str, answer: str) -> PrecheckScore:
    """Score the answer's length relative to the query's.

    Args:
        query: The user's query (non-empty for a score).
        answer: The answer.

    Returns:
        0.0, 0.5 or 1.0 with the reason; `None` for an empty query.
    """
    if not query:
        return None, "the query is empty: no length ratio"
    answer_bytes, query_bytes = go_len(answer), go_len(query)
    ratio = answer_bytes / query_bytes
    sizes = f"{answer_bytes} bytes for a {query_bytes}-byte query, ratio {ratio:.2f}"
    if ratio < MIN_RATIO:
        return 0.0, f"answer too short: {sizes} (below {MIN_RATIO:g})"
    if ratio > MAX_RATIO:
        return 0.5, f"answer too long: {sizes} (above {MAX_RATIO:g})"
    return 1.0, f"answer length is acceptable: {sizes}"


def _content_words(text: str) -> set[str]:
    words = go_fields(go_lower(text).translate(_PUNCTUATION))
    return {word for word in words if go_len(word) > 1 and word not in STOP_WORDS}


def overlap_score(query: str, answer: str) -> PrecheckScore:
    """Score the share of the query's content words that the answer repeats.

    Args:
        query: The user's query.
        answer: The answer.

    Returns:
        0..1 with the reason; `None` when the query has no content word.
    """
    wanted = _content_words(query)
    if not wanted:
        return None, "the query has no content word (after stop words) to look for in the answer"
    found = wanted & _content_words(answer)
    score = len(found) / len(wanted)
    missing = sorted(wanted - found)
    reason = f"{len(found)} of {len(wanted)} query terms in the answer"
    if missing:
        shown = ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else "")
        reason += f"; missing: {shown}"
    return score, reason


def format_score(answer: str) -> PrecheckScore:
    """Score the answer's form: empty, too short, or runs of repeated punctuation.

    Args:
        answer: The answer.

    Returns:
        0.0, 0.5 or 1.0 with the reason.
    """
    text = go_trim_space(answer)
    if not text:
        return 0.0, "the answer is empty"
    words = len(go_fields(text))
    if words < 2:
        return 0.0, f"the answer has {words} word (fewer than 2)"
    run = _REPEATED.search(text)
    if run:
        return 0.5, f"the answer has repeated punctuation {run.group(0)!r}"
    return 1.0, f"well-formed answer of {words} words"


def _query(context: CheckContext) -> str:
    """The user message the checked reply answers."""
    for message in reversed(context.transcript[:-1] if context.reply is not None else context.transcript):
        if message.role == "user":
            return message.content
    return ""


def _precheck(score: Callable[[str, str], PrecheckScore]) -> Callable[[AssertionSpec, CheckContext], CheckResult]:
    def check(spec: AssertionSpec, context: CheckContext) -> CheckResult:
        if context.reply is None:
            raise ValueError(f"{spec.type} needs a turn's reply")
        value, reason = score(_query(context), context.reply.text)
        name, turn = spec.display_name(), context.turn
        if value is None:
            return CheckResult(name, spec.type, "skipped", None, spec.weight, reason, turn)
        threshold = spec.options.threshold
        threshold = DEFAULT_THRESHOLD if threshold is None else threshold
        status: CheckStatus = "passed" if value >= threshold else "failed"
        return CheckResult(name, spec.type, status, value, spec.weight, reason, turn)

    return check


PRECHECKS: dict[str, tuple[str, Callable[[str, str], PrecheckScore]]] = {
    "length-checker": (
        "Answer length relative to the query: 0 below half its length, 0.5 above ten times, else 1 (precheck).",
        length_score,
    ),
    "overlap-checker": (
        "Share of the query's content words the answer repeats, 0..1 (precheck).",
        overlap_score,
    ),
    "format-checker": (
        "Answer form: 0 if empty or under 2 words, 0.5 with '!!!'-style runs, else 1 (precheck).",
        lambda query, answer: format_score(answer),
    ),
}
"""The Go Eval Agent's stage-1 checks: name -> (description, scoring function of query and answer)."""

for _name, (_description, _score) in PRECHECKS.items():
    registry.register(CheckType(_name, "prechecks", _description, _precheck(_score), negatable=False))
