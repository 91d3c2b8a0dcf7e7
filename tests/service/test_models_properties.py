"""Property-based tests of the service's request models and prechecks: any body is a result or a 422."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from proctor.service import EvaluationRequest, EvaluationResult, Pipeline

JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=40)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)),
    max_leaves=25,
)
TEXT = st.text(max_size=200)
EVENTS = st.fixed_dictionaries(
    {
        "event_id": TEXT,
        "interaction": st.fixed_dictionaries({"user_query": TEXT, "answer": TEXT}, optional={"context": TEXT}),
    },
    optional={"agent": st.dictionaries(st.sampled_from(["name", "type", "version"]), TEXT), "event_type": TEXT},
)


@given(st.binary(max_size=300))
def test_any_body_validates_or_is_a_validation_error(body: bytes) -> None:
    try:
        EvaluationRequest.model_validate_json(body)
    except ValidationError as exc:
        assert exc.errors(include_url=False)


@given(JSON)
def test_any_json_validates_or_is_a_validation_error(value: Any) -> None:
    try:
        EvaluationRequest.model_validate_json(json.dumps(value))
    except ValidationError as exc:
        assert all(error["loc"] is not None for error in exc.errors(include_url=False))


@given(EVENTS)
def test_every_valid_event_gets_a_verdict_from_the_prechecks(event: dict[str, Any]) -> None:
    try:
        request = EvaluationRequest.model_validate(event)
    except ValidationError:
        return  # an empty event id or question: a 422, tested above
    first = Pipeline().stage_one(request)
    if isinstance(first, EvaluationResult):
        assert first.verdict in ("pass", "review", "fail", "error") and first.id == request.event_id
