"""The models a run uses besides the agent: judges and simulated users, with a shared cache, ledger and budget."""

from __future__ import annotations

from typing import Any

from proctor.checks._judging import Judge
from proctor.drivers.simulator import Simulator
from proctor.errors import ConfigError
from proctor.models import Budget, Model, ModelCache, ModelSettings, UsageLedger, default_prices, get_model, load_prices
from proctor.results import TrialResult
from proctor.run.options import RunOptions
from proctor.suite import Case

__all__ = ["ModelServices"]


class ModelServices:
    """The models a run uses besides the agent: judges with their shared cache, ledger and budget."""

    def __init__(self, options: RunOptions) -> None:
        self.options = options
        self.ledger = UsageLedger()
        self.budget = Budget(options.budget) if options.budget is not None else None
        self.prices = load_prices(options.prices) if options.prices is not None else default_prices()
        self.cache = (
            (ModelCache(options.cache_dir) if options.cache_dir is not None else ModelCache())
            if options.cache
            else None
        )
        self._judges: dict[tuple[Any, ...], Judge] = {}
        self._simulators: dict[tuple[Any, ...], Simulator] = {}
        self._simulator_models: dict[str, Model] = {}

    def judge_for(self, case: Case) -> Judge | None:
        """The `Judge` for a case, or `None` when no judge model is configured (judged checks skip)."""
        spec = case.judge
        name = self.options.judge or (spec.model if spec is not None else None)
        if name is None:
            return None
        prompts = dict(spec.prompts) if spec is not None else {}
        concurrency = self.options.judge_concurrency or (spec.concurrency if spec is not None else 8)
        rpm = self.options.judge_rpm or (spec.rpm if spec is not None else None)
        key = (name, tuple(sorted(prompts.items())), case.file.parent, concurrency, rpm)
        if key not in self._judges:
            settings = ModelSettings(
                concurrency=concurrency,
                rpm=rpm,
                timeout=self.options.judge_timeout,
                cache=self.cache,
                ledger=self.ledger,
                budget=self.budget,
                prices=self.prices,
            )
            try:
                judge = Judge(get_model(name, settings=settings), prompts, case.file.parent)
            except OSError as exc:
                raise ConfigError(f"judge prompts of {case.file}: {exc}") from None
            self._judges[key] = judge
        return self._judges[key]

    def simulator_for(self, case: Case) -> Simulator | None:
        """The `Simulator` for a simulated case: `--simulator`, the suite's `simulator:`, else the judge model.

        `None` when no model is configured (the case's trials are then `skipped` with the reason).
        """
        assert case.simulate is not None
        name = self.options.simulator or case.simulator or self.options.judge
        if name is None and case.judge is not None:
            name = case.judge.model
        if name is None:
            return None
        key = (name, case.simulate.prompt)
        if key not in self._simulators:
            if name not in self._simulator_models:
                settings = ModelSettings(
                    concurrency=self.options.judge_concurrency or 8,
                    cache=None,  # a simulated user samples (temperature > 0): never cached
                    ledger=self.ledger,
                    budget=self.budget,
                    prices=self.prices,
                )
                self._simulator_models[name] = get_model(name, settings=settings)
            self._simulators[key] = Simulator(self._simulator_models[name], case.simulate.prompt)
        return self._simulators[key]

    def account_agent(self, trial: TrialResult, model: str | None) -> None:
        """Record the agent's tokens (and cost, when the model's price is known) for the trial."""
        cost = self.prices.cost(model, trial.usage) if model else None
        trial.agent_cost_usd = cost
        self.ledger.record("agent", model or "agent", trial.usage, cost)
        if self.budget is not None:
            self.budget.charge(cost)

    async def aclose(self) -> None:
        """Close the judge models' connections."""
        for judge in self._judges.values():
            await judge.model.aclose()
        for model in self._simulator_models.values():
            await model.aclose()
