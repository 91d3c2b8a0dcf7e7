"""The demo agent's bundled HR data and its frozen calendar.

The data (`data/employees.json`, `data/time_off.json`, and `data/hr_agent.json` for the watsonx-style
`hr_agent` tools) is read once per `Directory`. Dates never come from the clock: "today" is the data's
`reference_date` (Monday 2025-06-02), so every answer the demo agent gives is reproducible.
"""

from __future__ import annotations

import calendar
import datetime as dt
import json
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

__all__ = ["Directory", "Employee", "Period", "TimeOff", "parse_day", "parse_period"]

WEEKDAYS = [name.lower() for name in calendar.day_name]
MONTHS = [name.lower() for name in calendar.month_name if name]


@dataclass(frozen=True, slots=True)
class Employee:
    """One person in the directory."""

    id: str
    """Stable id, e.g. `u1`."""
    name: str
    """Full name, e.g. `Alice Chen`."""
    email: str
    """Work email."""
    team: str
    """Team name."""
    title: str
    """Job title."""
    manager_id: str | None
    """The manager's id; `None` at the top."""

    @property
    def first_name(self) -> str:
        """The first word of the name."""
        return self.name.split()[0]

    def to_dict(self) -> dict[str, Any]:
        """Return the record as the `lookup_user` tool reports it."""
        return {
            "id": self.id,
            "name": self.name,
            "email": self.email,
            "team": self.team,
            "title": self.title,
            "manager_id": self.manager_id,
        }


@dataclass(frozen=True, slots=True)
class TimeOff:
    """One booked absence (both ends inclusive)."""

    user_id: str
    """Whose absence."""
    type: str
    """`vacation`, `sick`, `personal`, `conference` or `parental`."""
    start: dt.date
    """First day off."""
    end: dt.date
    """Last day off."""

    def overlaps(self, period: Period) -> bool:
        """Whether any day of the absence falls inside `period`."""
        return self.start <= period.end and self.end >= period.start

    def describe(self) -> str:
        """A short phrase, e.g. `vacation from 2025-06-09 to 2025-06-13`."""
        if self.start == self.end:
            return f"{self.type} on {self.start.isoformat()} ({calendar.day_name[self.start.weekday()]})"
        return f"{self.type} from {self.start.isoformat()} to {self.end.isoformat()}"

    def to_dict(self) -> dict[str, Any]:
        """Return the entry as the `get_time_off` tool reports it."""
        return {"type": self.type, "start": self.start.isoformat(), "end": self.end.isoformat()}


@dataclass(frozen=True, slots=True)
class Period:
    """An inclusive range of days, with the words the user used for it."""

    start: dt.date
    """First day."""
    end: dt.date
    """Last day."""
    label: str
    """How to say it, e.g. `next week`."""

    def describe(self) -> str:
        """E.g. `next week (2025-06-09 to 2025-06-15)`."""
        if self.start == self.end:
            return f"{self.label} ({self.start.isoformat()})"
        return f"{self.label} ({self.start.isoformat()} to {self.end.isoformat()})"

    def to_dict(self) -> dict[str, str]:
        """Return the JSON form."""
        return {"label": self.label, "start": self.start.isoformat(), "end": self.end.isoformat()}


