"""Volunteered facts: a fact is "asked for" only when the agent's message requested that fact."""

from __future__ import annotations

from typing import Any

import pytest

from proctor.drivers.simulator import Conversation, asked_for, judge_requests, simulator_checks
from proctor.errors import ModelOutputError
from proctor.models import ModelSettings, get_model
from proctor.suite import SimulateSpec
from proctor.transcript import Message
from servers.model_server import Reply, Script

TIMEZONE = "The user's timezone is Australia/Sydney"
ORDER = "My order number is 4521"
SPEC = SimulateSpec.model_validate(
    {"tasks": [{"task": "Track my parcel", "acceptanceCriteria": "The parcel is tracked"}], "facts": [TIMEZONE, ORDER]}
)


def supplied(*exchange: tuple[str, str]) -> Conversation:
    """An arm `supplied` conversation: the opener, then (agent reply, simulated user message) pairs."""
    messages = [Message("user", "Hello")]
    for agent, user in exchange:
        messages += [Message("assistant", agent), Message("user", user)]
    return Conversation(arm="supplied", messages=messages, stop="max_turns", first_simulated=1)


def test_a_fact_given_after_a_question_that_names_nothing_is_volunteered() -> None:
    conversation = supplied(("What do you need?", "Track my parcel. My order number is 4521."))
    assert simulator_checks(conversation, SPEC) == [
        "fact volunteered before the agent asked for it (message 3): 'My order number is 4521'"
    ]


def test_a_fact_given_after_the_agent_asked_for_it_is_not_flagged() -> None:
    conversation = supplied(
        ("What do you need?", "Track my parcel please."),
        ("Sure. What is your order number?", "It's 4521."),
        ("Which time zone... sorry, which timezone are you in?", "Australia/Sydney."),
    )
    assert simulator_checks(conversation, SPEC) == []


@pytest.mark.parametrize(
    ("agent", "fact", "asked"),
    [
        ("What do you need?", ORDER, False),
        ("Anything else I can help with?", TIMEZONE, False),
        ("Could you give me the order number?", ORDER, True),
        ("I'll need your order details to look it up.", ORDER, True),  # no "?", still a request
        ("Which timezone are you in?", TIMEZONE, True),
        ("Which city are you in?", TIMEZONE, False),  # keywords only: a judge would know better
        ("Is it Australia/Sydney?", "Australia/Sydney", True),  # a fact with no subject word: its value
    ],
)
def test_keyword_rule(agent: str, fact: str, asked: bool) -> None:
    assert asked_for(agent, fact) is asked


def judge_model(script: Script) -> Any:
    settings = ModelSettings(
        base_url=script.base_url, api_key="k", cache=None, retry_initial_wait=0.01, retry_max_wait=0.02
    )
    return get_model("openai/asked-judge", settings=settings)


@pytest.mark.anyio
async def test_a_judge_decides_when_configured(model_server: Any) -> None:
    # keywords say "asked" for the order number; the judge says no (and yes for the timezone, which
    # keywords miss): its decisions win
    conversation = supplied(
        ("Your order number format is wrong, whatever. Need anything?", "My order number is 4521."),
        ("Which city are you in?", "Australia/Sydney."),
    )
    script = model_server.script(Reply("No."), Reply("yes"))
    model = judge_model(script)
    try:
        decisions = await judge_requests(model, conversation, SPEC)
    finally:
        await model.aclose()
    assert decisions == {(2, ORDER): False, (4, TIMEZONE): True}
    prompts = [body["messages"][1]["content"] for body in script.bodies]
    assert "Your order number format is wrong" in prompts[0] and ORDER in prompts[0]
    assert "Which city are you in?" in prompts[1] and TIMEZONE in prompts[1]
    assert simulator_checks(conversation, SPEC) == [
        'fact volunteered before the agent asked for it (message 5): "The user\'s timezone is Australia/Sydney"'
    ]
    assert simulator_checks(conversation, SPEC, asked=decisions) == [
        "fact volunteered before the agent asked for it (message 3): 'My order number is 4521'"
    ]


@pytest.mark.anyio
async def test_a_judge_reply_that_is_neither_yes_nor_no_is_an_error(model_server: Any) -> None:
    conversation = supplied(("What is your order number?", "4521, order number."))
    model = judge_model(model_server.script(Reply("Probably")))
    try:
        with pytest.raises(ModelOutputError, match="not yes or no"):
            await judge_requests(model, conversation, SPEC)
    finally:
        await model.aclose()
    withheld = Conversation(arm="withheld", messages=conversation.messages)
    assert await judge_requests(model, withheld, SPEC) == {}  # only arm supplied has facts to volunteer
