"""Plan a run: suites and options -> the cases, their targets, and the trials to run (resume applied).

Planning builds nothing and opens nothing: it decides. Each case gets its target spec (the command
line's `--target` over the suite's), its trials and timeout (`--trials`, `--timeout`), whether it needs a
graph and a judge; a resumed run keeps the finished trials of the previous one and plans the rest.

Resuming continues *that* run, and never drops a result its file holds (`_match_resumed`): every planned
case must be one of the run's (a `--case`/`--tag` subset is fine: the other cases are carried over as
they are), with the run's model; a case runs the trials the run planned for it (`--trials` overrides,
but not below a trial the file has). Anything else is refused before a trial runs.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from proctor._slots import slot_init
from proctor.checks import Checklist, registry
from proctor.errors import ConfigError
from proctor.results import CaseResult, TrialResult
from proctor.results._journal import PreviousRun, read_previous_run
from proctor.run.options import RunOptions
from proctor.run.trial import case_key
from proctor.suite import Case, Suite
from proctor.suite._simulate import unsupported_seeds
from proctor.targets._runtime import trial_variables

__all__ = [
    "Plan",
    "TrialWork",
    "filter_cases",
    "needs_judge",
    "needs_state",
    "plan_run",
    "target_identity",
    "trial_seed",
    "unique_run_id",
]


@slot_init  # one per trial: built ~3x sooner than by the frozen dataclass's own `__init__`
@dataclass(frozen=True, slots=True)
class TrialWork:
    """One trial to run."""

    case: Case
    """The case."""
    number: int
    """The 1-based trial number."""
    key: str
    """The case's key (`<file>::<name>`)."""
    checklist: Checklist | None = None
    """The case's assertions, made once for all its trials (`None`: the trial makes them)."""


@dataclass(slots=True)
class Plan:
    """What a run will do."""

    cases: list[Case]
    """The planned cases, in order (with `--trials`/`--timeout` applied)."""
    targets: dict[str, Any]
    """Each case's target spec, by case key."""
    kept: dict[str, list[TrialResult]]
    """Finished trials kept from a resumed run, by case key."""
    todo: list[TrialWork]
    """The trials to run."""
    run_id: str
    """The run's id (a resumed run keeps its own)."""
    started_at: str
    """When the run (or the run it resumes) started, ISO 8601 UTC."""
    model: str | None
    """The model under evaluation."""
    results_dir: Path
    """Where the results go."""
    resumed: bool = False
    """Whether this continues a previous run."""
    state_keys: set[str] = field(default_factory=set)
    """The cases whose trials need a graph."""
    variables: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Session variables each case's data asks for (watsonx `runtime_context`, `file_upload`), by case key
    (a case without metadata asks for none and is absent)."""
    stale: dict[str, dict[int, TrialResult]] = field(default_factory=dict)
    """A resumed run's trials that run again (errored, skipped, inconclusive), by case key and trial number: they
    stay in the results until their new trial finishes (an interrupted resume drops none of them)."""
    carried: list[CaseResult] = field(default_factory=list)
    """A resumed run's cases this run does not plan (a `--case`/`--tag` subset): kept as they are, trials and all."""
    order: list[str] = field(default_factory=list)
    """A resumed run's case keys in its order (the results keep it); empty for a new run."""
    resumed_target: str | None = None
    """The target(s) the resumed run recorded (`batch.run` refuses another)."""
    resumed_end: tuple[str, str | None] | None = None
    """How the resumed run ended (status, reason): what this run ends as when a carried case is still incomplete."""


def filter_cases(suites: Sequence[Suite], names: Sequence[str] = (), tags: Sequence[str] = ()) -> list[Case]:
    """Select cases by name (exact, or the suite name) and tag (any of the given tags).

    Raises:
        ConfigError: A requested name matches no case.
    """
    cases = [case for suite in suites for case in suite.cases]
    if names:
        wanted = set(names)
        unknown = wanted - {c.name for c in cases} - {c.suite for c in cases}
        if unknown:
            known = ", ".join(sorted({c.name for c in cases}))
            raise ConfigError(f"--case: no case named {', '.join(sorted(unknown))}. Cases: {known}")
        cases = [c for c in cases if c.name in wanted or c.suite in wanted]
    if tags:
        cases = [c for c in cases if set(tags) & set(c.tags)]
    return cases


