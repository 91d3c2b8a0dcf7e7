"""The driver's side of a cluster run: workers (Ray actors), the limiter, and one trial at a time to them.

The driver keeps the run's own executor (`proctor.run.execute`): its bounded in-flight count is the run's
agent concurrency over every worker, and its stop rules (budget, `--max-errors`) are asked before each
trial as in a local run. Each trial goes to the worker with the fewest in flight. A worker that dies takes
only its in-flight trials with it: each is sent again to another worker (Ray restarts the dead one), at
most `max_attempts` times, and is recorded once, when a result comes back. Cancelling the run (Ctrl-C)
cancels the trials in flight on the cluster.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

import anyio
import ray
from ray.exceptions import ActorDiedError, ActorUnavailableError, RayActorError, RayTaskError

from proctor.cluster._connect import connect
from proctor.cluster._limiter import Limiter
from proctor.cluster._settings import ClusterSettings
from proctor.cluster._worker import TrialWorker, worker_options, worker_plan
from proctor.errors import ConfigError
from proctor.results import TrialResult
from proctor.run.batch import RemoteTrials, TrialRunner
from proctor.run.options import RunOptions
from proctor.run.plan import Plan, TrialWork
from proctor.run.services import ModelServices
from proctor.run.trial import error_trial

__all__ = ["forwarded_env", "remote_trials"]

FORWARDED_PREFIXES = (
    "PROCTOR_", "OPENAI_", "ANTHROPIC_", "GEMINI_", "GOOGLE_", "AWS_", "OLLAMA_", "LITELLM_",
    "LOBU_", "GATEWAY_", "CLAUDE_", "NEO_", "REDIS_",
)  # fmt: skip
"""The driver's environment variables each worker gets: what Proctor, its model providers, targets and
graphs read (keys and endpoints), so a worker on another node reaches what the driver would."""

_LOST = (ActorDiedError, ActorUnavailableError, RayActorError)
"""What a trial's call raises when its worker died or cannot be reached (its work is lost, not failed)."""


def forwarded_env() -> dict[str, str]:
    """The driver's variables a worker gets (`FORWARDED_PREFIXES`); they travel in the actors' arguments."""
    return {name: value for name, value in os.environ.items() if name.startswith(FORWARDED_PREFIXES)}


def remote_trials(settings: ClusterSettings) -> RemoteTrials:
    """What `proctor.run.run(remote=...)` takes to run the trials on the cluster `settings` names.

    Use `proctor.cluster.remote_trials`: it prepares the environment before Ray is imported.
    """

    def open_on(plan: Plan, options: RunOptions, models: ModelServices | None) -> Any:
        return _open(settings, plan, options, models)

    return open_on


@asynccontextmanager
async def _open(
    settings: ClusterSettings, plan: Plan, options: RunOptions, models: ModelServices | None
) -> AsyncIterator[TrialRunner]:
    connection = connect(settings.address)
    try:
        pool = _Pool(settings, plan, options, models)
        try:
            await pool.ready()
            yield pool.run
        finally:
            with anyio.CancelScope(shield=True):
                await pool.close()
    finally:
        connection.close()


def _room(settings: ClusterSettings) -> str:
    cpus = ray.cluster_resources().get("CPU", 0)  # type: ignore[no-untyped-call]
    return f"(the cluster has {cpus:g} CPUs; each worker asks for {settings.cpus_per_worker:g})"


