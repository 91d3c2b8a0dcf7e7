"""What the demo agent understands: keyword and regex intents, each answered with tool calls.

Intents are tried in a fixed order (introductions, thanks, reminders, unsupported fields, managers and
reports, time off, teams, emails, lookups, help, greetings) and the first that matches answers.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from proctor.demo._data import MONTHS, WEEKDAYS, Employee, Period, parse_day, parse_period

if TYPE_CHECKING:
    from proctor.demo._agent import Turn

__all__ = ["CAPABILITIES", "Answer", "answer"]

CAPABILITIES = (
    "I'm the Acme HR assistant. I can: look up a colleague (role, team, email, manager); list a team or "
    'someone\'s direct reports; check time off ("Is Dave out next week?"); create and list reminders '
    '("Remind me to submit my timesheet on Friday"). Add "as JSON" to get a JSON object.'
)
"""The reply to "what can you do?"."""
GREETING = (
    "Hello! I'm the Acme HR assistant. I can look up colleagues, check time off, list team members "
    "and set reminders. What do you need?"
)
FALLBACK = (
    "Sorry, I can't help with that. I can look up colleagues, check time off, list teams and keep "
    'reminders. Try "Who is Alice?" or "Is Dave out next week?".'
)

_I = re.IGNORECASE
_INTRO = re.compile(r"\b(my name is|call me|i am|i'm|this is)\s+([A-Za-z]+(?:\s+[A-Z][a-z]+)?)", _I)
_THANKS = re.compile(r"^\W*(?:thanks|thank you|thx|cheers)(?:\s+(?:so|very)\s+much|\s+a\s+lot)?\W*$", _I)
_REMIND = re.compile(
    r"\b(?:remind me|(?:set|add|create|make)\s+(?:me\s+)?an?\s+reminder)\b[\s:,-]*"
    r"(?:(?:to|that|about|for)\b)?\s*(?P<rest>.*)$",
    _I | re.S,
)
_DAY_PHRASE = re.compile(
    rf"\s*\b(?:(?:on|by|next|this|before|until)\s+)?(?:{'|'.join(WEEKDAYS)}|today|tomorrow"
    rf"|\d{{4}}-\d{{2}}-\d{{2}}|(?:{'|'.join(MONTHS)})\s+\d{{1,2}})\b",
    _I,
)
_REMINDERS = re.compile(r"\breminders\b|\bmy reminder\b|\breminder list\b", _I)
_UNSUPPORTED = re.compile(
    r"\b(phone(?: number)?|mobile|salary|salaries|compensation|(?<!email )(?<!e-mail )address|birthday)\b", _I
)
_REPORTS = re.compile(r"\bwho reports to\b|\bdirect reports\b|\bwho works for\b|\bwho does \w+ manage\b", _I)
_MANAGER = re.compile(r"\bwho manages\b|\bmanager\b|\bboss\b|\bsupervisor\b|\breports? to\b|\bmanaged by\b", _I)
_TIME_OFF = re.compile(
    r"\b(vacations?|holidays?|time[ -]off|pto|leave|ooo|out of (?:the )?office|away|off|out|sick|absent"
    r"|parental|conference|personal day)\b",
    _I,
)
_OFF_TYPES = {"vacation": "vacation", "holiday": "vacation", "sick": "sick", "parental": "parental"}
_OFF_TYPES |= {"conference": "conference", "personal day": "personal"}
_TEAM = re.compile(r"\b(?:teams?|teammates|members|who works (?:in|on)|department)\b", _I)
_EMAIL = re.compile(r"\be-?mail\b|\bcontact\b", _I)
_LOOKUP = re.compile(
    r"\b(?:who is|who's|whos|who am i|tell me about|look up|lookup|find|details|info|information|profile"
    r"|title|role|job)\b",
    _I,
)
_HELP = re.compile(r"\bwhat (?:can|do) you do\b|\bhelp\b|\bcapabilities\b|\bwhat are you\b", _I)
_GREETING = re.compile(r"\b(?:hi|hello|hey|hiya|good (?:morning|afternoon|evening)|greetings)\b", _I)
_SELF = re.compile(
    r"\b(?:my|mine|myself|am i|i am|i'm|do i|have i|i have)\b"
    r"|(?<!tell )(?<!show )(?<!give )(?<!let )(?<!help )\bme\b",
    _I,
)
_PRONOUN = re.compile(r"\b(?:he|she|him|her|his|hers|they|them|their)\b", _I)
_CANDIDATE = re.compile(
    r"\b([A-Z][a-z]+)'s\b|(?i:\b(?:who is|who's|about|named|called|manages|manager of|email of|email for"
    r"|reports to|is|does|for|of|find|up)\s+)([A-Z][a-z]+)\b"
)
_SCHEDULE = re.compile(r"\btime[ -]?off schedule\b|\bschedule of (?:my )?time[ -]?off\b", _I)
_USERNAME = re.compile(r"\buser ?name\s*(?:is|:|=)?\s*['\"]?([A-Za-z][\w-]*(?:\.[\w-]+)*)", _I)
_DATE = re.compile(
    rf"\b(?P<iso>\d{{4}}-\d{{2}}-\d{{2}})\b|\b(?P<month>{'|'.join(MONTHS)})\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?"
    rf"(?:,?\s+(?P<year>\d{{4}}))?\b",
    _I,
)
_NOT_NAMES = {*WEEKDAYS, *MONTHS, "acme", "what", "who", "where", "when", "how", "it", "that", "there"}
_NOT_NAMES |= {"the", "this", "my", "your", "json", "hr", "next", "today", "tomorrow", "he", "she", "i"}


@dataclass(slots=True)
class Answer:
    """What the agent says and the structured data behind it."""

    intent: str
    """The intent that answered."""
    text: str
    """The reply text."""
    data: dict[str, Any] = field(default_factory=dict)
    """The structured answer printed in JSON mode; defaults to `{"reply": text}`."""

    def __post_init__(self) -> None:
        if not self.data:
            self.data = {"reply": self.text}

    @classmethod
    def error(cls, intent: str, text: str) -> Answer:
        """An answer that could not give the user what they asked for."""
        return cls(intent, text, {"error": text})


def answer(text: str, turn: Turn) -> Answer:
    """Answer one user message, running tools through `turn` and updating its conversation state."""
    if not text.strip():
        return Answer("greeting", GREETING)
    intro = _INTRO.search(text)
    if intro and _is_introduction(intro, turn):
        return _introduce(text, intro, turn)
    if _THANKS.match(text):
        return Answer("thanks", "You're welcome!")
    remind = _REMIND.search(text)
    if remind:
        return _create_reminder(remind["rest"], turn)
    if _REMINDERS.search(text):
        return _list_reminders(turn)
    if _SCHEDULE.search(text) or _USERNAME.search(text) or (turn.state.schedule_asked and _DATE.search(text)):
        return _schedule(text, turn)
    handlers = [
        (_UNSUPPORTED, _unsupported),
        (_REPORTS, _reports),
        (_MANAGER, _manager),
        (_TIME_OFF, _time_off),
        (_TEAM, _team),
        (_EMAIL, _email),
    ]
    for pattern, handler in handlers:
        if pattern.search(text):
            return handler(text, turn)
    if _LOOKUP.search(text) or _mention(text, turn):
        return _lookup(text, turn)
    if _HELP.search(text):
        return Answer("help", f"Hello! {CAPABILITIES}" if _GREETING.search(text) else CAPABILITIES)
    if _GREETING.search(text):
        return Answer("greeting", GREETING)
    return Answer.error("fallback", FALLBACK)


# Who is being talked about.


def _mention(text: str, turn: Turn) -> tuple[str, Employee] | None:
    """The directory person named first in `text`, and the name as written in the directory."""
    found: list[tuple[int, int, str, Employee]] = []
    for person in turn.directory.employees:
        for form in (person.name, person.first_name):
            match = re.search(rf"\b{re.escape(form)}\b", text, _I)
            if match:
                found.append((match.start(), -len(form), form, person))
                break
    if not found:
        return None
    _, _, form, person = min(found, key=lambda item: item[:2])
    return form, person


def _subject(text: str, turn: Turn) -> Employee | Answer | None:
    """Resolve who the message is about, calling `lookup_user` for names; `None` if nobody is named."""
    mention = _mention(text, turn)
    if mention:
        person = turn.lookup(mention[0]) or mention[1]
        turn.state.last_person = person
        return person
    if _SELF.search(text):
        if turn.state.user:
            return turn.state.user
        if turn.state.user_name:
            return Answer.error("unknown_user", f"Sorry, I couldn't find {turn.state.user_name} in the directory.")
        return Answer.error(
            "unknown_user", 'I don\'t know who you are yet. Tell me your name first, e.g. "My name is Alice".'
        )
    if _PRONOUN.search(text) and turn.state.last_person:
        return turn.state.last_person
    for match in _CANDIDATE.finditer(text):
        candidate = match[1] or match[2]
        if candidate.lower() not in _NOT_NAMES and not _team_in(candidate, turn):
            turn.lookup(candidate)  # recorded: the agent did look
            return Answer.error("not_found", f"I couldn't find anyone named {candidate} in the Acme directory.")
    return None


def _team_in(text: str, turn: Turn) -> str | None:
    """The first team named in `text` ("Platform", or "platform team")."""
    hits = []
    for team in turn.directory.teams:
        match = re.search(rf"\b{team}\b", text) or re.search(rf"\b{team} team\b", text, _I)
        if match:
            hits.append((match.start(), team))
    return min(hits)[1] if hits else None


def _need_person(what: str) -> Answer:
    return Answer.error("need_person", f'Whose {what} do you mean? Give me a name, e.g. "Who is Alice?".')


def _is_you(person: Employee, turn: Turn) -> bool:
    return turn.state.user is not None and person.id == turn.state.user.id


def _people(people: list[dict[str, Any]]) -> str:
    return ", ".join(f"{p['name']} ({p['title']})" for p in people)


# The intents.


def _is_introduction(match: re.Match[str], turn: Turn) -> bool:
    phrase, name = match[1].lower(), match[2]
    return phrase in ("my name is", "call me") or name[0].isupper() or turn.directory.find(name) is not None


def _introduce(text: str, match: re.Match[str], turn: Turn) -> Answer:
    words = match[2].split()
    name = " ".join(w.capitalize() for w in words)
    if len(words) > 1 and turn.directory.find(name) is None:
        name = words[0].capitalize()
    person = turn.lookup(name)
    turn.state.user = person
    turn.state.user_name = person.name if person else name
    if person:
        intro = Answer(
            "introduction",
            f"Nice to meet you, {person.name}! I found you in the directory: {person.title} on the {person.team} team.",
            {"user": person.to_dict()},
        )
    else:
        intro = Answer(
            "introduction",
            f"Nice to meet you, {name}! I couldn't find you in the Acme directory, so I can't answer "
            "questions about your own records.",
            {"user": None, "name": name},
        )
    rest = (text[: match.start()] + text[match.end() :]).strip(" ,.!?;")
    if rest:
        follow = answer(rest, turn)
        if follow.intent not in ("greeting", "fallback", "thanks"):
            return Answer(follow.intent, f"{intro.text} {follow.text}", follow.data)
    return intro


def _create_reminder(rest: str, turn: Turn) -> Answer:
    day = parse_day(rest, turn.directory.today)
    what = _DAY_PHRASE.sub("", rest, count=1) if day else rest
    what = re.sub(r"^\s*(?:to|that|about)\s+", "", what.strip(), flags=_I).strip(" .!?,;:")
    if not what:
        return Answer.error("reminder", 'What should I remind you about? Try "Remind me to submit my timesheet".')
    arguments = {"text": what, "day": day[0]} if day else {"text": what}
    reminder = turn.call("create_reminder", arguments)
    return Answer(
        "create_reminder",
        f'Done! I created reminder {reminder["id"]}: "{reminder["text"]}" {_when(reminder)}.',
        {"reminder": reminder},
    )


def _when(reminder: dict[str, Any]) -> str:
    if not reminder["day"]:
        return "(no day set)"
    if reminder["day"] == reminder["date"]:
        return f"for {reminder['day']}"
    return f"for {reminder['day']} ({reminder['date']})"


def _list_reminders(turn: Turn) -> Answer:
    reminders = turn.call("list_reminders", {})
    if not reminders:
        return Answer("list_reminders", "You have no reminders yet.", {"reminders": []})
    items = "; ".join(f'{r["id"]} "{r["text"]}" {_when(r)}' for r in reminders)
    count = f"{len(reminders)} reminder{'s' if len(reminders) != 1 else ''}"
    return Answer("list_reminders", f"You have {count}: {items}.", {"reminders": reminders})


def _unsupported(text: str, turn: Turn) -> Answer:
    match = _UNSUPPORTED.search(text)
    assert match is not None
    word = match[1].lower()
    what = {"phone": "phone numbers", "phone number": "phone numbers", "mobile": "phone numbers"}.get(word)
    what = what or {"address": "home addresses", "birthday": "birthdays"}.get(word, "salary information")
    person = _subject(text, turn)
    if isinstance(person, Employee):
        reply = f"Sorry, I don't have access to {what}. You can reach {person.name} by email at {person.email}."
        return Answer("unsupported", reply, {"error": f"no access to {what}", "email": person.email})
    return Answer.error("unsupported", f"Sorry, I don't have access to {what}.")


def _reports(text: str, turn: Turn) -> Answer:
    person = _subject(text, turn)
    if not isinstance(person, Employee):
        return person or _need_person("reports")
    reports = turn.call("list_reports", {"manager_id": person.id})
    data = {"manager": {"id": person.id, "name": person.name}, "reports": reports}
    if not reports:
        return Answer("reports", f"{person.name} has no direct reports.", data)
    return Answer("reports", f"{person.name} has {len(reports)} direct reports: {_people(reports)}.", data)


def _manager(text: str, turn: Turn) -> Answer:
    person = _subject(text, turn)
    if not isinstance(person, Employee):
        return person or _need_person("manager")
    data: dict[str, Any] = {"employee": {"id": person.id, "name": person.name}, "manager": None}
    if person.manager_id is None:
        return Answer("manager", f"{person.name} is the {person.title} and has no manager in the directory.", data)
    manager = turn.lookup_id(person.manager_id)
    assert manager is not None
    turn.state.last_person = manager
    data["manager"] = manager.to_dict()
    whose = "Your" if _is_you(person, turn) else f"{person.name}'s"
    return Answer("manager", f"{whose} manager is {manager.name} ({manager.title}, {manager.email}).", data)


def _time_off(text: str, turn: Turn) -> Answer:
    lowered = text.lower()
    kind = next((v for k, v in _OFF_TYPES.items() if k in lowered), None)
    period = parse_period(text, turn.directory.today)
    team = _team_in(text, turn)
    person = None if team and not _mention(text, turn) else _subject(text, turn)
    if isinstance(person, Answer):
        return person
    if person is None:
        return _time_off_everyone(kind, period, team, turn)
    entries = [e for e in turn.call("get_time_off", {"user_id": person.id}) if not kind or e["type"] == kind]
    if period:
        start, end = period.start.isoformat(), period.end.isoformat()
        entries = [e for e in entries if e["start"] <= end and e["end"] >= start]
    data = {
        "user_id": person.id,
        "name": person.name,
        "period": period.to_dict() if period else None,
        "type": kind,
        "out": bool(entries),
        "time_off": entries,
    }
    what = kind or "time off"
    listed = "; ".join(_describe(e) for e in entries)
    if period and entries:
        return Answer("time_off", f"Yes, {person.name} is out {period.describe()}: {listed}.", data)
    if period:
        return Answer("time_off", f"No, {person.name} has no {what} {period.describe()}.", data)
    if not entries:
        return Answer("time_off", f"{person.name} has no upcoming {what} booked.", data)
    bookings = f"{len(entries)} upcoming {what} booking{'s' if len(entries) != 1 else ''}"
    return Answer("time_off", f"{person.name} has {bookings}: {listed}.", data)


def _time_off_everyone(kind: str | None, period: Period | None, team: str | None, turn: Turn) -> Answer:
    arguments: dict[str, Any] = {}
    if period:
        arguments = {"start": period.start.isoformat(), "end": period.end.isoformat()}
    if team:
        arguments["team"] = team
    entries = [e for e in turn.call("get_time_off", arguments) if not kind or e["type"] == kind]
    data = {"period": period.to_dict() if period else None, "team": team, "type": kind, "time_off": entries}
    where = f" on the {team} team" if team else ""
    when = period.describe() if period else "in the coming months"
    if not entries:
        return Answer("time_off", f"Nobody{where} has {kind or 'time off'} booked {when}.", data)
    listed = "; ".join(f"{e['name']} ({_describe(e)})" for e in entries)
    return Answer("time_off", f"Time off{where} {when}: {listed}.", data)


_OFF_LABELS = {"personal": "personal day", "parental": "parental leave", "sick": "sick leave"}


def _describe(entry: dict[str, Any]) -> str:
    kind = _OFF_LABELS.get(entry["type"], entry["type"])
    if entry["start"] == entry["end"]:
        return f"{kind} on {entry['start']}"
    return f"{kind} from {entry['start']} to {entry['end']}"


def _team(text: str, turn: Turn) -> Answer:
    team = _team_in(text, turn)
    person: Employee | None = None
    if team is None:
        subject = _subject(text, turn)
        if isinstance(subject, Answer):
            return subject
        if subject is None:
            teams = turn.directory.teams
            listing = f"{', '.join(teams[:-1])} and {teams[-1]}"
            return Answer("teams", f"Acme has {len(teams)} teams: {listing}.", {"teams": teams})
        person, team = subject, subject.team
    members = turn.call("list_team", {"team": team})
    data = {"team": team, "members": members}
    people = f"{len(members)} members: {_people(members)}"
    if person is None:
        return Answer("team", f"The {team} team has {people}.", data)
    who = "You are" if _is_you(person, turn) else f"{person.name} is"
    return Answer("team", f"{who} on the {team} team, which has {people}.", data)


def _email(text: str, turn: Turn) -> Answer:
    person = _subject(text, turn)
    if not isinstance(person, Employee):
        return person or _need_person("email")
    data = {"name": person.name, "email": person.email}
    if _is_you(person, turn):
        return Answer("email", f"Your email is {person.email}.", data)
    return Answer("email", f"{person.name}'s email is {person.email}.", data)


def _lookup(text: str, turn: Turn) -> Answer:
    person = _subject(text, turn)
    if not isinstance(person, Employee):
        return person or Answer.error("need_person", FALLBACK)
    manager = turn.directory.get(person.manager_id)
    data = {**person.to_dict(), "manager_name": manager.name if manager else None}
    boss = f"Manager: {manager.name}." if manager else "Manager: none (top of the organisation)."
    if _is_you(person, turn):
        intro = f"You are {person.name} ({person.id}), {person.title} on the {person.team} team."
    else:
        intro = f"{person.name} ({person.id}) works on the {person.team} team as {person.title}."
    return Answer("lookup", f"{intro} Email: {person.email}. {boss}", data)


def _dates(text: str, turn: Turn) -> list[dt.date]:
    """The dates in `text`, in order: ISO dates, and "January 5" with or without a year.

    Without a year, the month's next occurrence from today is meant (as `parse_day` reads it).
    """
    today = turn.directory.today
    found = []
    for match in _DATE.finditer(text):
        try:
            if match["iso"]:
                found.append(dt.date.fromisoformat(match["iso"]))
                continue
            month = MONTHS.index(match["month"].lower()) + 1
            year = int(match["year"]) if match["year"] else today.year + (month < today.month)
            found.append(dt.date(year, month, int(match["day"])))
        except ValueError:
            continue
    return found


def _long_date(day: dt.date) -> str:
    return f"{calendar.month_name[day.month]} {day.day}, {day.year}"


def _schedule(text: str, turn: Turn) -> Answer:
    """The watsonx `hr_agent` flow: username -> assignment id -> time-off schedule between two dates."""
    state = turn.state
    state.schedule_asked = True
    named = _USERNAME.search(text)
    if named:
        state.username = named[1]
    dates = _dates(text, turn)
    if dates:
        state.schedule_dates = (dates[0].isoformat(), dates[-1].isoformat())
    if not state.username:
        return Answer("schedule", "I can check your time off schedule. What is your username?", {"need": "username"})
    if not state.schedule_dates:
        reply = "Which dates should I check? Tell me a start date and an end date, e.g. 2025-01-01 and 2025-01-30."
        return Answer("schedule", reply, {"need": "dates"})
    assignment = turn.call("get_assignment_id_hr_agent", {"username": state.username})
    if assignment is None:
        unknown, state.username = state.username, None
        return Answer.error("schedule", f"I couldn't find the username {unknown!r} in the HR system.")
    start, end = state.schedule_dates
    arguments = {"assignment_id": assignment, "start_date": start, "end_date": end}
    days = [dt.date.fromisoformat(day) for day in turn.call("get_timeoff_schedule_hr_agent", arguments)]
    state.schedule_asked = False
    data = {
        "assignment_id": assignment,
        "start_date": start,
        "end_date": end,
        "days_off": [d.isoformat() for d in days],
    }
    if not days:
        first, last = (_long_date(dt.date.fromisoformat(d)) for d in (start, end))
        return Answer("schedule", f"You have no time off scheduled between {first} and {last}.", data)
    listed = [_long_date(day) for day in days]
    joined = listed[0] if len(listed) == 1 else f"{', '.join(listed[:-1])} and {listed[-1]}"
    return Answer("schedule", f"Your time off schedule is on {joined}.", data)
