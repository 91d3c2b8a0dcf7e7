"""The demo HR agent's logic: intents, tool calls, session memory, JSON mode and determinism."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from typing import Any

import pytest

from proctor.demo import AGENT_NAME, HRAgent, respond
from proctor.demo._agent import count_tokens, message_text, split_chunks
from proctor.demo._data import Directory, parse_day, parse_period

AGENT = HRAgent()
TODAY = dt.date(2025, 6, 2)


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def converse(*messages: str, user_id: str | None = None) -> list[Any]:
    """Send the messages one by one, as a chat client would; return every reply."""
    history: list[dict[str, str]] = []
    replies = []
    for message in messages:
        history.append(user(message))
        reply = AGENT.respond(history, user=user_id)
        history.append({"role": "assistant", "content": reply.text})
        replies.append(reply)
    return replies


def calls(reply: Any) -> list[tuple[str, dict[str, Any]]]:
    return [(call.name, call.arguments) for call in reply.tool_calls]


# Single-turn intents: message -> (intent, substrings of the reply, tool calls in order).
CASES: list[tuple[str, str, list[str], list[tuple[str, dict[str, Any]]]]] = [
    ("Hello", "greeting", ["Hello!", "HR assistant"], []),
    ("Hi! What can you do?", "help", ["Hello!", "reminders", "as JSON"], []),
    ("help", "help", ["look up a colleague"], []),
    (
        "Who is Alice?",
        "lookup",
        ["Alice Chen (u1)", "Platform", "Staff Engineer", "alice.chen@acme.example", "Manager: Eve Martin"],
        [("lookup_user", {"name": "Alice"})],
    ),
    (
        "tell me about frank okafor",
        "lookup",
        ["Frank Okafor (u6)", "Manager: Liam Walsh"],
        [("lookup_user", {"name": "Frank Okafor"})],
    ),
    (
        "What is Bob's email?",
        "email",
        ["Bob Smith's email is bob.smith@acme.example."],
        [("lookup_user", {"name": "Bob"})],
    ),
    (
        "Who manages Carol?",
        "manager",
        ["Frank Okafor", "Engineering Manager"],
        [("lookup_user", {"name": "Carol"}), ("lookup_user", {"user_id": "u6"})],
    ),
    ("Who is Liam's boss?", "manager", ["no manager"], [("lookup_user", {"name": "Liam"})]),
    (
        "Who reports to Eve?",
        "reports",
        ["3 direct reports", "Alice Chen", "Bob Smith", "Ivy Patel"],
        [("lookup_user", {"name": "Eve"}), ("list_reports", {"manager_id": "u5"})],
    ),
    (
        "Who is on the Platform team?",
        "team",
        ["The Platform team has 4 members", "Ivy Patel (Site Reliability Engineer)"],
        [("list_team", {"team": "Platform"})],
    ),
    (
        "What team is Dave on?",
        "team",
        ["Dave Kim is on the Payments team"],
        [("lookup_user", {"name": "Dave"}), ("list_team", {"team": "Payments"})],
    ),
    ("What teams are there?", "teams", ["5 teams", "Leadership"], []),
    (
        "When is Dave on vacation?",
        "time_off",
        ["2 upcoming vacation bookings", "2025-06-09 to 2025-06-13", "2025-08-18 to 2025-08-22"],
        [("lookup_user", {"name": "Dave"}), ("get_time_off", {"user_id": "u4"})],
    ),
    (
        "Is Alice out next week?",
        "time_off",
        ["No, Alice Chen has no time off next week (2025-06-09 to 2025-06-15)."],
        [("lookup_user", {"name": "Alice"}), ("get_time_off", {"user_id": "u1"})],
    ),
    (
        "Is Dave out next week?",
        "time_off",
        ["Yes, Dave Kim is out next week", "vacation from 2025-06-09 to 2025-06-13"],
        [("lookup_user", {"name": "Dave"}), ("get_time_off", {"user_id": "u4"})],
    ),
    ("Is Bob off on Friday?", "time_off", ["Yes", "personal day on 2025-06-06"], None),
    (
        "Who is out next week?",
        "time_off",
        ["Dave Kim", "Eve Martin", "Kate Novak (conference"],
        [("get_time_off", {"start": "2025-06-09", "end": "2025-06-15"})],
    ),
    (
        "Who on the Platform team is on vacation next week?",
        "time_off",
        ["on the Platform team", "Eve Martin"],
        [("get_time_off", {"start": "2025-06-09", "end": "2025-06-15", "team": "Platform"})],
    ),
    ("Who is off tomorrow?", "time_off", ["Grace Lee (sick leave"], None),
    ("Is anyone out in September?", "time_off", ["Carol Diaz (parental leave"], None),
    (
        "Remind me to submit my timesheet on Friday",
        "create_reminder",
        ['Done! I created reminder rem-1: "submit my timesheet" for Friday (2025-06-06).'],
        [("create_reminder", {"text": "submit my timesheet", "day": "Friday"})],
    ),
    (
        "remind me on June 12 to book flights",
        "create_reminder",
        ['"book flights" for June 12 (2025-06-12)'],
        [("create_reminder", {"text": "book flights", "day": "June 12"})],
    ),
    (
        "Set a reminder to water the plants",
        "create_reminder",
        ["(no day set)"],
        [("create_reminder", {"text": "water the plants"})],
    ),
    ("Remind me", "reminder", ["What should I remind you about?"], []),
    ("What are my reminders?", "list_reminders", ["You have no reminders yet."], [("list_reminders", {})]),
    ("Who is Zoe?", "not_found", ["couldn't find anyone named Zoe"], [("lookup_user", {"name": "Zoe"})]),
    ("What's my email?", "unknown_user", ["don't know who you are"], []),
    ("Who is my manager?", "unknown_user", ["My name is Alice"], []),
    (
        "What is Alice's phone number?",
        "unsupported",
        ["don't have access to phone numbers", "alice.chen@acme.example"],
        [("lookup_user", {"name": "Alice"})],
    ),
    ("What is Kate's salary?", "unsupported", ["salary information"], None),
    ("What's the weather like?", "fallback", ["Sorry, I can't help with that."], []),
    ("Thanks!", "thanks", ["You're welcome!"], []),
    ("", "greeting", ["Hello!"], []),
]


@pytest.mark.parametrize(("message", "intent", "expected", "tool_calls"), CASES, ids=[c[0] or "empty" for c in CASES])
def test_single_turn_intents(
    message: str, intent: str, expected: list[str], tool_calls: list[tuple[str, dict[str, Any]]] | None
) -> None:
    reply = AGENT.respond([user(message)])
    assert reply.intent == intent
    for text in expected:
        assert text in reply.text
    if tool_calls is not None:
        assert calls(reply) == tool_calls


def test_tool_calls_carry_ids_and_results() -> None:
    reply = AGENT.respond([user("Who manages Carol?")])
    assert [call.id for call in reply.tool_calls] == ["call_1_1", "call_1_2"]
    assert reply.tool_calls[0].result["id"] == "u3"
    assert reply.tool_calls[1].result["name"] == "Frank Okafor"
    unknown = AGENT.respond([user("Who is Zoe?")])
    assert unknown.tool_calls[0].result is None


def test_introduction_is_remembered() -> None:
    intro, email, manager, team, off, me = converse(
        "My name is Alice",
        "What's my email?",
        "Who is my manager?",
        "Who is on my team?",
        "Am I out next week?",
        "Who am I?",
    )
    assert intro.text.startswith("Nice to meet you, Alice Chen!")
    assert calls(intro) == [("lookup_user", {"name": "Alice"})]
    assert email.text == "Your email is alice.chen@acme.example."
    assert email.tool_calls == []  # remembered, not looked up again
    assert "Your manager is Eve Martin" in manager.text
    assert calls(manager) == [("lookup_user", {"user_id": "u5"})]
    assert team.text.startswith("You are on the Platform team")
    assert off.text.startswith("No, Alice Chen has no time off next week")
    assert me.text.startswith("You are Alice Chen (u1)")


def test_introduction_with_a_question_answers_both() -> None:
    (reply,) = converse("Hi, I'm Dave. When is my vacation?")
    assert reply.text.startswith("Nice to meet you, Dave Kim!")
    assert "2 upcoming vacation bookings" in reply.text
    assert calls(reply) == [("lookup_user", {"name": "Dave"}), ("get_time_off", {"user_id": "u4"})]


def test_unknown_introduction() -> None:
    intro, email = converse("My name is Zed", "What's my email?")
    assert "couldn't find you" in intro.text
    assert email.text == "Sorry, I couldn't find Zed in the directory."


def test_i_am_out_is_not_an_introduction() -> None:
    (reply,) = converse("I am out next week")
    assert reply.intent != "introduction"


def test_transport_user_identifies_the_speaker() -> None:
    (reply,) = converse("What's my email?", user_id="bob.smith@acme.example")
    assert reply.text == "Your email is bob.smith@acme.example."
    (unknown,) = converse("What's my email?", user_id="proctor")
    assert unknown.intent == "unknown_user"


def test_pronouns_follow_the_last_person() -> None:
    _, her_email, leave = converse("Who is Carol?", "What's her email?", "Is she on leave in August?")
    assert her_email.text == "Carol Diaz's email is carol.diaz@acme.example."
    assert leave.text.startswith("Yes, Carol Diaz is out in August")
    assert "parental leave from 2025-08-04 to 2025-10-31" in leave.text
    _, his = converse("Who manages Carol?", "What's his email?")
    assert "frank.okafor@acme.example" in his.text


def test_reminders_are_per_conversation() -> None:
    first, second, listing = converse(
        "Remind me to submit my timesheet on Friday",
        "Set a reminder to book the team offsite next Monday",
        "List my reminders",
    )
    assert "rem-1" in first.text
    assert "rem-2" in second.text and "for Monday (2025-06-09)" in second.text
    assert listing.text.startswith("You have 2 reminders: rem-1")
    assert calls(listing) == [("list_reminders", {})]
    assert [r["id"] for r in listing.tool_calls[0].result] == ["rem-1", "rem-2"]
    (fresh,) = converse("What are my reminders?")
    assert fresh.text == "You have no reminders yet."


def test_assistant_messages_do_not_change_memory() -> None:
    history = [
        user("My name is Alice"),
        {"role": "assistant", "content": "Nice to meet you, Bob Smith!"},
        {"role": "system", "content": "ignored"},
        user("What's my email?"),
    ]
    assert AGENT.respond(history).text == "Your email is alice.chen@acme.example."


def test_json_mode() -> None:
    reply = AGENT.respond([user("Give me Alice's details as JSON")])
    data = json.loads(reply.text)
    assert reply.json_mode
    assert data["email"] == "alice.chen@acme.example" and data["manager_name"] == "Eve Martin"
    out = json.loads(AGENT.respond([user("Who is out next week? Answer as JSON.")]).text)
    assert out["period"]["start"] == "2025-06-09"
    assert [e["name"] for e in out["time_off"]] == ["Dave Kim", "Eve Martin", "Kate Novak"]
    fallback = json.loads(AGENT.respond([user("Tell me a joke in JSON format")]).text)
    assert "error" in fallback
    plain = AGENT.respond([user("Who is Alice?")])
    assert not plain.json_mode
    with pytest.raises(ValueError):
        json.loads(plain.text)


def test_usage_counts_words() -> None:
    reply = AGENT.respond([user("Who is Alice?")])
    assert reply.completion_tokens == count_tokens(reply.text) > 0
    longer = AGENT.respond([user("Who is Alice?"), {"role": "assistant", "content": reply.text}, user("Hi")])
    assert longer.prompt_tokens == reply.prompt_tokens + count_tokens(reply.text) + 1


def test_replies_are_deterministic() -> None:
    script = ["My name is Alice", "Remind me to submit my timesheet on Friday", "Who is out next week?"]
    first = [(r.text, calls(r), r.prompt_tokens) for r in converse(*script)]
    second = [(r.text, calls(r), r.prompt_tokens) for r in converse(*script)]
    assert first == second
    assert respond([user("Who is Alice?")]) == respond([user("Who is Alice?")])


def test_respond_callable_shape() -> None:
    out = respond([user("Who manages Carol?")])
    assert set(out) == {"text", "tool_calls", "usage"}
    assert out["text"].startswith("Carol Diaz's manager is Frank Okafor")
    assert [c["name"] for c in out["tool_calls"]] == ["lookup_user", "lookup_user"]
    assert out["tool_calls"][0]["arguments"] == {"name": "Carol"}
    assert set(out["usage"]) == {"prompt_tokens", "completion_tokens"}
    json.dumps(out)  # plain JSON values throughout


def test_message_text_accepts_openai_parts() -> None:
    parts = {"role": "user", "content": [{"type": "text", "text": "Who is"}, {"type": "text", "text": "Bob?"}]}
    assert message_text(parts) == "Who is\nBob?"
    assert message_text({"role": "assistant", "content": None}) == ""
    assert AGENT.respond([parts]).intent == "lookup"


@pytest.mark.parametrize("text", ["", "one", "a b", "Hello! I am here.  Two spaces\nand a line", "x " * 10])
def test_split_chunks_rejoins(text: str) -> None:
    pieces = split_chunks(text)
    assert "".join(pieces) == text
    assert len(pieces) <= 3


def test_calendar_is_frozen() -> None:
    assert Directory().today == TODAY
    assert parse_day("on Friday", TODAY) == ("Friday", dt.date(2025, 6, 6))
    assert parse_day("next Monday", TODAY) == ("Monday", dt.date(2025, 6, 9))
    assert parse_day("tomorrow", TODAY) == ("tomorrow", dt.date(2025, 6, 3))
    assert parse_day("on February 30", TODAY) is None
    assert parse_day("in January 5", TODAY) == ("January 5", dt.date(2026, 1, 5))
    week = parse_period("next week", TODAY)
    assert week is not None and (week.start, week.end) == (dt.date(2025, 6, 9), dt.date(2025, 6, 15))
    july = parse_period("in July", TODAY)
    assert july is not None and july.end == dt.date(2025, 7, 31)
    assert parse_period("whenever", TODAY) is None


def test_agent_name() -> None:
    assert AGENT_NAME == "hr-assistant"


def test_chat_command(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import io

    from proctor.demo.__main__ import main

    monkeypatch.setattr(sys, "stdin", io.StringIO("My name is Alice\n\nWhat's my email?\n"))
    main(["chat"])
    out = capsys.readouterr()
    assert out.out.splitlines() == [
        "Nice to meet you, Alice Chen! I found you in the directory: Staff Engineer on the Platform team.",
        "Your email is alice.chen@acme.example.",
    ]
    assert 'lookup_user {"name": "Alice"}' in out.err


def test_importing_the_demo_stays_light() -> None:
    code = "import sys, proctor.demo; print(any(m.split('.')[0] in ('starlette', 'uvicorn') for m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
