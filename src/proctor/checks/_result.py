"""The one result shape every check returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["CheckResult", "CheckStatus"]

CheckStatus = Literal["passed", "failed", "error", "skipped"]
"""`error`: the check could not run (never a score). `skipped`: it was not run, with the reason."""


@dataclass(slots=True)
class CheckResult:
    """What one check found.

    `score` is `None` exactly when the status is `error` or `skipped`: a check that could not run has
    no score, and scoring leaves it out of every average (and counts it).
    """

    name: str
    """Display name (the assertion's `name`, or its type and value)."""
    type: str
    """The check type, e.g. `contains` or `not-regex`."""
    status: CheckStatus
    """`passed`, `failed`, `error` or `skipped`."""
    score: float | None
    """0..1 for `passed`/`failed`; `None` for `error`/`skipped`."""
    weight: float = 1.0
    """Relative weight in the trial score."""
    reason: str = ""
    """What was expected and what was found."""
    turn: int | None = None
    """0-based index of the turn checked; `None` for checks over the whole conversation."""
    details: dict[str, Any] = field(default_factory=dict)
    """Check-specific data (e.g. a judge's raw output)."""
    duration_ns: int | None = field(default=None, compare=False)
    """How long the check took (set by the check phase; not part of the results JSON)."""

    @property
    def scored(self) -> bool:
        """Whether this result counts in averages (passed or failed)."""
        return self.score is not None

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON form used in results files."""
        out: dict[str, Any] = {
            "name": self.name,
            "type": self.type,
            "status": self.status,
            "score": self.score,
            "weight": self.weight,
            "reason": self.reason,
            "turn": self.turn,
        }
        if self.details:
            out["details"] = self.details
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CheckResult:
        """Rebuild a result from its JSON form (for `--resume`)."""
        return cls(
            name=data["name"],
            type=data["type"],
            status=data["status"],
            score=data.get("score"),
            weight=data.get("weight", 1.0),
            reason=data.get("reason", ""),
            turn=data.get("turn"),
            details=data.get("details") or {},
        )
