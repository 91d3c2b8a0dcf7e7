"""A batch run of suites: plan -> build targets, graphs and models -> execute trials -> record.

```python
suites = proctor.load_suites(["evals/"])
outcome = proctor.run_sync(suites, RunOptions(model="gpt-4.1-mini"))
```
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from typing import TYPE_CHECKING

import anyio

from proctor.errors import ConfigError
from proctor.results import TrialResult
from proctor.run.execute import execute
from proctor.run.options import RunObserver, RunOptions
from proctor.run.plan import Plan, TrialWork, plan_run, target_identity, trial_seed
from proctor.run.prepare import serve_tools
from proctor.run.record import Recorder, RunOutcome
from proctor.run.trial import run_trial
from proctor.scoring import ErrorBudget
from proctor.suite import Case, Suite
from proctor.suite._tools import ToolSpec
from proctor.targets import SessionContext, Target, build_target
from proctor.traces import open_export

if TYPE_CHECKING:  # must stay fast: judges, simulators, models and graphs load when a run uses them
    from proctor.checks._judging import Judge
    from proctor.drivers.simulator import Simulator
    from proctor.models import Model
    from proctor.run.services import ModelServices
    from proctor.state import StateManager

__all__ = ["RemoteTrials", "TrialRunner", "run", "run_sync"]

TrialRunner = Callable[[TrialWork], Awaitable[TrialResult]]
"""Runs one planned trial and returns its result."""
RemoteTrials = Callable[[Plan, RunOptions, "ModelServices | None"], AbstractAsyncContextManager[TrialRunner]]
"""Opens somewhere else to run trials (`proctor.cluster`), given the plan, options and this process's models."""


class _Resources:
    """What a run opens besides its files: targets (one per distinct spec), graphs, model services.

    Opened in the order a failure should be reported in: targets (a bad spec), graphs (an unreachable
    graph says so before any model is configured), then the judge and simulator models.
    """

    def __init__(self, plan: Plan, options: RunOptions) -> None:
        self.options = options
        self.targets: dict[str, Target] = {}
        built: dict[str, Target] = {}
        identities: dict[int, str] = {}  # by spec object: the cases of a file share theirs (specs live in `plan`)
        for key, spec in plan.targets.items():
            identity = identities.get(id(spec))
            if identity is None:
                identity = identities[id(spec)] = target_identity(spec)
            if identity not in built:
                built[identity] = build_target(spec, max_connections=options.max_connections)
            self.targets[key] = built[identity]
        self.distinct = list(built.values())
        self.states: StateManager | None = None
        self.models: ModelServices | None = None
        self.judges: dict[str, Judge | None] = {}
        self.simulators: dict[str, Simulator | None] = {}

    async def start_states(self, cases: Iterable[Case], options: RunOptions) -> None:
        cases = list(cases)
        if cases:
            from proctor.state import start_states  # must stay fast: graph backends load for a case with a graph

            # the built targets (a `--target` override included) tell whether the agent learns the graph
            targets = {case.name: self.targets[f"{case.file}::{case.name}"] for case in cases}
            self.states = await start_states(cases, options.state, targets=targets)

    def start_models(self, plan: Plan, options: RunOptions) -> None:
        wants_models = (  # `prices`: the agent's calls are priced with it, judged or not (`account_agent`)
            options.judge
            or options.budget
            or options.prices is not None
            or options.simulator
            or any(c.judge is not None or c.simulator is not None for c in plan.cases)
        )
        models = self.models = _model_services(options) if wants_models else None
        for case in plan.cases:
            key = f"{case.file}::{case.name}"
            self.judges[key] = models.judge_for(case) if models else None
            self.simulators[key] = models.simulator_for(case) if models and case.simulate is not None else None

    def tool_model(self, tool: ToolSpec, case: Case) -> Model | None:
        """The model that plays a simulated tool (see `_tool_model_name`), or `None` when none is configured."""
        name = _tool_model_name(tool, case, self.options)
        if name is None:
            return None
        from proctor.models import ModelSettings, get_model  # must stay fast: models load for a simulated tool

        models = self.models
        settings = ModelSettings(
            ledger=models.ledger if models else None,
            budget=models.budget if models else None,
            prices=models.prices if models else None,
            cache=None,  # a simulated tool is not cached: record it into a cassette to fix its answers
        )
        return get_model(name, settings=settings)

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True):
            for target in self.distinct:
                await target.aclose()
            if self.models is not None:
                await self.models.aclose()
            if self.states is not None:
                await self.states.aclose()

    def budget_spent(self) -> str | None:
        budget = self.models.budget if self.models is not None else None
        if budget is None or not budget.exhausted:
            return None
        return f"budget of ${budget.limit_usd:g} reached (spent ${budget.spent_usd:.4f})"


