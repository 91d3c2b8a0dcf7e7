"""The prechecks: the Go Eval Agent's formulas, and their use as suite checks."""

from __future__ import annotations

import pytest

from proctor.checks import CheckContext, CheckResult, registry, run_check_now
from proctor.checks._prechecks import (
    GO_SPACE,
    STOP_WORDS,
    format_score,
    go_fields,
    go_len,
    go_lower,
    go_trim_space,
    length_score,
    overlap_score,
)
from proctor.suite import AssertionSpec
from proctor.transcript import AgentReply, Message

QUERY = "What is the capital of France?"


@pytest.mark.parametrize(
    ("answer", "score", "reason"),
    [
        ("The capital of France is Paris.", 1.0, "answer length is acceptable"),
        ("Paris", 0.0, "answer too short"),  # 5 / 30 < 0.5
        ("P" * 15, 1.0, "acceptable"),  # ratio exactly 0.5 is not too short
        ("P" * 300, 1.0, "acceptable"),  # ratio exactly 10 is not too long
        ("P" * 301, 0.5, "answer too long"),
    ],
)
def test_length_ratio_bands(answer: str, score: float, reason: str) -> None:
    value, text = length_score(QUERY, answer)
    assert value == score and reason in text


# Expected values below are worked out by hand from the Go seed's prechecks
# (vpovarna/generative-ai-agents, eval-agent/internal/prechecks/*.go): `len` is bytes, `strings.Fields`
# and `strings.TrimSpace` split on `unicode.IsSpace`, tokens are `strings.ToLower`ed.


def test_length_counts_utf8_bytes_as_go_len_does() -> None:
    # Go: len("é") = 2, len("abc") = 3, ratio 0.67 -> 1.0 (characters would give 1/3 -> 0.0)
    assert length_score("abc", "é") == (1.0, "answer length is acceptable: 2 bytes for a 3-byte query, ratio 0.67")
    # Go: len("ok") = 2, len("日本") = 6, ratio 0.33 -> 0.0 (characters would give 2/2 -> 1.0)
    assert length_score("日本", "ok")[0] == 0.0
    assert go_len("日本") == 6 and go_len("\U0001f600") == 4 and go_len("\ud800") == 3
    assert length_score("", "anything") == (None, "the query is empty: no length ratio")


@pytest.mark.parametrize(
    ("answer", "score", "reason"),
    [
        ("ok\x1cthen", 0.0, "the answer has 1 word (fewer than 2)"),  # U+001C is no space to Go
        ("ok\x1fthen", 0.0, "the answer has 1 word (fewer than 2)"),
        ("\x1d", 0.0, "the answer has 1 word (fewer than 2)"),  # TrimSpace keeps it: not empty
        ("ok\u3000then", 1.0, "well-formed answer of 2 words"),  # U+3000 is White_Space
        ("ok\xa0then\x85", 1.0, "well-formed answer of 2 words"),
    ],
)
def test_format_splits_and_trims_on_go_unicode_isspace(answer: str, score: float, reason: str) -> None:
    assert format_score(answer) == (score, reason)


@pytest.mark.parametrize(
    ("query", "answer", "score"),
    [
        ("İstanbul weather", "istanbul weather", 1.0),  # Go: ToLower("İ") = "i" (Python: "i" + U+0307)
        ("ΟΔΟΣ map", "οδοσ map", 1.0),  # Go: capital sigma -> small sigma anywhere (Python: final sigma)
        ("ΟΔΟΣ map", "οδος map", 0.5),
        ("alpha\x1cbeta", "alpha beta", 0.0),  # one Go field "alpha\x1cbeta", not two
        ("é capital", "é", 0.5),  # len("é") = 2 bytes > 1: a token to Go
        ("Ärger Straße", "ärger STRASSE straße", 1.0),
    ],
)
def test_overlap_tokenises_as_go(query: str, answer: str, score: float) -> None:
    assert overlap_score(query, answer)[0] == pytest.approx(score)


def test_go_helpers() -> None:
    # U+0130 -> "i"; capital sigma U+03A3 -> small sigma U+03C3 everywhere (never final sigma U+03C2)
    assert go_lower("\u0130\u03a3\u0391\u03a3") == "i\u03c3\u03b1\u03c3" and go_lower("ABC") == "abc"
    assert go_fields(" a\x1cb\u2028c\td ") == ["a\x1cb", "c", "d"]
    assert go_trim_space("\x1c a \u3000") == "\x1c a"
    every = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    assert len(go_lower(every)) == len(every)  # one rune for one, as unicode.ToLower maps
    assert all(not chr(c).isspace() or chr(c) in GO_SPACE for c in range(0x110000) if not 0x1C <= c <= 0x1F)


def test_overlap_is_the_share_of_unique_query_content_words() -> None:
    # query content words: what, capital, france (is, the, of are stop words)
    value, reason = overlap_score(QUERY, "The capital of France is Paris.")
    assert value == pytest.approx(2 / 3)
    assert reason == "2 of 3 query terms in the answer; missing: what"
    assert overlap_score("Capital? capital!", "CAPITAL.")[0] == 1.0  # lower-cased, punctuation stripped
    assert overlap_score("x y France", "France")[0] == 1.0  # one-character tokens dropped


def test_overlap_without_content_words_is_not_measurable() -> None:
    assert {"is", "the", "a", "of", "to"} <= STOP_WORDS
    assert overlap_score("Is it a?", "Yes it is.")[0] == 1.0  # "it" is not a stop word in the seed's list
    value, reason = overlap_score("Is the a?", "Yes.")
    assert value is None and "no content word" in reason


@pytest.mark.parametrize(
    ("answer", "score"),
    [("", 0.0), ("   ", 0.0), ("ok", 0.0), ("ok then", 1.0), ("Really?!?", 0.0), ("Sure... fine", 0.5)],
)
def test_format_bands(answer: str, score: float) -> None:
    assert format_score(answer)[0] == score


def check(kind: str, reply: str, query: str = QUERY, **options: float) -> CheckResult:
    spec = AssertionSpec.model_validate({"type": kind, "options": options}, context={"checks": registry})
    transcript = [Message("user", query), Message("assistant", reply)]
    result = run_check_now(spec, CheckContext(AgentReply(reply), 0, transcript, "case"))
    assert isinstance(result, CheckResult)
    return result


def test_prechecks_are_registered_suite_checks_with_a_threshold() -> None:
    assert {"length-checker", "overlap-checker", "format-checker"} <= set(registry.names())
    assert "not-length-checker" not in registry.names()
    good = check("overlap-checker", "The capital of France is Paris.")
    assert (good.status, good.score, good.type) == ("passed", pytest.approx(2 / 3), "overlap-checker")
    strict = check("overlap-checker", "The capital of France is Paris.", threshold=0.9)
    assert strict.status == "failed"
    assert check("length-checker", "Paris").status == "failed"
    assert check("format-checker", "Sure... fine").status == "passed"  # 0.5 reaches the default 0.5
    skipped = check("overlap-checker", "Yes.", query="Is the a?")
    assert (skipped.status, skipped.score) == ("skipped", None)


def test_prechecks_take_no_value() -> None:
    with pytest.raises(ValueError, match="takes no value"):
        registry.check_value("length-checker", 3)
