"""Token and cost accounting by role (`agent`, `judge`, `simulator`, `embedding`), and the spending budget.

`UsageLedger` keeps running totals per (role, model); `snapshot()` freezes them and snapshots subtract,
so the runner can attribute usage to one trial: `after - before`. `Budget` refuses new calls once the
spent total reached its limit.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from proctor.errors import BudgetExceeded, ConfigError
from proctor.transcript import Usage

__all__ = ["Budget", "LedgerSnapshot", "UsageLedger", "UsageTotals"]


@dataclass(frozen=True, slots=True)
class UsageTotals:
    """Summed usage of some calls."""

    calls: int = 0
    """Calls recorded (cache hits included)."""
    cached_calls: int = 0
    """Calls answered from the cache (no tokens, no cost)."""
    prompt_tokens: int = 0
    """Prompt tokens of the calls actually made."""
    completion_tokens: int = 0
    """Completion tokens of the calls actually made."""
    priced_usd: float = 0.0
    """Cost of the calls whose model has a known price, in USD."""
    unpriced_calls: int = 0
    """Calls whose model has no known price (their cost is not in `priced_usd`)."""

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    @property
    def cost_usd(self) -> float | None:
        """The cost in USD; `None` when any call's cost is unknown (`priced_usd` has the known part)."""
        return None if self.unpriced_calls else self.priced_usd

    def __add__(self, other: UsageTotals) -> UsageTotals:
        return UsageTotals(
            self.calls + other.calls,
            self.cached_calls + other.cached_calls,
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.priced_usd + other.priced_usd,
            self.unpriced_calls + other.unpriced_calls,
        )

    def __sub__(self, other: UsageTotals) -> UsageTotals:
        return UsageTotals(
            self.calls - other.calls,
            self.cached_calls - other.cached_calls,
            self.prompt_tokens - other.prompt_tokens,
            self.completion_tokens - other.completion_tokens,
            self.priced_usd - other.priced_usd,
            self.unpriced_calls - other.unpriced_calls,
        )

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON form used in results files."""
        cost = self.cost_usd
        return {
            "calls": self.calls,
            "cached_calls": self.cached_calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost_usd": None if cost is None else round(cost, 6),
            "priced_usd": round(self.priced_usd, 6),
            "unpriced_calls": self.unpriced_calls,
        }


_ZERO = UsageTotals()


class LedgerSnapshot(Mapping[tuple[str, str], UsageTotals]):
    """Frozen totals per `(role, model)`; subtract two to get the usage between them."""

    __slots__ = ("_totals",)

    def __init__(self, totals: Mapping[tuple[str, str], UsageTotals]) -> None:
        self._totals = dict(totals)

    def __getitem__(self, key: tuple[str, str]) -> UsageTotals:
        return self._totals[key]

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self._totals)

    def __len__(self) -> int:
        return len(self._totals)

    def __sub__(self, earlier: LedgerSnapshot) -> LedgerSnapshot:
        diff = {key: totals - earlier._totals.get(key, _ZERO) for key, totals in self._totals.items()}
        return LedgerSnapshot({key: totals for key, totals in diff.items() if totals.calls})

    def by_role(self) -> dict[str, UsageTotals]:
        """Return the totals per role."""
        out: dict[str, UsageTotals] = {}
        for (role, _), totals in self._totals.items():
            out[role] = out.get(role, _ZERO) + totals
        return out

    def by_model(self) -> dict[str, UsageTotals]:
        """Return the totals per model."""
        out: dict[str, UsageTotals] = {}
        for (_, model), totals in self._totals.items():
            out[model] = out.get(model, _ZERO) + totals
        return out

    def total(self) -> UsageTotals:
        """Return the grand total."""
        return sum(self._totals.values(), _ZERO)

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON form: totals by role, by model and overall."""
        return {
            "by_role": {role: totals.to_dict() for role, totals in sorted(self.by_role().items())},
            "by_model": {model: totals.to_dict() for model, totals in sorted(self.by_model().items())},
            "total": self.total().to_dict(),
        }


