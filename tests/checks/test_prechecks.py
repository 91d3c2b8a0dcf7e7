"""The prechecks: the Go Eval Agent's formulas, and their use as suite checks."""

from __future__ import annotations

import pytest

from proctor.checks import CheckContext, CheckResult, registry, run_check_now
from proctor.checks._prechecks import STOP_WORDS, format_score, length_score, overlap_score
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


def test_length_counts_characters_not_bytes() -> None:
    assert length_score("ab", "éé")[0] == 1.0  # 2 characters (4 bytes in UTF-8)
    assert length_score("", "anything") == (None, "the query is empty: no length ratio")


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
