"""Rubric files split into criteria: Proctor decides what the criteria are, not the judge.

A rubric is markdown (Lobu's layout): headings group criteria, and each bullet (`-`, `*`, `+` or `1.`,
nested ones too) is one criterion, its indented continuation lines included. Prose beside bullets (an
introduction such as "Grade the whole conversation") is context, not a criterion. A rubric without any
bullet has one criterion per section that has prose (the whole text when it has no headings).

The judge answers per criterion id; a criterion it leaves out has no verdict, and the rubric check is then
an `error`, never "not met" and never left out of the count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["RubricCriterion", "split_rubric"]

_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^(\s*)(?:[-*+]|\d{1,3}[.)])\s+(.*)$")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


@dataclass(frozen=True, slots=True)
class RubricCriterion:
    """One criterion of a rubric file."""

    id: int
    """1-based position in the rubric: what the judge answers by."""
    text: str
    """The criterion as written (continuation lines joined by spaces)."""
    section: str | None = None
    """The heading it sits under (the nearest one above it), if any."""


def _sections(text: str) -> list[tuple[str | None, list[str]]]:
    sections: list[tuple[str | None, list[str]]] = [(None, [])]
    for line in _COMMENT.sub("", text).splitlines():
        heading = _HEADING.match(line)
        if heading:
            sections.append((heading.group(1).strip() or None, []))
        else:
            sections[-1][1].append(line)
    return sections


def _bullets(lines: list[str]) -> list[str]:
    items: list[list[str]] = []
    indent = -1
    for line in lines:
        bullet = _BULLET.match(line)
        if bullet:
            items.append([bullet.group(2).strip()])
            indent = len(bullet.group(1))
        elif items and line.strip() and (len(line) - len(line.lstrip())) > indent:
            items[-1].append(line.strip())  # a continuation of the bullet above
        elif line.strip():
            indent = -1
            if items:  # prose after a list ends it; the prose is context
                items.append([])
    return [" ".join(item) for item in items if item]


def split_rubric(text: str) -> list[RubricCriterion]:
    """Split a rubric file's markdown into its criteria, in order.

    Args:
        text: The rubric's markdown.

    Returns:
        The criteria (at least one when the text is not blank).
    """
    found: list[tuple[str | None, str]] = []
    for section, lines in _sections(text):
        bullets = _bullets(lines)
        if bullets:
            found.extend((section, bullet) for bullet in bullets)
    if not found:  # no bullets anywhere: each section's prose, else the whole text, is one criterion
        for section, lines in _sections(text):
            prose = " ".join(line.strip() for line in lines if line.strip())
            if prose:
                found.append((section, prose))
    if not found and text.strip():
        found.append((None, " ".join(text.split())))
    return [RubricCriterion(index, criterion, section) for index, (section, criterion) in enumerate(found, 1)]
