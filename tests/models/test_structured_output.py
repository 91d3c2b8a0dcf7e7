from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from proctor.errors import ModelOutputError
from proctor.models import ModelSettings, extract_json, generate_structured, get_model, parse_structured, schema_for
from proctor.models._lenient import LenientJSONError, loads_lenient
from proctor.models._structured import OutputInvalid, with_schema_instruction
from servers.model_server import ModelServer, Reply


class Verdict(BaseModel):
    score: int = Field(ge=1, le=5)
    verdict: Literal["pass", "fail"]
    reason: str


GOOD = {"score": 4, "verdict": "pass", "reason": "matches the rubric"}
MESSAGES = [{"role": "system", "content": "You grade answers."}, {"role": "user", "content": "Grade: 2+2=4"}]


@pytest.mark.parametrize(
    "text",
    [
        json.dumps(GOOD),
        "```json\n" + json.dumps(GOOD, indent=2) + "\n```",
        "Here is my verdict:\n```\n" + json.dumps(GOOD) + "\n```\nThanks!",
        'Sure! {"score": 4, "verdict": "pass", "reason": "matches the rubric"} Hope that helps.',
        '{"score": 4, "verdict": "pass", "reason": "matches the rubric",}',  # trailing comma
        "{'score': 4, 'verdict': 'pass', 'reason': 'matches the rubric'}",  # single quotes
        '```json\n{"score": 4,\n "verdict": "pass",\n "reason": "matches the rubric",\n}\n```',  # fence + comma
        "{score: 4, verdict: 'pass', reason: 'matches the rubric'}",  # unquoted keys
        '{"score": 4, // a comment\n "verdict": "pass" "reason": "matches the rubric"}',  # comment, missing comma
        '[note] {"score": 4, "verdict": "pass", "reason": "matches the rubric"}',  # a bracket before the object
    ],
)
def test_parse_and_repair(text: str) -> None:
    assert parse_structured(text, Verdict) == Verdict(**GOOD)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        # Before issue 14 a cut-off answer was completed by json-repair: a made-up verdict.
        ('{"score": 4, "verdict": "pass", "reason": "matches the rubric"', "incomplete"),
        ('{"reason": "mostly fine", "score": 0.', "incomplete"),
        ('{"score": 4, "verdict": "pa', "incomplete"),
        ('{"score": 4., "verdict": "pass", "reason": "x"}', "not a JSON value"),
        ('{"score": , "verdict": "pass", "reason": "x"}', "where a value belongs"),
        ('{"score": four, "verdict": "pass", "reason": "x"}', "not a JSON value"),
    ],
)
def test_repair_never_completes_or_invents_a_value(text: str, why: str) -> None:
    with pytest.raises(OutputInvalid, match=why):
        parse_structured(text, Verdict)


def test_lenient_reader_keeps_text_it_cannot_be_sure_of_as_text() -> None:
    assert loads_lenient('{"reason": "says "hi" twice", "ok": True, "n": None}') == {
        "reason": 'says "hi" twice',
        "ok": True,
        "n": None,
    }
    assert loads_lenient('{"reason": "line one\nline two"}')["reason"] == "line one\nline two"
    with pytest.raises(LenientJSONError) as info:
        loads_lenient('{"criteria": [{"name": "Polite", "passed": true}')
    assert info.value.truncated
    with pytest.raises(LenientJSONError, match="an array item is missing"):
        loads_lenient("[0.9, , 0.1]")
    assert loads_lenient("[1, 2,]") == [1, 2]


def test_braces_inside_strings_do_not_confuse_extraction() -> None:
    text = 'Result: {"score": 3, "verdict": "fail", "reason": "uses } and { in text"} done'
    assert parse_structured(text, Verdict).reason == "uses } and { in text"


@pytest.mark.parametrize("text", ["I cannot grade this.", "", "<html>oops</html>"])
def test_garbage_has_no_json(text: str) -> None:
    with pytest.raises(OutputInvalid, match="no JSON"):
        extract_json(text)


def test_schema_mismatch_names_field_and_value() -> None:
    with pytest.raises(OutputInvalid) as info:
        parse_structured('{"score": "high", "verdict": "pass"}', Verdict)
    message = str(info.value)
    assert "score: Input should be a valid integer" in message
    assert "'high'" in message
    assert "reason: Field required" in message


def test_non_object_types_and_schema_cache() -> None:
    assert parse_structured("[1, 2, 3,]", list[int]) == [1, 2, 3]
    schema = schema_for(Verdict)
    schema["mutated"] = True
    assert "mutated" not in schema_for(Verdict)