async def run(
    suites: Sequence[Suite],
    options: RunOptions,
    *,
    cases: Sequence[Case] | None = None,
    observer: RunObserver | None = None,
    remote: RemoteTrials | None = None,
) -> RunOutcome:
    """Run `cases` (default: every case of `suites`) and return the result.

    Finished trials are journaled as they finish; the results JSON is written at the end, also when
    the run is interrupted (status `interrupted`) or stopped by its budget (status `aborted`).
    With `remote`, the trials run there (graphs are its business) and this process plans, limits,
    records and writes as for a local run.

    Raises:
        ConfigError: A case has no target, a target cannot be built, or `--resume` is unreadable or names a
            run this one does not continue (other cases, model or target: see `plan`), before any trial runs.
    """
    plan = plan_run(suites, options, cases)
    errors = ErrorBudget(options.max_errors, planned=len(plan.todo)) if options.max_errors is not None else None
    async with AsyncExitStack() as stack:
        resources = _Resources(plan, options)
        stack.push_async_callback(resources.aclose)
        target = _target_of(plan, resources)
        if remote is None:
            await resources.start_states((c for c in plan.cases if f"{c.file}::{c.name}" in plan.state_keys), options)
        resources.start_models(plan, options)
        if remote is None:
            await stack.enter_async_context(serve_tools(plan.cases, resources.tool_model))
            run_one: TrialRunner = _local_runner(plan, options, resources)
        else:  # a remote worker serves a case's tools itself (a private server per trial)
            run_one = await stack.enter_async_context(remote(plan, options, resources.models))
        exports = open_export(
            enabled=options.otel, endpoint=options.otel_endpoint, url_template=options.trace_url,
            target=target, run_id=plan.run_id,
        )  # fmt: skip
        if exports is not None:
            stack.callback(exports.shutdown)  # flushes the spans still queued
        recorder = Recorder(
            plan, target, seed=options.seed, k=options.k, write=options.write_results, history=options.history
        )
        recorder.result.group = options.group
        if observer is not None:
            kept = sum(len(v) for v in plan.kept.values()) + sum(len(c.trials) for c in plan.carried)
            observer.started(len(plan.todo), kept)

        async def one(work: TrialWork) -> None:
            running = run_one(work)
            trial = await (running if exports is None else exports.run(work.key, work.number, running))
            if resources.models is not None:
                resources.models.account_agent(trial, plan.model)
            recorder.record(work.case, trial, work.key)
            if errors is not None:
                errors.record(trial.status)
            if observer is not None:
                observer.trial_finished(work.case, trial)

        def stop() -> str | None:
            if errors is not None and errors.exceeded:
                return errors.reason()
            return resources.budget_spent()

        ending = await execute(
            plan.todo, one, concurrency=options.concurrency, stop=stop, handle_sigint=options.handle_sigint
        )
    status = {"complete": "complete", "interrupted": "interrupted", "stopped": "aborted"}[ending.status]
    # the reason is read after the trials in flight finished: what they spent, and their errors, count
    return recorder.finish(status, stop() if ending.status == "stopped" else None)


