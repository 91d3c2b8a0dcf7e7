"""Parametrised cases: `vars:` and `dataset:` rows that expand a case template into one case per row.

A suite (or a case) may declare `vars:`, and a case (or the suite, for every case) a `dataset:`: a CSV,
JSONL, JSON or YAML file relative to the suite file, or an inline list of mappings. Each row expands the
case into one case of its own; the case's strings are Jinja templates over the variables (suite `vars`,
then case `vars`, then the row's columns, the later winning):

```yaml
vars: {greeting: Hello}
cases:
  - name: capital-of-{{ country }}        # a template name; else `name_from:` a column, else `name[row]`
    dataset: {path: capitals.csv}
    turns:
      - content: "{{ greeting }}! What is the capital of {{ country }}?"
        assert: [{type: contains, value: "{{ city }}"}]
```

Rendering runs in a sandboxed Jinja environment (a suite file is data) with strict undefined names: a
name that no variable defines is a located error, at the row that lacks it when other rows have it, else
at the template. A string that is one `{{ expression }}` and nothing else keeps the value's type (a list
from a JSON row stays a list). The suite's `target:` is rendered only where every name a string uses is a
variable (its own run-time names, `{{ session_id }}`, `{{ message }}`, stay for the target); `judge:`
prompts and a `simulate:` prompt are templates of their own and are left alone. A file without `vars:` or
`dataset:` is not touched at all.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from proctor.errors import SuiteIssue

__all__ = ["Expansion", "Row", "uses_params"]

Loc = tuple[str | int, ...]
Position = tuple[int, int]


@dataclass(frozen=True, slots=True)
class Row:
    """One dataset row: its variables and where it stands."""

    number: int
    """1-based row number among the data rows."""
    values: Mapping[str, Any]
    """Its variables."""
    file: str
    """The file the row is in (the suite file for an inline list)."""
    line: int | None
    """1-based line of the row, when known."""
    column: int | None = 1
    """1-based column of the row's start."""

    def where(self) -> str:
        """`file:line` of the row, for messages."""
        return f"{self.file}:{self.line}" if self.line is not None else self.file


@dataclass(slots=True)
class Expansion:
    """A suite document with its parametrised cases expanded, and where each expanded case came from."""

    data: Any
    """The document, ready for validation (`vars:` resolved per case, `dataset:` gone)."""
    positions: dict[Loc, Position]
    """Where each value stands, with an expanded case's locations those of its template."""
    key_positions: dict[Loc, Position]
    """Where each key stands, likewise."""
    origins: dict[int, tuple[int, Row | None]] = field(default_factory=dict)
    """Expanded case index -> (template case index, the row it came from)."""

    def relabel(self, issues: list[SuiteIssue]) -> list[SuiteIssue]:
        """Name an expanded case's problems by its template and row, reporting each problem once."""
        if not self.origins:
            return issues
        out: dict[tuple[Any, ...], SuiteIssue] = {}
        repeats: dict[tuple[Any, ...], int] = {}
        for issue in issues:
            match = re.match(r"^cases\[(\d+)\]", issue.field)
            origin = self.origins.get(int(match.group(1))) if match else None
            if match is None or origin is None:
                out.setdefault((issue,), issue)
                continue
            template, row = origin
            fieldname = f"cases[{template}]{issue.field[match.end() :]}"
            key = (issue.file, issue.line, issue.column, fieldname, issue.message)
            if key in out:
                repeats[key] = repeats.get(key, 0) + 1
                continue
            where = f" (row {row.number}, {row.where()})" if row is not None else ""
            out[key] = SuiteIssue(issue.file, issue.line, issue.column, fieldname + where, issue.message)
        return [
            SuiteIssue(i.file, i.line, i.column, i.field, f"{i.message} (and {repeats[k]} more rows)")
            if k in repeats
            else i
            for k, i in out.items()
        ]


def uses_params(data: Any) -> bool:
    """Whether a suite document declares `vars:` or `dataset:` anywhere (else it is left as it is)."""
    if not isinstance(data, dict):
        return False
    if "vars" in data or "dataset" in data:
        return True
    cases = data.get("cases")
    return isinstance(cases, list) and any(isinstance(c, dict) and ("vars" in c or "dataset" in c) for c in cases)
