"""The demo HR assistant: deterministic intent parsing over the bundled directory, with real tool calls.

There is no model and no randomness: the same conversation always gets the same reply. The agent is
stateless between calls; session memory (who the user is, who "she" is, the reminders made so far) is
rebuilt by replaying the earlier user messages of the history, so every transport (OpenAI-style full
history, server-side sessions, a Python callable) behaves the same.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from proctor.demo._data import Directory, Employee, Period, parse_day
from proctor.demo._intents import Answer, answer
from proctor.transcript import ToolCall

__all__ = [
    "AGENT_NAME",
    "SYSTEM_PROMPT",
    "HRAgent",
    "RemoteTools",
    "Reply",
    "State",
    "Turn",
    "count_tokens",
    "message_text",
    "split_chunks",
]

AGENT_NAME = "hr-assistant"
"""The model / agent id the demo answers to."""
SYSTEM_PROMPT = (
    "You are the Acme HR assistant. You look up colleagues, their managers and teams, check booked "
    "time off and keep reminders. Use your tools; never invent data."
)
"""Not sent anywhere; counted in the prompt tokens so that token accounting looks like a real agent's."""

_JSON_MODE = re.compile(r"\s*\b(?:(?:as|in)\s+(?:a\s+)?json(?:\s+object)?|json\s+(?:format|object|only))\b", re.I)


def count_tokens(text: str) -> int:
    """The demo's token count: whitespace-separated words."""
    return len(text.split())