class UsageLedger:
    """Records each model call's tokens and cost under a role; safe to share across tasks and threads."""

    def __init__(self) -> None:
        self._totals: dict[tuple[str, str], UsageTotals] = {}
        self._lock = threading.Lock()

    def record(
        self, role: str, model: str, usage: Usage | None, cost_usd: float | None, *, cached: bool = False
    ) -> None:
        """Record one call.

        Args:
            role: `agent`, `judge`, `simulator` or `embedding` (other names are kept as given).
            model: The model's name, `provider/model`.
            usage: Tokens used (`None` when unknown: counted as zero).
            cost_usd: The call's cost; `None` when the model has no known price.
            cached: Whether a cache answered (tokens and cost are then not counted).
        """
        if cached:
            prompt = completion = unpriced = 0
            priced = 0.0
        else:
            prompt, completion = (usage.prompt_tokens, usage.completion_tokens) if usage is not None else (0, 0)
            priced, unpriced = cost_usd or 0.0, 1 if cost_usd is None else 0
        key = (role, model)
        with self._lock:
            # the new totals built at once, as `totals + UsageTotals(...)` gives them: one frozen dataclass a
            # call instead of two (each costs a `object.__setattr__` per field)
            totals = self._totals.get(key, _ZERO)
            self._totals[key] = UsageTotals(
                totals.calls + 1,
                totals.cached_calls + (1 if cached else 0),
                totals.prompt_tokens + prompt,
                totals.completion_tokens + completion,
                totals.priced_usd + priced,
                totals.unpriced_calls + unpriced,
            )

    def snapshot(self) -> LedgerSnapshot:
        """Return the totals so far, frozen (subtract an earlier snapshot to get what happened since)."""
        with self._lock:
            return LedgerSnapshot(self._totals)

    def by_role(self) -> dict[str, UsageTotals]:
        """Return the totals per role so far."""
        return self.snapshot().by_role()

    def total(self) -> UsageTotals:
        """Return the grand total so far."""
        return self.snapshot().total()


class Budget:
    """A spending limit in USD across every call charged to it.

    A call is refused (`BudgetExceeded`) when it would start after the spent total reached the limit;
    calls already in flight finish, so the total may end a little above the limit. Calls of models with
    no known price cannot be charged: they are counted in `unpriced_calls`.
    """

    def __init__(self, usd: float) -> None:
        """Build a budget.

        Args:
            usd: The limit in USD, above 0.

        Raises:
            ConfigError: The limit is not positive.
        """
        if not usd > 0:
            raise ConfigError(f"a budget must be above 0 USD, not {usd}")
        self.limit_usd = float(usd)
        """The limit, in USD."""
        self.spent_usd = 0.0
        """What has been charged so far, in USD."""
        self.unpriced_calls = 0
        """Calls charged with an unknown cost."""
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Budget(limit_usd={self.limit_usd}, spent_usd={self.spent_usd:.6f})"

    @property
    def remaining_usd(self) -> float:
        """What is left, in USD (never negative)."""
        return max(0.0, self.limit_usd - self.spent_usd)

    @property
    def exhausted(self) -> bool:
        """Whether the spent total reached the limit."""
        return self.spent_usd >= self.limit_usd

    def charge(self, cost_usd: float | None) -> None:
        """Add a finished call's cost (`None`: unknown, counted in `unpriced_calls`)."""
        with self._lock:
            if cost_usd is None:
                self.unpriced_calls += 1
            else:
                self.spent_usd += cost_usd

    def check(self, what: str = "another model call") -> None:
        """Refuse to start new work once the limit is reached.

        Args:
            what: What is about to start, for the message.

        Raises:
            BudgetExceeded: The spent total reached the limit.
        """
        if self.spent_usd >= self.limit_usd:
            raise BudgetExceeded(
                f"budget of ${self.limit_usd:g} reached (spent ${self.spent_usd:.4f}): not starting {what}",
                limit_usd=self.limit_usd,
                spent_usd=self.spent_usd,
            )