def _target_of(plan: Plan, resources: _Resources) -> str:
    """The run's target description; a resumed run's must be (among) the target(s) that run recorded.

    Raises:
        ConfigError: The resumed run recorded another target: this run's results are not that run's.
    """
    target = ", ".join(sorted({t.name for t in resources.distinct}))
    recorded = plan.resumed_target
    if recorded is None or target == recorded:
        return target
    if {t.name for t in resources.distinct} <= set(recorded.split(", ")):
        return recorded  # a --case/--tag subset of the run may need only some of its targets
    raise ConfigError(
        f"--resume: run {plan.run_id} was made against {recorded}; this run's target is {target}, and one run "
        "holds one agent's results. Resume it with its own target (--target, or the suites'), or start a new "
        "run (without --resume)"
    )


def _local_runner(plan: Plan, options: RunOptions, resources: _Resources) -> TrialRunner:
    """`_run_one` on this run's plan, options and resources (positional: no keyword dict per trial)."""

    def run_one(work: TrialWork) -> Awaitable[TrialResult]:
        return _run_one(work, plan, options, resources)

    return run_one


async def _run_one(work: TrialWork, plan: Plan, options: RunOptions, resources: _Resources) -> TrialResult:
    case, key = work.case, work.key
    variables = {"seed": trial_seed(options.seed, key, work.number)}
    asked = plan.variables.get(key)  # a case's data's variables (most cases ask for none)
    if asked:
        variables.update(asked)
    context = SessionContext(case.name, work.number, plan.model, case.timeout, variables)  # (case, trial, model, ...)
    unplayed = _unplayed_tool(case, options) if case.tools else None
    if unplayed is not None:  # like a simulated user without a model: skipped, never guessed
        return TrialResult(case_key=key, trial=work.number, status="skipped", score=None, reason=unplayed)
    states = resources.states if key in plan.state_keys else None
    target, judge = resources.targets[key], resources.judges[key]
    if case.simulate is not None:
        from proctor.run.arms import run_simulated_trial  # must stay fast: loads for a simulated user only

        simulator = resources.simulators[key]
        return await run_simulated_trial(case, work.number, target, context, judge, simulator, states)
    return await run_trial(
        case, work.number, target, context, judge, states, strict=options.strict, checklist=work.checklist, key=key
    )


def _model_services(options: RunOptions) -> ModelServices:
    """The run's judge and simulator models (the model layer loads only for a run that uses one)."""
    from proctor.run.services import ModelServices  # must stay fast: the model layer

    return ModelServices(options)


def _tool_model_name(tool: ToolSpec, case: Case, options: RunOptions) -> str | None:
    """The tool's own model, else the simulated user's: `--simulator`, `simulator:`, `--judge`, `judge:`."""
    judge = case.judge.model if case.judge is not None else None
    return tool.simulator_model(options.simulator, case.simulator, options.judge, judge)


def _unplayed_tool(case: Case, options: RunOptions) -> str | None:
    """Why the case's trials cannot run: a simulated tool no model can play (`None` when every tool can)."""
    for name, tool in case.tools.items():
        if tool.simulate not in (None, False) and _tool_model_name(tool, case, options) is None:
            return (
                f"tool {name!r} is played by a model, but none is configured: pass --simulator provider/model "
                "(or --judge), or give the tool 'simulate: {model: provider/model}'"
            )
    return None


def run_sync(
    suites: Sequence[Suite],
    options: RunOptions | None = None,
    *,
    cases: Sequence[Case] | None = None,
    observer: RunObserver | None = None,
    remote: RemoteTrials | None = None,
) -> RunOutcome:
    """Run synchronously (a thin wrapper over `run` for scripts and notebooks)."""
    box: list[RunOutcome] = []

    async def main() -> None:
        # Returned through a list, not as the main task's result: on exit asyncio may repr() that task,
        # which would render the whole outcome (measured: +79 µs per case at 5,000 cases).
        box.append(await run(suites, options or RunOptions(), cases=cases, observer=observer, remote=remote))

    anyio.run(main)
    return box[0]
