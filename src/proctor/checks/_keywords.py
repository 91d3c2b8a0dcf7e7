"""Keywords found in a reply in normalised forms, as IBM's watsonx evaluation matches them.

IBM's framework asks an LLM whether a reply holds each keyword, so `20250105` is found in "January 5,
2025". Here that is deterministic: case, spacing and thousands separators are ignored, and a keyword that
is a date matches the same date in any common spelling (`2025-01-05`, `20250105`, `2025/01/05`,
`01/05/2025` (US first, then day-first), `January 5, 2025`, `Jan 5th 2025`, `5 January 2025`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date, datetime

__all__ = ["keyword_found", "parse_date"]

_MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
_MON = "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
_DATE_PATTERNS: tuple[tuple[re.Pattern[str], Sequence[str]], ...] = (
    (re.compile(r"\b\d{4}-\d{1,2}-\d{1,2}\b"), ("%Y-%m-%d",)),
    (re.compile(r"\b\d{4}/\d{1,2}/\d{1,2}\b"), ("%Y/%m/%d",)),
    (re.compile(r"\b\d{8}\b"), ("%Y%m%d",)),
    (re.compile(r"\b\d{1,2}/\d{1,2}/\d{4}\b"), ("%m/%d/%Y", "%d/%m/%Y")),
    (
        re.compile(rf"\b(?:{_MONTHS}|{_MON})\.? \d{{1,2}}(?:st|nd|rd|th)?,? \d{{4}}\b", re.IGNORECASE),
        ("%B %d %Y", "%b %d %Y"),
    ),
    (
        re.compile(rf"\b\d{{1,2}}(?:st|nd|rd|th)? (?:of )?(?:{_MONTHS}|{_MON})\.?,? \d{{4}}\b", re.IGNORECASE),
        ("%d %B %Y", "%d %b %Y"),
    ),
)


def parse_date(text: str) -> date | None:
    """The date `text` spells (alone), in any of the common forms; `None` when it is not one."""
    text = text.strip()
    for pattern, formats in _DATE_PATTERNS:
        match = pattern.fullmatch(text)
        if match is not None:
            return _parse_date(match.group(0), formats)
    return None


def _parse_date(text: str, formats: Sequence[str]) -> date | None:
    cleaned = re.sub(r"(\d)(st|nd|rd|th)\b", r"\1", text, flags=re.IGNORECASE)
    cleaned = re.sub(r"\bof\b|[.,]", " ", cleaned, flags=re.IGNORECASE)
    cleaned = re.sub(r"\bsept\b", "sep", " ".join(cleaned.split()), flags=re.IGNORECASE)
    for fmt in formats:
        try:
            return datetime.strptime(cleaned, fmt).date()  # noqa: DTZ007 (a calendar date, no time)
        except ValueError:
            continue
    return None


def _dates_in(text: str) -> set[date]:
    found: set[date] = set()
    for pattern, formats in _DATE_PATTERNS:
        for match in pattern.finditer(text):
            parsed = _parse_date(match.group(0), formats)
            if parsed is not None:
                found.add(parsed)
    return found


def _plain(text: str) -> str:
    """Case-folded, spacing collapsed, thousands separators dropped (`1,000` -> `1000`)."""
    return " ".join(re.sub(r"(?<=\d),(?=\d{3}\b)", "", text).casefold().split())


def keyword_found(keyword: str, text: str) -> bool:
    """Whether `text` holds `keyword`, in normalised forms (a date keyword matches any spelling of it)."""
    if _plain(keyword) in _plain(text):
        return True
    wanted = parse_date(keyword)
    return wanted is not None and wanted in _dates_in(text)