def plan_run(suites: Sequence[Suite], options: RunOptions, cases: Sequence[Case] | None = None) -> Plan:
    """Plan `cases` (default: every case of `suites`).

    Raises:
        ConfigError: A case has no target or a seed its target cannot take, or `--resume` is unreadable.
    """
    planned = list(cases) if cases is not None else [c for s in suites for c in s.cases]
    if options.trials is not None or options.timeout is not None:
        planned = [_override(c, options) for c in planned]
    keys = [case_key(c) for c in planned]  # each case's key, made once
    targets = {key: _resolve_target(c, options) for key, c in zip(keys, planned, strict=True)}
    for key, c in zip(keys, planned, strict=True):
        problem = unsupported_seeds(targets[key], c.seeds) if c.seeds else None
        if problem is not None:
            raise ConfigError(f"case {c.name!r} ({c.file}): {problem}")
    previous: dict[tuple[str, int], TrialResult] = {}
    header: dict[str, Any] = {}
    resume_path = _resume_path(options) if options.resume is not None else None
    resumed: PreviousRun | None = None
    carried: list[CaseResult] = []
    if resume_path is not None:
        resumed = read_previous_run(resume_path)
        header, previous = resumed.header, resumed.trials
        planned = _match_resumed(resumed, planned, keys, options)
        carried = _carried(resumed, set(keys))
    model = options.model or header.get("model")
    results_dir = _results_dir(options, resume_path, planned)
    run_id = header.get("run_id") or f"{_slug(model or 'agent')}_{_now().strftime('%Y%m%dT%H%M%SZ')}"
    if resume_path is None and options.write_results:
        run_id = unique_run_id(results_dir, run_id)
    kept: dict[str, list[TrialResult]] = {key: [] for key in keys}
    stale: dict[str, dict[int, TrialResult]] = {}
    todo: list[TrialWork] = []
    for key, case in zip(keys, planned, strict=True):
        checklist = None if case.script else Checklist.of(case)  # a scenario's checks are its steps'
        for number in range(1, case.trials + 1):
            old = previous.get((key, number))
            if old is not None and old.status in ("passed", "failed"):
                kept[key].append(old)
            else:
                if old is not None:  # runs again; kept until its new trial finishes
                    stale.setdefault(key, {})[number] = old
                todo.append(TrialWork(case, number, key, checklist))
    return Plan(
        cases=planned,
        targets=targets,
        kept=kept,
        todo=todo,
        run_id=run_id,
        started_at=header.get("started_at") or _now().isoformat(timespec="seconds"),
        model=model,
        results_dir=results_dir,
        resumed=resume_path is not None,
        state_keys={key for key, c in zip(keys, planned, strict=True) if needs_state(c)},
        variables={key: _case_variables(c) for key, c in zip(keys, planned, strict=True) if c.metadata},
        stale=stale,
        carried=carried,
        order=list(resumed.cases) if resumed is not None else [],
        resumed_target=header.get("target") if resumed is not None else None,
        resumed_end=(resumed.status, header.get("reason")) if resumed is not None else None,
    )


def _match_resumed(run: PreviousRun, planned: list[Case], keys: list[str], options: RunOptions) -> list[Case]:
    """The planned cases, checked against the run they resume, each with the trials that run planned for it.

    Refused (`ConfigError`, before anything runs): another `--model` than the run's; a planned case the run
    does not have (another suite or project: its results would replace the run's); a `--trials` below a
    trial the run has. A journal of an older Proctor does not list its cases: there only a plan sharing
    no case with it is refused.

    Raises:
        ConfigError: The plan is not a continuation of the run; the message says what differs and what to do.
    """
    where = f"--resume: {run.path} is run {run.run_id}"
    recorded_model = run.header.get("model")
    if options.model is not None and options.model != recorded_model:
        made = "without --model" if recorded_model is None else f"with --model {recorded_model}"
        raise ConfigError(
            f"{where}, made {made}; --model {options.model} would mix two models' results in one run. "
            f"Resume it {made}, or start a new run (without --resume)"
        )
    cases = run.cases
    foreign = [
        c for c, key in zip(planned, keys, strict=True) if key not in cases or cases[key].suite not in (None, c.suite)
    ]
    if foreign and (run.listed or (cases and len(foreign) == len(planned))):
        raise ConfigError(
            f"{where}, whose cases are {_names(cases.values())}; it has no case {_names(foreign)}, so this is not "
            "that run (resuming would replace its results). Resume it with its own suites (--case/--tag may pick "
            "some of its cases), or run these cases as a new run (without --resume)"
        )
    highest: dict[str, int] = {}
    for key, number in run.trials:
        highest[key] = max(number, highest.get(key, 0))
    matched: list[Case] = []
    for case, key in zip(planned, keys, strict=True):
        recorded = cases.get(key)
        if options.trials is None and recorded is not None and recorded.planned not in (None, case.trials):
            case = replace(case, trials=recorded.planned)  # the run's own plan (`--trials` then): finish it
        if highest.get(key, 0) > case.trials:
            source = f"--trials {options.trials}" if options.trials is not None else "its suite's count"
            raise ConfigError(
                f"{where}, which has trial {highest[key]} of case {case.name!r} ({case.file}); this run plans "
                f"{case.trials} ({source}), which would drop it. Give --trials {highest[key]} or more, or start a "
                "new run (without --resume)"
            )
        matched.append(case)
    return matched


