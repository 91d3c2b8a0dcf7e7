"""Every enumeration of the case statuses names the same ones: `incomplete` too (a case the run stopped
before all its planned trials ran), not only the trial statuses."""

from __future__ import annotations

from typing import get_args

from proctor import scoring
from proctor.results._aggregate import CASE_STATUSES
from proctor.results._comparison import _NO_OUTCOME_WORDS, OUTCOMES, CaseChange
from proctor.results._format import CaseStatus


def test_the_case_status_types_name_every_case_status() -> None:
    assert get_args(scoring.CaseStatus) == CASE_STATUSES == get_args(CaseStatus)
    assert "incomplete" in get_args(scoring.CaseStatus)


def test_the_comparison_has_a_change_for_every_case_status_without_an_outcome() -> None:
    """A case of B with no outcome is labelled by its status (else it would fall back to `errored`)."""
    assert set(OUTCOMES) | set(_NO_OUTCOME_WORDS) == set(CASE_STATUSES)
    assert set(_NO_OUTCOME_WORDS.values()) <= set(get_args(CaseChange))
    assert _NO_OUTCOME_WORDS["incomplete"] == "incomplete"
