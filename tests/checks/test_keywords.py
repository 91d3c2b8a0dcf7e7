"""Keywords in normalised forms: IBM's dataset spells a date one way, the agent another."""

from __future__ import annotations

import anyio
import pytest

from helpers.trajectories import assertion, check, transcript
from proctor.checks._keywords import keyword_found, parse_date
from proctor.suite import JourneySpec


@pytest.mark.parametrize(
    ("keyword", "text", "found"),
    [
        ("20250105", "is on January 5, 2025.", True),
        ("2025-01-05", "nwaters: Jan 5th, 2025", True),
        ("2025-01-05", "on 5 January 2025", True),
        ("2025-01-05", "on 01/05/2025", True),
        ("20250105", "on January 6, 2025", False),
        ("1000", "costs 1,000 dollars", True),
        ("Time Off", "your time   off is", True),
        ("nwaters", "johndoe only", False),
    ],
)
def test_keywords_match_in_normalised_forms(keyword: str, text: str, found: bool) -> None:
    assert keyword_found(keyword, text) is found


def test_a_date_alone_parses_and_other_text_does_not() -> None:
    assert str(parse_date("January 5, 2025")) == str(parse_date("20250105")) == "2025-01-05"
    assert parse_date("nwaters") is None
    assert parse_date("20251301") is None  # no 13th month


def test_the_journey_check_finds_a_date_keyword_written_another_way() -> None:
    """The issue's case: keyword "20250105" in the dataset, "January 5, 2025" in the reply."""
    journey = JourneySpec(goal_details=[{"type": "text", "name": "summarize", "keywords": ["20250105"]}])
    result = anyio.run(check, assertion("journey", journey), transcript(("Your time off is on January 5, 2025.", [])))
    assert result.status == "passed"
    assert result.details["metrics"]["text_match"] is True