def _carried(run: PreviousRun, planned: set[str]) -> list[CaseResult]:
    """The resumed run's cases this run does not plan, as they are (every trial kept, errored ones too).

    Raises:
        ConfigError: The file does not record what such a case needs (a journal or interrupted run of an
            older Proctor): resume every case of the run instead.
    """
    out: list[CaseResult] = []
    trials: dict[str, list[TrialResult]] = {}
    for (key, _), trial in run.trials.items():
        trials.setdefault(key, []).append(trial)
    for key, case in run.cases.items():
        if key in planned:
            continue
        if case.suite is None or case.min_pass_rate is None or case.planned is None:
            raise ConfigError(
                f"--resume: {run.path} (run {run.run_id}) does not record how many trials case {case.name!r} "
                f"({case.file}) planned (written by an older Proctor), so resuming only some of its cases could "
                "misreport it: resume all its cases (no --case/--tag), or start a new run (without --resume)"
            )
        kept = sorted(trials.get(key, []), key=lambda t: t.trial)
        out.append(
            CaseResult(
                case.name,
                case.suite,
                case.file,
                list(case.tags),
                case.min_pass_rate,
                kept,
                case.description,
                planned=max(case.planned, len(kept)),
            )
        )
    return out


def _names(cases: Any) -> str:
    """`'a' (s.yaml), 'b' (s.yaml) and 3 more` (at most three named)."""
    listed = [f"{c.name!r} ({c.file})" for c in cases]
    more = f" and {len(listed) - 3} more" if len(listed) > 3 else ""
    return ", ".join(listed[:3]) + more if listed else "none"


def _case_variables(case: Case) -> dict[str, Any]:
    try:
        return trial_variables(case)
    except OSError as exc:
        raise ConfigError(f"case {case.name!r} ({case.file}): cannot read its file to upload: {exc}") from None


def needs_state(case: Case) -> bool:
    """Whether the case's trials need a graph: setups, `state:`, a state check, or a Cypher tool mock."""
    if case.setups or case.state is not None or (case.tools and any(tool.uses_graph for tool in case.tools.values())):
        return True
    if not case.assert_ and not case.script:  # no check that could read the graph (most cases)
        return False
    so_far = [spec for step in case.script if step.on == "conversation" for spec in step.check or []]
    return any(registry.resolve(spec.type)[0].needs_state for spec in (*case.assert_, *so_far))


def needs_judge(case: Case) -> bool:
    """Whether any of the case's checks can call a judge model (the rubric, judged or fuzzy checks)."""
    if case.rubric is not None:
        return True
    specs = [*case.assert_, *(spec for turn in case.turns for spec in turn.assert_)]
    specs.extend(spec for step in case.script for spec in step.assertions())
    if any(step.judge is not None or (step.simulate and step.simulate.until) for step in case.script):
        return True  # a scenario's judge checkpoints
    return any(registry.resolve(spec.type)[0].needs_model or spec.type == "journey" for spec in specs)


def target_identity(spec: Any) -> str:
    """A key under which equal target specs share one built target (and its connection pool)."""
    if isinstance(spec, BaseModel):
        return spec.model_dump_json()
    return json.dumps(spec, sort_keys=True, default=str)


def trial_seed(seed: int | None, key: str, trial: int) -> int | None:
    """The seed of one trial, derived from the run's `--seed` (`None` without one)."""
    if seed is None:
        return None
    digest = hashlib.sha256(f"{seed}:{key}:{trial}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def unique_run_id(directory: Path, run_id: str) -> str:
    """`run_id`, or `run_id-N` when a run of that id already has files in `directory`."""
    candidate, n = run_id, 1
    while (directory / f"{candidate}.json").exists() or (directory / f"{candidate}.journal.jsonl").exists():
        n += 1
        candidate = f"{run_id}-{n}"
    return candidate


def _slug(text: str) -> str:
    return re.sub(r"-+", "-", re.sub(r"[^a-z0-9-]", "-", text.lower())).strip("-") or "run"


def _now() -> datetime:
    return datetime.now(UTC)


def _resolve_target(case: Case, options: RunOptions) -> Any:
    spec = options.target if options.target is not None else case.target
    if isinstance(spec, dict) and spec.get("type") == "embabel" and getattr(case.target, "type", None) == "embabel":
        # `--target embabel:URL` names the service; the job's `target: {user, chatbot}` still applies
        assert case.target is not None
        spec = {**case.target.model_dump(include={"user", "chatbot"}), **spec}
    if spec is None:
        raise ConfigError(
            f"case {case.name!r} ({case.file}) has no target: give --target, or 'target:' in the suite file"
        )
    return spec


def _results_dir(options: RunOptions, resume_path: Path | None, planned: list[Case]) -> Path:
    if options.results_dir is not None:
        return options.results_dir
    if resume_path is not None:
        return resume_path.parent
    return planned[0].file.parent / ".results" if planned else Path(".results")


def _override(case: Case, options: RunOptions) -> Case:
    return replace(case, trials=options.trials or case.trials, timeout=options.timeout or case.timeout)


def _resume_path(options: RunOptions) -> Path:
    """`--resume` takes a results JSON, a journal, or a run id inside the results directory."""
    given = options.resume
    assert given is not None
    if given.exists():
        journal = given.with_name(given.name.removesuffix(".json") + ".journal.jsonl")
        return journal if given.suffix == ".json" and journal.exists() else given
    directory = options.results_dir or Path(".results")
    for candidate in (directory / f"{given}.journal.jsonl", directory / f"{given}.json"):
        if candidate.exists():
            return candidate
    raise ConfigError(f"--resume: no run {str(given)!r} (looked for a file, and for it in {directory})")