def test_schema_instruction_goes_into_the_system_message() -> None:
    schema = schema_for(Verdict)
    out = with_schema_instruction(MESSAGES, schema)
    assert out[0]["content"].startswith("You grade answers.\n\nReply with only a JSON value")
    assert MESSAGES[0]["content"] == "You grade answers."  # not mutated
    bare = with_schema_instruction([{"role": "user", "content": "hi"}], schema)
    assert bare[0]["role"] == "system" and bare[1] == {"role": "user", "content": "hi"}


@pytest.mark.anyio
async def test_first_answer_valid_sends_json_schema_response_format(
    model_server: ModelServer, make_settings: Callable[..., ModelSettings]
) -> None:
    script = model_server.script(Reply(json.dumps(GOOD)))
    async with get_model("openai/judge-model", settings=make_settings(script)) as model:
        result = await generate_structured(model, MESSAGES, Verdict)
    assert result.value == Verdict(**GOOD)
    assert result.attempts == 1
    assert result.raw_outputs == [json.dumps(GOOD)]
    assert result.response.model == "openai/judge-model"
    body: dict[str, Any] = script.bodies[0]
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Verdict", "schema": schema_for(Verdict), "strict": False},
    }
    assert body["model"] == "judge-model"
    assert body["temperature"] == 0.0
    assert body["messages"] == MESSAGES


@pytest.mark.anyio
async def test_invalid_answer_is_retried_once_showing_the_error(
    model_server: ModelServer, make_settings: Callable[..., ModelSettings]
) -> None:
    bad = '{"score": 9, "verdict": "pass", "reason": "too generous"}'
    script = model_server.script(Reply(bad), Reply("```json\n" + json.dumps(GOOD) + "\n```"))
    async with get_model("openai/judge-model", settings=make_settings(script)) as model:
        result = await generate_structured(model, MESSAGES, Verdict)
    assert result.value.score == 4
    assert result.attempts == 2
    assert result.raw_outputs == [bad, "```json\n" + json.dumps(GOOD) + "\n```"]
    assert result.usage.prompt_tokens == 200  # both attempts counted
    second = script.bodies[1]["messages"]
    assert second[: len(MESSAGES)] == MESSAGES
    assert second[-2] == {"role": "assistant", "content": bad}
    assert second[-1]["role"] == "user"
    assert "score: Input should be less than or equal to 5 (got 9)" in second[-1]["content"]


@pytest.mark.anyio
async def test_garbage_twice_raises_with_both_raw_outputs(
    model_server: ModelServer, make_settings: Callable[..., ModelSettings]
) -> None:
    script = model_server.script(Reply("I think it is good."), Reply("Still no JSON, sorry."))
    async with get_model("openai/judge-model", settings=make_settings(script)) as model:
        with pytest.raises(ModelOutputError) as info:
            await generate_structured(model, MESSAGES, Verdict)
    assert info.value.raw_outputs == ["I think it is good.", "Still no JSON, sorry."]
    assert "openai/judge-model gave no valid Verdict in 2 attempts" in str(info.value)
    assert info.value.exit_code == 3
    assert len(script.requests) == 2  # exactly one repair round


class Judged(BaseModel):
    reason: str
    score: float = Field(ge=0, le=1)


@pytest.mark.anyio
@pytest.mark.parametrize(
    "content", ['{"reason": "The reply is mostly accurate but", "score": 0.', '{"reason": "ok", "score": 1}']
)
async def test_an_answer_cut_off_at_the_token_limit_is_an_error_with_its_raw_text(
    model_server: ModelServer, make_settings: Callable[..., ModelSettings], content: str
) -> None:
    script = model_server.script(Reply(content, finish_reason="length"), default=Reply('{"reason": "x", "score": 0.5}'))
    async with get_model("openai/judge-model", settings=make_settings(script)) as model:
        with pytest.raises(ModelOutputError) as info:
            await generate_structured(model, MESSAGES, Judged)
    assert info.value.raw_outputs == [content]
    assert "cut off (finish reason 'length')" in str(info.value)
    assert len(script.requests) == 1  # the same limit would cut a second answer: no repair round


@pytest.mark.anyio
async def test_truncated_json_without_a_finish_reason_is_never_completed(
    model_server: ModelServer, make_settings: Callable[..., ModelSettings]
) -> None:
    cut = '{"reason": "The reply is mostly accurate but", "score": 0.'
    script = model_server.script(default=Reply(cut, finish_reason=None))
    async with get_model("openai/judge-model", settings=make_settings(script)) as model:
        with pytest.raises(ModelOutputError) as info:
            await generate_structured(model, MESSAGES, Judged)
    assert info.value.raw_outputs == [cut, cut]
    assert "incomplete" in str(info.value) and "not completed" in str(info.value)
