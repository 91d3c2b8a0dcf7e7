"""The worker: a Ray actor that runs trials on its own event loop, with its own targets, graphs and models.

It opens what a local run opens (`proctor.run.batch`'s resources: one built target per distinct spec with
its connection pool, the graphs its cases need, the judge and simulator models) on its first trial, in
its own process, and runs trials with the same code as a local run. Its models take their slots from the
cluster's `Limiter`; the budget is the driver's (it charges what each trial's calls cost).
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import replace
from typing import Any

import ray

from proctor.cluster._limiter import RemoteLimits, current_dispatch
from proctor.models import ManagedModel
from proctor.results import TrialResult
from proctor.run.batch import _Resources, _run_one  # the same trial code and resources as a local run
from proctor.run.options import RunOptions
from proctor.run.plan import Plan, TrialWork
from proctor.run.trial import case_key

__all__ = ["TrialWorker", "worker_options"]


def worker_options(options: RunOptions) -> RunOptions:
    """What a worker runs with: no files, no Ctrl-C handling, no budget (the driver holds those)."""
    return replace(options, write_results=False, handle_sigint=False, budget=None, resume=None)


def worker_plan(plan: Plan) -> Plan:
    """The plan a worker needs: cases, targets, graphs, variables (not the trials kept or to do)."""
    return replace(plan, kept={}, todo=[])


class TrialWorker:
    """Runs trials of one plan (a Ray actor: `ray.remote(TrialWorker)`; restarted by Ray when it dies)."""

    def __init__(self, plan: Plan, options: RunOptions, limiter: str, env: dict[str, str]) -> None:
        os.environ.update(env)  # the driver's keys and endpoints (a worker is a process of its own)
        self.plan, self.options = plan, options
        self.limiter: Any = ray.get_actor(limiter)
        self.cases = {case_key(case): case for case in plan.cases}
        self.resources: _Resources | None = None
        self._opening: asyncio.Future[_Resources] | None = None

    def pid(self) -> int:
        """This worker's process id."""
        return os.getpid()

    async def run(self, key: str, number: int, dispatch: str) -> TrialResult:
        """Run trial `number` of the case `key`; model slots are leased to `dispatch`."""
        if self._opening is None:  # the first trials wait for one opening
            self._opening = asyncio.ensure_future(self._open())
        resources = await asyncio.shield(self._opening)
        current_dispatch.set(dispatch)
        return await _run_one(TrialWork(self.cases[key], number, key), self.plan, self.options, resources)

    async def _open(self) -> _Resources:
        plan, options = self.plan, self.options
        resources = _Resources(plan, options)
        try:
            await resources.start_states((c for c in plan.cases if case_key(c) in plan.state_keys), options)
            resources.start_models(plan, options)
        except BaseException:
            await resources.aclose()
            raise
        if resources.models is not None:
            models = [judge.model for judge in resources.judges.values() if judge is not None]
            models += [s.model for s in resources.simulators.values() if s is not None]
            for model in {id(m): m for m in models}.values():
                if isinstance(model, ManagedModel):
                    limits = model.limits
                    model.limits = RemoteLimits(  # type: ignore[assignment]  # the same slot() protocol
                        self.limiter, limits.name, concurrency=limits.concurrency, rpm=limits.rpm
                    )
        self.resources = resources
        return resources

    async def close(self) -> None:
        """Close the targets, graphs and models this worker opened."""
        if self.resources is not None:
            resources, self.resources, self._opening = self.resources, None, None
            await resources.aclose()