class _Pool:
    def __init__(
        self, settings: ClusterSettings, plan: Plan, options: RunOptions, models: ModelServices | None
    ) -> None:
        self.settings, self.models = settings, models
        self.run_tag = f"proctor-{plan.run_id}-{uuid.uuid4().hex[:8]}"
        cpus = int(ray.cluster_resources().get("CPU", 1))  # type: ignore[no-untyped-call]
        count = settings.workers or max(1, min(cpus, options.concurrency))
        if settings.address == "auto" and count * settings.cpus_per_worker > cpus:
            # a local instance does not grow: these workers would never start
            raise ConfigError(f"--cluster: {count} workers do not fit {_room(settings)}: ask for fewer")
        limiter = f"{self.run_tag}-limiter"
        self.limiter: Any = ray.remote(Limiter).options(name=limiter, max_concurrency=10_000).remote()
        shared = worker_plan(plan), worker_options(options)
        actor = ray.remote(TrialWorker)
        env = forwarded_env()
        self.workers: list[Any] = [
            actor.options(
                name=f"{self.run_tag}-worker-{n}",
                num_cpus=settings.cpus_per_worker,
                max_restarts=-1,  # a worker that dies comes back (on a live node) for the trials to come
                max_task_retries=0,  # its lost trials are sent again by the driver, to another worker
                max_concurrency=options.concurrency + 2,  # + `pid` and `close` beside a full load
                scheduling_strategy="SPREAD",
            ).remote(*shared, limiter, env)  # by name: a handle argument would not survive a restart
            for n in range(count)
        ]
        self.in_flight = [0] * count
        self.suspect: set[int] = set()  # workers lost and not yet answering again
        self.watches: set[asyncio.Task[None]] = set()
        self.dispatches = itertools.count(1)

    async def ready(self) -> None:
        """Wait until every worker has started (fail early: not enough CPUs, Proctor missing on a node).

        Raises:
            ConfigError: A worker did not start within `ClusterSettings.start_timeout`, or failed to.
        """
        settings = self.settings
        refs = [worker.pid.remote() for worker in self.workers]
        ready, _ = await anyio.to_thread.run_sync(
            lambda: ray.wait(refs, num_returns=len(refs), timeout=settings.start_timeout), abandon_on_cancel=True
        )
        for ref in ready:
            try:
                await ref
            except _LOST as exc:
                raise ConfigError(f"--cluster: a worker failed to start: {exc}") from None
        if len(ready) < len(refs):
            raise ConfigError(
                f"--cluster: {len(ready)} of {len(refs)} workers started within {settings.start_timeout:g} s "
                f"{_room(settings)}: ask for fewer workers (--cluster-workers), or allow more time"
            )

    async def run(self, work: TrialWork) -> TrialResult:
        """Run one trial on the cluster (see the module's docstring)."""
        avoid: int | None = None
        failures: list[str] = []
        for _ in range(self.settings.max_attempts):
            index = self._pick(avoid)
            dispatch = f"{self.run_tag}:{next(self.dispatches)}"
            self.in_flight[index] += 1
            ref = self.workers[index].run.remote(work.key, work.number, dispatch)
            try:
                trial: TrialResult = await ref
            except _LOST as exc:
                failures.append(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
                await self._release(dispatch)
                self._suspect(index)
                avoid = index
                continue
            except RayTaskError as exc:  # the trial's own code raised: the same error as in a local run
                raise exc.cause if isinstance(exc.cause, Exception) else exc from None
            except BaseException:  # cancelled (Ctrl-C, or another trial's error): stop it on the cluster
                ray.cancel(ref)
                await self._release(dispatch)
                raise
            finally:
                self.in_flight[index] -= 1
            self._charge(trial)
            return trial
        reason = f"its worker died {len(failures)} times ({failures[-1]})"
        return error_trial(work.case, work.number, reason, "WorkerLost")

    def _pick(self, avoid: int | None) -> int:
        """The worker with the fewest trials in flight, a lost one (or the one this trial was lost on) last."""
        order = sorted(range(len(self.workers)), key=lambda i: (i == avoid or i in self.suspect, self.in_flight[i]))
        return order[0]

    def _suspect(self, index: int) -> None:
        """Send no new trials to a lost worker until it answers again (Ray restarts it)."""
        if index in self.suspect:
            return
        self.suspect.add(index)

        async def watch() -> None:
            try:
                await self.workers[index].pid.remote()
            except _LOST:
                await asyncio.sleep(1)
                self.suspect.discard(index)
                self._suspect(index)  # still restarting: ask again
                return
            self.suspect.discard(index)

        task = asyncio.ensure_future(watch())
        self.watches.add(task)
        task.add_done_callback(self.watches.discard)

    async def _release(self, dispatch: str) -> None:
        with anyio.CancelScope(shield=True):
            await self.limiter.release_holder.remote(dispatch)

    def _charge(self, trial: TrialResult) -> None:
        """Charge the run's budget with what the trial's judge and simulator calls cost (the agent's: `run`)."""
        budget = self.models.budget if self.models is not None else None
        if budget is None:
            return
        costs = trial.costs()
        for role in ("judge", "simulator"):
            part = costs.get(role)
            cost = part["cost_usd"] if part is not None else None
            if cost:
                budget.charge(cost)

    async def close(self) -> None:
        """Close every worker's resources (a worker that does not answer in 10 s is killed anyway)."""
        for task in self.watches:
            task.cancel()
        refs = [worker.close.remote() for worker in self.workers]
        with anyio.move_on_after(10):
            for ref in refs:
                with suppress(*_LOST):
                    await ref
        for worker in self.workers:
            ray.kill(worker, no_restart=True)
        ray.kill(self.limiter, no_restart=True)