def split_chunks(text: str, parts: int = 3) -> list[str]:
    """Split `text` at spaces into at most `parts` pieces that join back to exactly `text` (for streaming)."""
    words = re.split(r"(?<=\s)(?=\S)", text)
    if len(words) <= 1:
        return [text] if text else []
    size = -(-len(words) // parts)
    return ["".join(words[i : i + size]) for i in range(0, len(words), size)]


@dataclass(slots=True)
class State:
    """What the agent remembers within one conversation."""

    user: Employee | None = None
    """Who the user said they are, when found in the directory."""
    user_name: str | None = None
    """The name the user gave, found or not."""
    last_person: Employee | None = None
    """The person talked about most recently (for "her", "his", "they")."""
    reminders: list[dict[str, Any]] = field(default_factory=list)
    """Reminders created so far, in order."""
    username: str | None = None
    """The HR-system username the user gave (for the `hr_agent` time-off schedule)."""
    schedule_dates: tuple[str, str] | None = None
    """The start and end dates (ISO) of the time-off schedule asked for."""
    schedule_asked: bool = False
    """Whether a time-off schedule request is waiting for the username or dates."""


RemoteTools = Callable[[str, dict[str, Any]], Any]
"""Runs a tool elsewhere (e.g. on an MCP server): `(name, arguments) -> result`."""


class Turn:
    """One user message being answered: the tools it runs are recorded in order."""

    def __init__(self, agent: HRAgent, state: State, number: int, remote: RemoteTools | None = None) -> None:
        self.agent = agent
        self.directory = agent.directory
        self.state = state
        self.number = number
        self.remote = remote
        """Where the tools run, when not here (the agent's MCP mode)."""
        self.calls: list[ToolCall] = []

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """Run a tool (here, or `remote`) and record the call with its result."""
        if self.remote is not None:
            result = self.remote(name, arguments)
        else:
            tool: Callable[..., Any] = getattr(self, f"_tool_{name}")
            result = tool(**arguments)
        self.calls.append(
            ToolCall(name, dict(arguments), id=f"call_{self.number}_{len(self.calls) + 1}", result=result)
        )
        return result

    def lookup(self, name: str) -> Employee | None:
        """Call `lookup_user` by name and return the employee found."""
        found = self.call("lookup_user", {"name": name})
        return self.directory.get(found["id"]) if found else None

    def lookup_id(self, user_id: str) -> Employee | None:
        """Call `lookup_user` by id and return the employee found."""
        found = self.call("lookup_user", {"user_id": user_id})
        return self.directory.get(found["id"]) if found else None

    # The tools. Results are plain JSON values, as a real tool server would return them.

    def _tool_lookup_user(self, name: str | None = None, user_id: str | None = None) -> dict[str, Any] | None:
        person = self.directory.find(name) if name else self.directory.get(user_id)
        if person is None:
            return None
        manager = self.directory.get(person.manager_id)
        return {**person.to_dict(), "manager_name": manager.name if manager else None}

    def _tool_get_time_off(
        self,
        user_id: str | None = None,
        start: str | None = None,
        end: str | None = None,
        team: str | None = None,
    ) -> list[dict[str, Any]]:
        period = None
        if start:
            first = dt.date.fromisoformat(start)
            last = dt.date.fromisoformat(end) if end else first
            period = Period(first, last, f"{first.isoformat()} to {last.isoformat()}")
        entries = self.directory.absences(user_id, period)
        team_ids = {p.id for p in self.directory.members(team)} if team else None
        out = []
        for entry in entries:
            if team_ids is not None and entry.user_id not in team_ids:
                continue
            person = self.directory.get(entry.user_id)
            item = entry.to_dict()
            if user_id is None and person:
                item = {"user_id": person.id, "name": person.name, **item}
            out.append(item)
        return out

    def _tool_list_team(self, team: str) -> list[dict[str, str]]:
        return [{"id": p.id, "name": p.name, "title": p.title} for p in self.directory.members(team)]

    def _tool_list_reports(self, manager_id: str) -> list[dict[str, str]]:
        return [{"id": p.id, "name": p.name, "title": p.title} for p in self.directory.reports(manager_id)]

    def _tool_create_reminder(self, text: str, day: str | None = None) -> dict[str, Any]:
        when = parse_day(day, self.directory.today) if day else None
        reminder = {
            "id": f"rem-{len(self.state.reminders) + 1}",
            "text": text,
            "day": day,
            "date": when[1].isoformat() if when else None,
        }
        self.state.reminders.append(reminder)
        return dict(reminder)

    def _tool_list_reminders(self) -> list[dict[str, Any]]:
        return [dict(reminder) for reminder in self.state.reminders]

    # The watsonx `hr_agent` tools (the names and arguments of the watsonx ADK's example dataset).

    def _tool_get_assignment_id_hr_agent(self, username: str) -> str | None:
        return self.directory.accounts.get(username.strip().lower())

    def _tool_get_timeoff_schedule_hr_agent(self, assignment_id: str, start_date: str, end_date: str) -> list[str]:
        first, last = dt.date.fromisoformat(start_date), dt.date.fromisoformat(end_date)
        return [day.isoformat() for day in self.directory.days_off.get(str(assignment_id), []) if first <= day <= last]


@dataclass(slots=True)
class Reply:
    """The agent's answer to the last user message."""

    text: str
    """The reply text (a JSON object's text in JSON mode)."""
    tool_calls: list[ToolCall]
    """The tool calls executed for this reply, in order, with their results."""
    prompt_tokens: int
    """Words in the system prompt and the whole history."""
    completion_tokens: int
    """Words in the reply."""
    intent: str
    """What the agent understood, e.g. `lookup`, `time_off`, `fallback`."""
    data: dict[str, Any]
    """The structured answer (what JSON mode prints)."""
    json_mode: bool = False
    """Whether the user asked for JSON."""

    def to_dict(self) -> dict[str, Any]:
        """Return the form `proctor.demo:respond` returns."""
        return {
            "text": self.text,
            "tool_calls": [{"name": c.name, "arguments": c.arguments, "result": c.result} for c in self.tool_calls],
            "usage": {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens},
        }


class HRAgent:
    """The demo HR assistant.

    Example:
        ```python
        agent = HRAgent()
        reply = agent.respond([{"role": "user", "content": "Who is Alice?"}])
        reply.text  # 'Alice Chen (u1) is Staff Engineer on the Platform team. ...'
        ```
    """

    def __init__(self, directory: Directory | None = None) -> None:
        self.directory = directory or Directory()

    def respond(
        self, history: Sequence[Mapping[str, Any]], user: str | None = None, tools: RemoteTools | None = None
    ) -> Reply:
        """Answer the last user message of `history`, remembering what earlier user messages said.

        Args:
            history: Messages `{role, content}` in order; only `user` messages drive the agent, and
                `content` may be a string or a list of OpenAI text parts.
            user: Who is talking, when the transport knows (an employee's id, name or email); the user
                can also say it ("My name is Alice").
            tools: Run the last message's tools here (e.g. on an MCP server) instead of in-process;
                earlier messages are replayed in-process (only the memory they leave matters).

        Returns:
            The reply, its tool calls and token counts.
        """
        texts = [message_text(m) for m in history]
        user_messages = [t for m, t in zip(history, texts, strict=True) if m.get("role") == "user"]
        state = State()
        if user:
            state.user = self._identify(user)
            state.user_name = state.user.name if state.user else None
        for number, message in enumerate(user_messages[:-1], start=1):
            self._answer(message, state, number)  # replay: only the memory it leaves matters
        current = user_messages[-1] if user_messages else ""
        result, turn, json_mode = self._answer(current, state, len(user_messages), tools)
        text = json.dumps(result.data, ensure_ascii=False) if json_mode else result.text
        prompt = count_tokens(SYSTEM_PROMPT) + sum(count_tokens(t) for t in texts)
        return Reply(
            text=text,
            tool_calls=turn.calls,
            prompt_tokens=prompt,
            completion_tokens=max(1, count_tokens(text)),
            intent=result.intent,
            data=result.data,
            json_mode=json_mode,
        )

    def _answer(
        self, message: str, state: State, number: int, tools: RemoteTools | None = None
    ) -> tuple[Answer, Turn, bool]:
        turn = Turn(self, state, number, tools)
        json_mode = bool(_JSON_MODE.search(message))
        cleaned = _JSON_MODE.sub("", message).strip() if json_mode else message.strip()
        return answer(cleaned, turn), turn, json_mode

    def _identify(self, user: str) -> Employee | None:
        wanted = user.strip().lower()
        for person in self.directory.employees:
            if wanted in (person.id, person.email, person.name.lower(), person.first_name.lower()):
                return person
        return None


def message_text(message: Mapping[str, Any]) -> str:
    """The text of a chat message whose `content` is a string, `None`, or a list of text parts."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text", "") for p in content if isinstance(p, Mapping) and p.get("type") == "text"]
        return "\n".join(str(p) for p in parts)
    return ""