class Directory:
    """The employees and time-off calendar, loaded from the bundled JSON files."""

    def __init__(self) -> None:
        files = resources.files("proctor.demo") / "data"
        people = json.loads((files / "employees.json").read_text(encoding="utf-8"))
        absences = json.loads((files / "time_off.json").read_text(encoding="utf-8"))
        self.company: str = people["company"]
        self.teams: list[str] = list(people["teams"])
        self.employees: list[Employee] = [Employee(**item) for item in people["employees"]]
        self.today: dt.date = dt.date.fromisoformat(absences["reference_date"])
        self.time_off: list[TimeOff] = [
            TimeOff(
                item["user_id"],
                item["type"],
                dt.date.fromisoformat(item["start"]),
                dt.date.fromisoformat(item["end"]),
            )
            for item in absences["entries"]
        ]
        self._by_id = {person.id: person for person in self.employees}
        hr_system = json.loads((files / "hr_agent.json").read_text(encoding="utf-8"))
        self.accounts: dict[str, str] = {a["username"].lower(): a["assignment_id"] for a in hr_system["accounts"]}
        """Username (lower-case) -> assignment id, for the watsonx-style `hr_agent` tools."""
        self.days_off: dict[str, list[dt.date]] = {
            key: [dt.date.fromisoformat(day) for day in days] for key, days in hr_system["time_off"].items()
        }
        """Assignment id -> booked days off."""

    def get(self, user_id: str | None) -> Employee | None:
        """The employee with this id, if any."""
        return self._by_id.get(user_id) if user_id else None

    def find(self, name: str) -> Employee | None:
        """The employee whose full or first name is `name` (case-insensitive), if exactly one."""
        wanted = name.strip().lower()
        exact = [p for p in self.employees if p.name.lower() == wanted]
        if exact:
            return exact[0]
        first = [p for p in self.employees if p.first_name.lower() == wanted]
        return first[0] if len(first) == 1 else None

    def members(self, team: str) -> list[Employee]:
        """The team's members in directory order."""
        return [p for p in self.employees if p.team.lower() == team.lower()]

    def reports(self, manager_id: str) -> list[Employee]:
        """The manager's direct reports in directory order."""
        return [p for p in self.employees if p.manager_id == manager_id]

    def absences(self, user_id: str | None = None, period: Period | None = None) -> list[TimeOff]:
        """Time off, optionally for one person and overlapping a period; without a period, upcoming only."""
        return [
            entry
            for entry in self.time_off
            if (user_id is None or entry.user_id == user_id)
            and (entry.overlaps(period) if period else entry.end >= self.today)
        ]


def parse_day(text: str, today: dt.date) -> tuple[str, dt.date] | None:
    """Find a day in `text`: `today`, `tomorrow`, a weekday (the next one), an ISO date or `June 10`.

    Returns:
        The day as the user would say it (e.g. `Friday`) and its date, or `None`.
    """
    lowered = text.lower()
    if re.search(r"\btoday\b", lowered):
        return "today", today
    if re.search(r"\btomorrow\b", lowered):
        return "tomorrow", today + dt.timedelta(days=1)
    iso = re.search(r"\b(\d{4})-(\d{2})-(\d{2})\b", lowered)
    if iso:
        try:
            day = dt.date(int(iso[1]), int(iso[2]), int(iso[3]))
        except ValueError:
            return None
        return day.isoformat(), day
    dated = re.search(rf"\b({'|'.join(MONTHS)})\s+(\d{{1,2}})\b", lowered)
    if dated:
        month = MONTHS.index(dated[1]) + 1
        year = today.year if month >= today.month else today.year + 1
        try:
            day = dt.date(year, month, int(dated[2]))
        except ValueError:
            return None
        return f"{dated[1].capitalize()} {int(dated[2])}", day
    weekday = re.search(rf"\b({'|'.join(WEEKDAYS)})\b", lowered)
    if weekday:
        ahead = (WEEKDAYS.index(weekday[1]) - today.weekday()) % 7 or 7
        return weekday[1].capitalize(), today + dt.timedelta(days=ahead)
    return None


def parse_period(text: str, today: dt.date) -> Period | None:
    """Find a period in `text`: `this week`, `next week`, `this month`, `in July`, or any single day."""
    lowered = text.lower()
    monday = today - dt.timedelta(days=today.weekday())
    if re.search(r"\bnext week\b", lowered):
        start = monday + dt.timedelta(days=7)
        return Period(start, start + dt.timedelta(days=6), "next week")
    if re.search(r"\bthis week\b", lowered):
        return Period(monday, monday + dt.timedelta(days=6), "this week")
    month_match = re.search(rf"\b(?:in|during|for)\s+({'|'.join(MONTHS)})\b", lowered)
    if month_match or re.search(r"\bthis month\b", lowered):
        month = MONTHS.index(month_match[1]) + 1 if month_match else today.month
        year = today.year if month >= today.month else today.year + 1
        last = calendar.monthrange(year, month)[1]
        label = f"in {calendar.month_name[month]}" if month_match else "this month"
        return Period(dt.date(year, month, 1), dt.date(year, month, last), label)
    day = parse_day(text, today)
    if day:
        label = day[0] if day[0] in ("today", "tomorrow") else f"on {day[0]}"
        return Period(day[1], day[1], label)
    return None
